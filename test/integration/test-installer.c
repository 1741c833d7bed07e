/* `cluster-etcd-operator installer` against kube-apiserver through the fault
 * proxy (run by with-kube.sh --fault-proxy, which exports KUBECONFIG). The test creates revision 3 of the
 * etcd pod's ConfigMaps and Secrets in openshift-etcd, runs the real binary
 * (CEO_BIN, set by CMake; else ../../cluster-etcd-operator next to this test
 * binary) and checks the tree it writes: contents, modes, the substituted
 * manifest, optional objects skipped, transient API errors retried, and that
 * a missing required object fails with exit 1 before anything (above all the
 * manifest) is written. The quorum guard (--etcd-endpoints) runs against a
 * real three-member etcd from the harness: a frozen (SIGSTOP) voter holds
 * the manifest back until it answers again or the time is up. */
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd-harness.h"
#include "etcd/sync.h"
#include "kube/client.h"

#define NS "openshift-etcd"

static Loop *loop;
static KubeClient *client;
static EtcdTestCluster cluster; /* the quorum guard's */
static char bin[4096];
static char tmp[256];

static const char pod_yaml[] =
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: etcd\n"
        "  namespace: openshift-etcd\n"
        "  labels:\n"
        "    revision: \"REVISION\"\n"
        "spec:\n"
        "  containers:\n"
        "  - name: etcd\n"
        "    command: [discover-etcd-initial-cluster, --target-name=NODE_NAME,\n"
        "      \"--target-peer-url-host=${NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST}\"]\n"
        "  volumes:\n"
        "  - hostPath: {path: /etc/kubernetes/static-pod-resources/etcd-pod-REVISION}\n";

static const char pod_yaml_want[] =
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: etcd\n"
        "  namespace: openshift-etcd\n"
        "  labels:\n"
        "    revision: \"3\"\n"
        "spec:\n"
        "  containers:\n"
        "  - name: etcd\n"
        "    command: [discover-etcd-initial-cluster, --target-name=master-0.example,\n"
        "      \"--target-peer-url-host=${NODE_master_0_example_ETCD_URL_HOST}\"]\n"
        "  volumes:\n"
        "  - hostPath: {path: /etc/kubernetes/static-pod-resources/etcd-pod-3}\n";

static const char pod_yaml_want_5[] =
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: etcd\n"
        "  namespace: openshift-etcd\n"
        "  labels:\n"
        "    revision: \"5\"\n"
        "spec:\n"
        "  containers:\n"
        "  - name: etcd\n"
        "    command: [discover-etcd-initial-cluster, --target-name=m1,\n"
        "      \"--target-peer-url-host=${NODE_m1_ETCD_URL_HOST}\"]\n"
        "  volumes:\n"
        "  - hostPath: {path: /etc/kubernetes/static-pod-resources/etcd-pod-5}\n";

static const char peer_key[] = "-----BEGIN EC PRIVATE KEY-----\nnot really\n-----END EC PRIVATE KEY-----\n";
static const char bin_data[] = {'\x00', '\x01', '\xff', 'R', 'E', 'V', 'I', 'S', 'I', 'O', 'N'};

typedef struct Result {
        bool done;
        int error;
} Result;

static void on_result(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Result *r = userdata;
        r->done = true;
        r->error = resp->error;
}

static cJSON *parse(const char *s)
{
        cJSON *j = NULL;
        assert_int_equal(json_parse(s, strlen(s), &j), 0);
        return j;
}

/* How long one API call may take. Through the fault proxy to kube-apiserver, beside two e2e
 * clusters and the other integration tests, a create took over 30 s in a clean-clone .ci/run
 * (2026-11-29, test_sole_voter): a bound for a starved machine, not a figure of the product. */
#define API_WAIT_USEC (90 * USEC_PER_SEC)

static int create(const KubeResource *res, cJSON *obj)
{
        Result r = {};
        assert_int_equal(kube_create(client, res, res == &KUBE_NAMESPACES ? NULL : NS, obj, on_result, &r),
                         0);
        assert_int_equal(loop_run_until(loop, &r.done, API_WAIT_USEC), 0);
        return r.error;
}

/* A ConfigMap or Secret named `name` with NULL-terminated key/value pairs
 * (Secret values are base64-encoded here). */
static void create_object(bool secret, const char *name, ...)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(o, "metadata"), *data = cJSON_AddObjectToObject(o, "data");
        va_list ap;

        cJSON_AddStringToObject(o, "apiVersion", "v1");
        cJSON_AddStringToObject(o, "kind", secret ? "Secret" : "ConfigMap");
        cJSON_AddStringToObject(meta, "name", name);
        cJSON_AddStringToObject(meta, "namespace", NS);
        va_start(ap, name);
        for (const char *k; (k = va_arg(ap, const char *));) {
                const char *v = va_arg(ap, const char *);
                _cleanup_free_ char *enc = secret ? base64_encode(v, strlen(v)) : NULL;
                cJSON_AddStringToObject(data, k, secret ? enc : v);
        }
        va_end(ap);
        if (!secret && streq(name, "etcd-endpoints-3")) {
                _cleanup_free_ char *enc = base64_encode(bin_data, sizeof bin_data);
                cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "binaryData"), "blob", enc);
        }
        assert_int_equal(create(secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, o), 0);
}

static void sim_fault(const char *body)
{
        _cleanup_(cJSON_Deletep) cJSON *b = parse(body);
        Result r = {};
        assert_int_equal(
                kube_call(client, "POST", "/sim/faults", b, "application/json", on_result, &r, NULL), 0);
        assert_int_equal(loop_run_until(loop, &r.done, API_WAIT_USEC), 0);
        assert_int_equal(r.error, 0);
}

static void find_binary(void)
{
        const char *env = getenv("CEO_BIN");
        char self[4096];

        if (env) {
                (void) snprintf(bin, sizeof bin, "%s", env);
                return;
        }
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        assert_true(n > 0);
        self[n] = 0;
        (void) snprintf(bin, sizeof bin, "%s/../../cluster-etcd-operator", dirname(self));
}

static int setup(void **state)
{
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;

        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-kube.sh)\n", err);
                return -1;
        }
        find_binary();
        if (access(bin, X_OK) < 0) {
                fprintf(stderr, "%s: %s (build the cluster-etcd-operator target, or set CEO_BIN)\n", bin,
                        strerror(errno));
                return -1;
        }
        (void) snprintf(tmp, sizeof tmp, "/tmp/test-installer-XXXXXX");
        if (!mkdtemp(tmp))
                return -1;
        loop = loop_new();
        client = kube_client_new(loop, cfg);

        _cleanup_(cJSON_Deletep) cJSON *ns =
                parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" NS "\"}}");
        int e = create(&KUBE_NAMESPACES, ns);
        if (e < 0 && e != -EEXIST)
                return -1;
        create_object(false, "etcd-pod-3", "pod.yaml", pod_yaml, "forceRedeploymentReason", "", NULL);
        create_object(false, "etcd-endpoints-3", "4a5b6c7d8e9f0a1b", "10.0.0.1", NULL);
        create_object(false, "etcd-all-bundles-3", "server-ca-bundle.crt", "-----BEGIN CA-REVISIONED\n",
                      NULL);
        create_object(true, "etcd-all-certs-3", "etcd-peer-master-0.example.crt", "PEER-CRT\n",
                      "etcd-peer-master-0.example.key", peer_key, NULL);
        /* Unrevisioned copies for --cert-dir (restore-etcd-pod stays missing: optional). */
        create_object(false, "etcd-scripts", "etcd.env", "export ETCD_X=REVISION\n", NULL);
        create_object(false, "etcd-all-bundles", "server-ca-bundle.crt", "CA-CURRENT\n", NULL);
        create_object(true, "etcd-all-certs", "etcd-serving-master-0.example.key", "SERVING-KEY REVISION\n",
                      NULL);
        /* Revision 4 is incomplete: no etcd-endpoints-4. */
        create_object(false, "etcd-pod-4", "pod.yaml", pod_yaml, NULL);
        create_object(false, "etcd-all-bundles-4", "server-ca-bundle.crt", "CA\n", NULL);
        create_object(true, "etcd-all-certs-4", "k", "v", NULL);
        return 0;
}

static int teardown(void **state)
{
        etcd_test_cluster_destroy(&cluster);
        client = kube_client_free(client);
        if (loop)
                assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        if (tmp[0] && !etcd_test_keep_dirs()) {
                _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", tmp);
                (void) system(cmd);
        }
        return 0;
}

/* Starts the binary with argv (argv[0] is `bin`); it dies with the test. */
static pid_t spawn(char **argv)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execv(bin, argv);
                _exit(127);
        }
        return pid;
}

static int wait_exit(pid_t pid)
{
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* Runs the installer for `revision` into <tmp>/<root>; returns its exit code. */
static int run_installer(const char *root, const char *revision, const char *configmaps, const char *extra)
{
        char a[16][512];
        char *argv[24];
        size_t k = 0;
#define ARG(...) (void) snprintf(a[k], sizeof a[k], __VA_ARGS__), argv[k] = a[k], k++
        argv[k++] = bin;
        ARG("installer");
        ARG("--revision=%s", revision);
        ARG("--namespace=" NS);
        ARG("--pod=etcd-pod");
        ARG("--node-name=master-0.example");
        ARG("--configmaps=%s", configmaps);
        ARG("--secrets=etcd-all-certs");
        ARG("--optional-configmaps=missing-cm");
        ARG("--optional-secrets=missing-secret");
        ARG("--cert-configmaps=etcd-scripts,etcd-all-bundles");
        ARG("--optional-cert-configmaps=restore-etcd-pod");
        ARG("--cert-secrets=etcd-all-certs");
        ARG("--resource-dir=%s/%s/resources", tmp, root);
        ARG("--pod-manifest-dir=%s/%s/manifests", tmp, root);
        ARG("--cert-dir=%s/%s/resources/etcd-certs", tmp, root);
#undef ARG
        argv[k++] = (char *) "--timeout-duration=20s";
        if (extra)
                argv[k++] = (char *) extra;
        argv[k] = NULL;
        return wait_exit(spawn(argv));
}

static void check_file(const char *root, const char *rel, const void *want, size_t want_len, mode_t mode)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s/%s", tmp, root, rel), *data = NULL;
        struct stat st;
        size_t len = 0;

        if (stat(p, &st) < 0)
                fail_msg("%s: %s", p, strerror(errno));
        assert_true(S_ISREG(st.st_mode));
        if ((st.st_mode & 07777) != mode)
                fail_msg("%s: mode %o, want %o", p, st.st_mode & 07777, mode);
        assert_int_equal(read_full_file(p, 1 << 20, &data, &len), 0);
        assert_int_equal(len, want_len);
        assert_memory_equal(data, want, want_len);
}

static void check_str(const char *root, const char *rel, const char *want, mode_t mode)
{
        check_file(root, rel, want, strlen(want), mode);
}

static void check_dir_mode(const char *root, const char *rel, mode_t mode)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s/%s", tmp, root, rel);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, mode);
}

static bool exists(const char *root, const char *rel)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s/%s", tmp, root, rel);
        return access(p, F_OK) == 0;
}

/* No temp file of an atomic write is left anywhere under `dir`. */
static void check_no_temp_files(const char *dir)
{
        _cleanup_free_ char *cmd = strdup_printf("find '%s' -name '*.tmp.*' | grep -q .", dir);
        assert_int_not_equal(system(cmd), 0);
}

static void test_install(void **state)
{
        assert_int_equal(run_installer("ok", "3", "etcd-pod,etcd-endpoints,etcd-all-bundles", NULL), 0);

        check_str("ok", "manifests/etcd-pod.yaml", pod_yaml_want, 0644);
        check_str("ok", "resources/etcd-pod-3/etcd-pod.yaml", pod_yaml_want, 0644);
        /* As upstream: ConfigMap text keys name the node and the revision; binaryData and
         * Secrets are verbatim. */
        check_str("ok", "resources/etcd-pod-3/configmaps/etcd-pod/pod.yaml", pod_yaml_want, 0644);
        check_str("ok", "resources/etcd-pod-3/configmaps/etcd-pod/forceRedeploymentReason", "", 0644);
        check_str("ok", "resources/etcd-pod-3/configmaps/etcd-endpoints/4a5b6c7d8e9f0a1b", "10.0.0.1", 0644);
        check_file("ok", "resources/etcd-pod-3/configmaps/etcd-endpoints/blob", bin_data, sizeof bin_data,
                   0644);
        check_str("ok", "resources/etcd-pod-3/configmaps/etcd-all-bundles/server-ca-bundle.crt",
                  "-----BEGIN CA-REVISIONED\n", 0644);
        check_str("ok", "resources/etcd-pod-3/secrets/etcd-all-certs/etcd-peer-master-0.example.crt",
                  "PEER-CRT\n", 0600);
        check_str("ok", "resources/etcd-pod-3/secrets/etcd-all-certs/etcd-peer-master-0.example.key",
                  peer_key, 0600);
        /* The unrevisioned copies. */
        check_str("ok", "resources/etcd-certs/configmaps/etcd-scripts/etcd.env", "export ETCD_X=3\n", 0644);
        check_str("ok", "resources/etcd-certs/configmaps/etcd-all-bundles/server-ca-bundle.crt",
                  "CA-CURRENT\n", 0644);
        check_str("ok", "resources/etcd-certs/secrets/etcd-all-certs/etcd-serving-master-0.example.key",
                  "SERVING-KEY REVISION\n", 0600);
        check_dir_mode("ok", "resources/etcd-pod-3/secrets/etcd-all-certs", 0755);
        check_dir_mode("ok", "resources/etcd-certs/configmaps", 0755);
        check_dir_mode("ok", "manifests", 0755);
        /* Optional objects that do not exist are skipped, not created empty. */
        assert_false(exists("ok", "resources/etcd-pod-3/configmaps/missing-cm"));
        assert_false(exists("ok", "resources/etcd-pod-3/secrets/missing-secret"));
        assert_false(exists("ok", "resources/etcd-certs/configmaps/restore-etcd-pod"));
        _cleanup_free_ char *dir = strdup_printf("%s/ok", tmp);
        check_no_temp_files(dir);

        /* Installing the same revision again converges on the same tree. */
        assert_int_equal(run_installer("ok", "3", "etcd-pod,etcd-endpoints,etcd-all-bundles", NULL), 0);
        check_str("ok", "manifests/etcd-pod.yaml", pod_yaml_want, 0644);
        check_no_temp_files(dir);
}

static void test_pod_configmap_not_listed(void **state)
{
        /* --pod is fetched for pod.yaml even when --configmaps does not name it. */
        assert_int_equal(run_installer("nolist", "3", "etcd-endpoints", NULL), 0);
        check_str("nolist", "manifests/etcd-pod.yaml", pod_yaml_want, 0644);
        assert_false(exists("nolist", "resources/etcd-pod-3/configmaps/etcd-pod"));
}

static void test_missing_required(void **state)
{
        usec_t start = now_usec(CLOCK_MONOTONIC);
        /* etcd-endpoints-4 does not exist: NotFound is final, not retried until the timeout. */
        assert_int_equal(run_installer("missing", "4", "etcd-pod,etcd-endpoints,etcd-all-bundles", NULL), 1);
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 10 * USEC_PER_SEC);
        assert_false(exists("missing", "manifests/etcd-pod.yaml"));
        /* Everything is fetched and checked before the first write. */
        assert_false(exists("missing", "resources"));

        /* A required cert copy missing fails the same way. */
        assert_int_equal(run_installer("missing2", "3", "etcd-pod", "--cert-configmaps=not-there"), 1);
        assert_false(exists("missing2", "manifests/etcd-pod.yaml"));
}

static void test_transient_errors_retried(void **state)
{
        /* Two 500s (no Retry-After, so the client itself does not retry) on one object. */
        sim_fault("{\"method\":\"GET\",\"path_regex\":\"/configmaps/etcd-endpoints-3$\",\"code\":500,"
                  "\"count\":2}");
        assert_int_equal(run_installer("retry", "3", "etcd-pod,etcd-endpoints,etcd-all-bundles", NULL), 0);
        check_str("retry", "manifests/etcd-pod.yaml", pod_yaml_want, 0644);

        /* Forbidden is not transient. */
        sim_fault("{\"method\":\"GET\",\"path_regex\":\"/secrets/"
                  "etcd-all-certs-3$\",\"code\":403,\"count\":1}");
        assert_int_equal(run_installer("forbidden", "3", "etcd-pod", NULL), 1);
        assert_false(exists("forbidden", "manifests/etcd-pod.yaml"));
}

static void test_usage_errors(void **state)
{
        assert_int_equal(run_installer("usage", "3x", "etcd-pod", NULL), 2);
        assert_int_equal(run_installer("usage", "0", "etcd-pod", NULL), 2);
        assert_int_equal(run_installer("usage", "3", "../../etc", NULL), 2);
        assert_int_equal(run_installer("usage", "3", "etcd-pod", "--node-name=Bad_Node"), 2);
        assert_int_equal(run_installer("usage", "3", "etcd-pod", "--namespace=a/b"), 2);
        assert_int_equal(run_installer("usage", "3", "etcd-pod", "--timeout-duration=soon"), 2);
        assert_int_equal(run_installer("usage", "3", "etcd-pod", "--no-such-flag"), 2);
        assert_false(exists("usage", ""));
}

/* ---- the quorum guard, on a real three-member etcd (m1, m2, m3) ---- */

/* Starts the installer of revision 5 as node `node` with the members' client URLs as
 * seeds; returns its PID. */
static pid_t start_guarded_with(const char *root, const char *node, const char *timeout, int revision,
                                const char *extra)
{
        char a[16][1024];
        char *argv[20];
        size_t k = 0;
#define ARG(...) (void) snprintf(a[k], sizeof a[k], __VA_ARGS__), argv[k] = a[k], k++
        argv[k++] = bin;
        ARG("installer");
        ARG("--revision=%d", revision);
        ARG("--namespace=" NS);
        ARG("--pod=etcd-pod");
        ARG("--node-name=%s", node);
        ARG("--configmaps=etcd-pod,etcd-all-bundles");
        ARG("--secrets=etcd-all-certs");
        ARG("--resource-dir=%s/%s/resources", tmp, root);
        ARG("--pod-manifest-dir=%s/%s/manifests", tmp, root);
        ARG("--timeout-duration=%s", timeout);
        ARG("--etcd-endpoints=%s%s%s%s%s", cluster.members[0].client_url, cluster.n > 1 ? "," : "",
            cluster.n > 1 ? cluster.members[1].client_url : "", cluster.n > 2 ? "," : "",
            cluster.n > 2 ? cluster.members[2].client_url : "");
        if (extra)
                ARG("%s", extra);
#undef ARG
        argv[k] = NULL;
        return spawn(argv);
}

static pid_t start_guarded(const char *root, const char *node, const char *timeout)
{
        return start_guarded_with(root, node, timeout, 5, NULL);
}

/* SIGSTOP / SIGCONT a member (etcd_test_member_kill waits for it to end). */
static void signal_member(size_t i, int sig)
{
        assert_true(cluster.members[i].pid > 0);
        assert_int_equal(kill(cluster.members[i].pid, sig), 0);
}

/* The index of the member that leads (the harness etcd's status says). */
static size_t leader_index(void)
{
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&cluster, loop, 0x7);
        assert_non_null(e);
        for (int tries = 0; tries < 50; tries++) {
                for (size_t i = 0; i < 3; i++) {
                        EtcdStatus st = {};
                        bool leads = etcd_sync_status(e, cluster.members[i].client_url, 2 * USEC_PER_SEC,
                                                      &st) == 0 &&
                                     st.leader != 0 && st.leader == st.member_id;
                        etcd_status_done(&st);
                        if (leads)
                                return i;
                }
                (void) usleep(200 * USEC_PER_MSEC);
        }
        fail_msg("no member of the harness etcd leads");
        return 0;
}

/* Revision `revision` of the guarded tests, with this cluster's CA and client certificate. */
static void create_guard_objects(int revision)
{
        char pod[32], bundles[32], certs[32];
        (void) snprintf(pod, sizeof pod, "etcd-pod-%d", revision);
        (void) snprintf(bundles, sizeof bundles, "etcd-all-bundles-%d", revision);
        (void) snprintf(certs, sizeof certs, "etcd-all-certs-%d", revision);
        create_object(false, pod, "pod.yaml", pod_yaml, NULL);
        create_object(false, bundles, "server-ca-bundle.crt", cluster.ca_pem, NULL);
        /* The harness's client certificate stands in for the nodes' peer certificates (which
         * etcd issues for client use too). */
        create_object(true, certs, "etcd-peer-m1.crt", cluster.client_cert_pem, "etcd-peer-m1.key",
                      cluster.client_key_pem, "etcd-peer-m2.crt", cluster.client_cert_pem,
                      "etcd-peer-m2.key", cluster.client_key_pem, "etcd-peer-m3.crt",
                      cluster.client_cert_pem, "etcd-peer-m3.key", cluster.client_key_pem,
                      "etcd-peer-m9.crt", cluster.client_cert_pem, "etcd-peer-m9.key",
                      cluster.client_key_pem, NULL);
}

static void test_quorum_guard(void **state)
{
        assert_int_equal(etcd_test_cluster_init(&cluster, 3, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&cluster, 3), 0);
        create_guard_objects(5);

        /* All healthy: m1 goes, two of three stay. */
        assert_int_equal(wait_exit(start_guarded("g-ok", "m1", "20s")), 0);
        assert_true(exists("g-ok", "manifests/etcd-pod.yaml"));

        /* The leader frozen: restarting another member would leave one of three. Right after
         * the freeze every member answers "unhealthy" until the other two elect a leader; that
         * does not make this node's member "down already" (CI once saw the restart go ahead).
         * Nothing reaches the manifest dir. */
        size_t frozen = leader_index(), other = frozen == 0 ? 1 : 0;
        signal_member(frozen, SIGSTOP);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(wait_exit(start_guarded("g-frozen", cluster.members[other].name, "8s")), 1);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 6 * USEC_PER_SEC);
        assert_false(exists("g-frozen", "manifests/etcd-pod.yaml"));
        assert_true(exists("g-frozen", "resources/etcd-pod-5/etcd-pod.yaml")); /* the revision is on disk */
        signal_member(frozen, SIGCONT);

        /* A follower frozen: the same. */
        frozen = (leader_index() + 1) % 3;
        other = (frozen + 1) % 3;
        signal_member(frozen, SIGSTOP);
        assert_int_equal(wait_exit(start_guarded("g-frozen2", cluster.members[other].name, "4s")), 1);
        assert_false(exists("g-frozen2", "manifests/etcd-pod.yaml"));
        signal_member(frozen, SIGCONT);
        signal_member(1, SIGSTOP); /* m2, for what follows */

        /* A node whose etcd is no member (m9) costs quorum nothing, m2 frozen or not. */
        assert_int_equal(wait_exit(start_guarded("g-none", "m9", "20s")), 0);
        assert_true(exists("g-none", "manifests/etcd-pod.yaml"));

        /* It waits, then goes once m2 answers again. */
        pid_t pid = start_guarded("g-resume", "m1", "60s");
        (void) usleep(5 * USEC_PER_SEC);
        assert_false(exists("g-resume", "manifests/etcd-pod.yaml"));
        signal_member(1, SIGCONT);
        assert_int_equal(wait_exit(pid), 0);
        check_str("g-resume", "manifests/etcd-pod.yaml", pod_yaml_want_5, 0644);

        /* m1 itself frozen: it is down already, so restarting it costs nothing. */
        signal_member(0, SIGSTOP);
        int r = wait_exit(start_guarded("g-self", "m1", "20s"));
        signal_member(0, SIGCONT);
        assert_int_equal(r, 0);
        assert_true(exists("g-self", "manifests/etcd-pod.yaml"));
        etcd_test_cluster_destroy(&cluster);
}

/* After a quorum restore on a master that moved, its member is the only voter and must
 * restart alone: --etcd-sole-voter-may-restart (the unsafe non-HA override) lets it, and
 * nothing else: without it the guard refuses; with it, a member of three that would leave
 * one of three is still refused. */
static void test_sole_voter(void **state)
{
        assert_int_equal(etcd_test_cluster_init(&cluster, 1, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&cluster, 1), 0);
        create_guard_objects(6);
        assert_int_equal(wait_exit(start_guarded_with("s-refused", "m1", "3s", 6, NULL)), 1);
        assert_false(exists("s-refused", "manifests/etcd-pod.yaml"));
        assert_int_equal(
                wait_exit(start_guarded_with("s-ok", "m1", "20s", 6, "--etcd-sole-voter-may-restart")), 0);
        assert_true(exists("s-ok", "manifests/etcd-pod.yaml"));
        etcd_test_cluster_destroy(&cluster);

        assert_int_equal(etcd_test_cluster_init(&cluster, 3, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&cluster, 3), 0);
        create_guard_objects(7);
        size_t frozen = (leader_index() + 1) % 3, other = (frozen + 1) % 3;
        signal_member(frozen, SIGSTOP);
        int r = wait_exit(start_guarded_with("s-three", cluster.members[other].name, "4s", 7,
                                             "--etcd-sole-voter-may-restart"));
        signal_member(frozen, SIGCONT);
        assert_int_equal(r, 1);
        assert_false(exists("s-three", "manifests/etcd-pod.yaml"));
        etcd_test_cluster_destroy(&cluster);
}

static void test_quorum_guard_usage(void **state)
{
        assert_int_equal(run_installer("usage2", "3", "etcd-pod", "--etcd-endpoints=http://10.0.0.1:2379"),
                         2);
        /* An alias is two addresses. */
        assert_int_equal(run_installer("usage2", "3", "etcd-pod", "--etcd-address-alias=10.0.1.5"), 2);
        assert_int_equal(run_installer("usage2", "3", "etcd-pod", "--etcd-address-alias=10.0.1.5=master-0"),
                         2);
        assert_false(exists("usage2", "manifests/etcd-pod.yaml"));
        /* The guard needs the CA and this node's peer certificate among what it fetched. */
        /* (etcd-all-certs-4 and the cert copy have no etcd-peer-master-0.example.crt) */
        assert_int_equal(run_installer("nocert", "4", "etcd-pod", "--etcd-endpoints=https://127.0.0.1:1"),
                         1);
        assert_false(exists("nocert", "manifests/etcd-pod.yaml"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_install),          cmocka_unit_test(test_pod_configmap_not_listed),
                cmocka_unit_test(test_missing_required), cmocka_unit_test(test_transient_errors_retried),
                cmocka_unit_test(test_usage_errors),     cmocka_unit_test(test_quorum_guard_usage),
                cmocka_unit_test(test_quorum_guard),     cmocka_unit_test(test_sole_voter),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
