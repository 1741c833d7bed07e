/* render: inputs and their error messages, bootstrap IP choice on injected
 * address lists, templates, and the whole output tree against a golden file
 * (keys, certificates, serials and times masked), with every certificate
 * parsed and checked; the per-node static pod shape. UPDATE_GOLDEN=1
 * rewrites the golden file. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/yaml.h"
#include "render/bootstrap.h"
#include "render/etcdenv.h"

/* The Intermediate TLS profile's suites as etcd takes them (openshift/api, library-go). */
#define INTERMEDIATE_SUITES                                                              \
        "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,"    \
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," \
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384," \
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
#include "render/etcdscripts.h"
#include "render/installerpod.h"
#include "render/payload.h"
#include "render/staticpod.h"
#include "render/template.h"
#include "render/tlsprofile.h"

static char dir[] = "/tmp/test-render-XXXXXX";
static const char *data_dir;

static char *data(const char *name)
{
        return strdup_printf("%s/render/%s", data_dir, name);
}

static char *write_tmp(const char *name, const char *text)
{
        char *p = strdup_printf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0644), 0);
        return p;
}

static void load_good(RenderInputs *in)
{
        _cleanup_free_ char *n = data("network.yaml"), *i = data("infrastructure.yaml"),
                            *c = data("cluster-config.yaml");
        _cleanup_free_ char *err = NULL;
        *in = (RenderInputs){};
        assert_int_equal(render_read_network(n, in, &err), 0);
        assert_int_equal(render_read_infrastructure(i, in, &err), 0);
        assert_int_equal(render_read_cluster_config(c, in, &err), 0);
}

static void test_inputs(void **state)
{
        RenderInputs in;
        load_good(&in);
        assert_false(in.prefer_ipv6);
        assert_string_equal(in.platform, "BareMetal");
        assert_int_equal(in.control_plane_replicas, 3);
        assert_int_equal(in.n_machine_networks, 2);
        assert_int_equal(in.n_vips, 2);
}

typedef int (*Reader)(const char *path, RenderInputs *in, char **ret_error);

static void expect_bad(Reader f, const char *text, const char *needle)
{
        _cleanup_free_ char *p = write_tmp("bad.yaml", text), *err = NULL;
        RenderInputs in = {};
        int r = f(p, &in, &err);
        if (r >= 0 || !err || !strstr(err, needle) || !strstr(err, p))
                fail_msg("input:\n%s\ngot %d: %s\nwanted a message naming the file and: %s", text, r,
                         err ? err : "(none)", needle);
}

#define CM(ic) "kind: ConfigMap\ndata:\n  install-config: |\n" ic

static void test_input_errors(void **state)
{
        expect_bad(render_read_network, "kind: Network\nspec: {}\n",
                   "spec.serviceNetwork: expected a list of CIDRs");
        expect_bad(render_read_network, "kind: Network\nspec:\n  serviceNetwork: [nope]\n",
                   "spec.serviceNetwork[0]: expected a CIDR");
        expect_bad(render_read_network, "kind: Infrastructure\n", "kind: expected \"Network\"");
        expect_bad(render_read_network, "kind: [\n", "not valid YAML");
        expect_bad(render_read_infrastructure, "kind: Infrastructure\nstatus: {}\n",
                   "status.platformStatus.type: expected a platform");
        expect_bad(render_read_cluster_config, "kind: ConfigMap\ndata: {}\n",
                   "data.install-config: missing");
        expect_bad(render_read_cluster_config, CM("    networking: [\n"),
                   "data.install-config: not valid YAML");
        expect_bad(render_read_cluster_config, CM("    networking: {}\n"),
                   "networking.machineNetwork: expected a list of {cidr: ...}");
        expect_bad(render_read_cluster_config,
                   CM("    networking:\n      machineNetwork:\n      - cidr: 10.0.0.0/33\n"),
                   "networking.machineNetwork[0].cidr: expected a CIDR");
        expect_bad(render_read_cluster_config,
                   CM("    networking:\n      machineNetwork:\n      - cidr: 10.0.0.0/16\n    "
                      "controlPlane:\n      "
                      "replicas: 0\n"),
                   "controlPlane.replicas: expected a number from 1 to 7");
        expect_bad(render_read_cluster_config,
                   CM("    networking:\n      machineNetwork:\n      - cidr: 10.0.0.0/16\n    "
                      "controlPlane:\n      replicas: 3\n    bootstrapInPlace:\n      installationDisk: "
                      "/dev/sda\n"),
                   "bootstrapInPlace needs controlPlane.replicas: 1 (it has 3)");
        expect_bad(
                render_read_cluster_config,
                CM("    networking:\n      machineNetwork:\n      - cidr: 10.0.0.0/16\n    platform:\n      "
                   "baremetal:\n        apiVIPs: [10.0.0.300]\n"),
                "platform.baremetal.apiVIPs[0]: expected an IP address");
}

static IpAddr ip(const char *s)
{
        IpAddr a;
        assert_int_equal(ip_parse(s, &a), 0);
        return a;
}

static void test_bootstrap_ip(void **state)
{
        RenderInputs in;
        IpAddr got;
        char t[64];
        _cleanup_free_ char *err = NULL;

        load_good(&in);
        /* The VIP and an address outside the machine networks are skipped. */
        IpAddr c1[] = {ip("192.168.111.5"), ip("10.1.2.3"), ip("192.168.111.20"), ip("127.0.0.1")};
        assert_int_equal(render_pick_bootstrap_ip(&in, c1, ELEMENTSOF(c1), &got, &err), 0);
        assert_string_equal(ip_to_string(&got, t, sizeof t), "192.168.111.20");
        /* IPv4 preferred with an IPv4 service network, even if IPv6 comes first. */
        Cidr v6;
        assert_int_equal(cidr_parse("fd2e:6f44:5dd8::/64", &v6), 0);
        in.machine_networks[in.n_machine_networks++] = v6;
        IpAddr c2[] = {ip("fd2e:6f44:5dd8::10"), ip("192.168.111.21")};
        assert_int_equal(render_pick_bootstrap_ip(&in, c2, ELEMENTSOF(c2), &got, &err), 0);
        assert_string_equal(ip_to_string(&got, t, sizeof t), "192.168.111.21");
        in.prefer_ipv6 = true;
        assert_int_equal(render_pick_bootstrap_ip(&in, c2, ELEMENTSOF(c2), &got, &err), 0);
        assert_string_equal(ip_to_string(&got, t, sizeof t), "fd2e:6f44:5dd8::10");
        char url[64];
        assert_string_equal(ip_url_host(&got, url, sizeof url), "[fd2e:6f44:5dd8::10]");
        /* Documentation ranges never qualify, even inside a machine network. */
        Cidr doc;
        assert_int_equal(cidr_parse("192.0.2.0/24", &doc), 0);
        in.machine_networks[in.n_machine_networks++] = doc;
        IpAddr c3[] = {ip("192.0.2.10"), ip("8.8.8.8")};
        assert_int_equal(render_pick_bootstrap_ip(&in, c3, ELEMENTSOF(c3), &got, &err), -ENOENT);
        assert_non_null(strstr(err, "pass --bootstrap-ip"));
        err = mfree(err);
        IpAddr vip = ip("192.168.111.4");
        assert_int_equal(render_check_bootstrap_ip(&in, &vip, &err), -EINVAL);
        assert_non_null(strstr(err, "is a VIP"));
        err = mfree(err);
        IpAddr lo = ip("127.0.0.7");
        assert_int_equal(render_check_bootstrap_ip(&in, &lo, &err), 0);
}

static void test_template(void **state)
{
        TemplateVar v[] = {{"A", "1"}, {"BB", "two"}};
        _cleanup_free_ char *out = NULL, *missing = NULL;
        char *bad = NULL;

        assert_int_equal(template_render("x${A}y${BB}z${A}", v, 2, &out, &missing), 0);
        assert_string_equal(out, "x1ytwoz1");
        assert_int_equal(template_render("${C}", v, 2, &bad, &missing), -ENOENT);
        assert_string_equal(missing, "C");
        assert_int_equal(template_render("${A", v, 2, &bad, NULL), -EBADMSG);
        assert_true(template_is_image_ref("quay.io/openshift/etcd@sha256:abc"));
        assert_true(template_is_image_ref("registry:5000/etcd:v3.4"));
        assert_false(template_is_image_ref("etcd; rm -rf /"));
        assert_false(template_is_image_ref("etcd\nx"));
        assert_false(template_is_image_ref(""));
}

/* The master pod from the embedded template: generated variables first, in
 * name order, then the container's own; REVISION stays a quoted string. */
static void test_staticpod(void **state)
{
        const TemplateVar vars[] = {
                {"ETCD_IMAGE", "quay.io/openshift/etcd@sha256:0123"},
                {"OPERATOR_IMAGE", "quay.io/openshift/ceo@sha256:4567"},
                {"LISTEN_HOST", "0.0.0.0"},
                {"LOCAL_HOST", "127.0.0.1"},
                {"LISTEN_IP", "0.0.0.0"},
                {"ETCD_LOG_LEVEL", "info"},
                {"CORRUPT_CHECK_FLAG", "--experimental-initial-corrupt-check=true"},
                {"ETCD_MINOR", "3.5"},
                {"SNAPSHOT_COUNT_FLAG", "--snapshot-count=10000"},
                {"PROXY_TLS_MIN_FLAG", ""},
                {"LIVENESS_FAILURES", "20"},
                {"STARTUP_FAILURES", "30"},
        };
        _cleanup_(env_list_done) EnvList env = {};
        _cleanup_free_ char *yaml = NULL, *err = NULL, *bad = NULL;
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;
        cJSON *c;

        assert_int_equal(env_list_add(&env, "NODE_master_1_IP", "%s", "10.0.0.2"), 0);
        assert_int_equal(env_list_add(&env, "ALL_ETCD_ENDPOINTS", "https://%s:2379", "10.0.0.2"), 0);
        assert_int_equal(env_list_add(&env, "NODE_master_0_IP", "%s", "10.0.0.1"), 0);
        env_list_sort(&env);
        assert_string_equal(env.v[0].name, "ALL_ETCD_ENDPOINTS");
        assert_string_equal(env.v[2].name, "NODE_master_1_IP");

        assert_int_equal(staticpod_render("etcd-pod/pod.yaml", vars, ELEMENTSOF(vars), &env, &yaml), 0);
        assert_non_null(strstr(yaml, "revision: \"REVISION\""));
        assert_int_equal(yaml_parse(yaml, strlen(yaml), &pod, &err), 0);
        size_t with_env = 0;
        JSON_ARRAY_FOREACH (c, json_get_array(pod, "spec.containers")) {
                cJSON *e = json_get_array(c, "env");
                if (!e)
                        continue;
                with_env++;
                assert_true(cJSON_GetArraySize(e) >= 3);
                assert_string_equal(json_get_string(cJSON_GetArrayItem(e, 0), "name"), "ALL_ETCD_ENDPOINTS");
                assert_string_equal(json_get_string(cJSON_GetArrayItem(e, 0), "value"),
                                    "https://10.0.0.2:2379");
                assert_string_equal(json_get_string(cJSON_GetArrayItem(e, 1), "name"), "NODE_master_0_IP");
                assert_string_equal(json_get_string(cJSON_GetArrayItem(e, 2), "name"), "NODE_master_1_IP");
        }
        assert_true(with_env >= 2);
        /* The etcd container's own variable comes after the generated ones, still a string. */
        bool etcd = false;
        JSON_ARRAY_FOREACH (c, json_get_array(pod, "spec.containers"))
                if (streq_ptr(json_get_string(c, "name"), "etcd")) {
                        etcd = true;
                        cJSON *e = json_get_array(c, "env");
                        cJSON *last = cJSON_GetArrayItem(e, cJSON_GetArraySize(e) - 1);
                        assert_string_equal(json_get_string(last, "name"), "ETCD_STATIC_POD_VERSION");
                        assert_string_equal(json_get_string(last, "value"), "REVISION");
                        assert_string_equal(json_get_string(c, "image"), vars[0].value);
                }
        assert_true(etcd);

        assert_int_equal(staticpod_render("etcd-pod/nope.yaml", vars, ELEMENTSOF(vars), &env, &bad),
                         -ENOENT);
        assert_int_equal(staticpod_render("etcd-pod/pod.yaml", vars, 2, &env, &bad), -EINVAL);
        assert_null(bad);
}

/* ---- the whole tree ---- */

static RenderOptions options(const char *out, const RenderInputs *in)
{
        RenderOptions o = {.output_dir = out,
                           .etcd_image = "quay.io/openshift/etcd@sha256:0123456789abcdef",
                           .operator_image =
                                   "quay.io/openshift/cluster-etcd-operator@sha256:fedcba9876543210",
                           .hostname = "bootstrap",
                           .listen_on_node_ip = false,
                           .key_type = PKI_KEY_ECDSA_P256,
                           .machine = "x86_64",                 /* the goldens', whatever this host is */
                           .now = 1795305600ULL * USEC_PER_SEC, /* 2026-11-22T00:00:00Z */
                           .inputs = in};
        assert_int_equal(ip_parse("192.168.111.20", &o.bootstrap_ip), 0);
        return o;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void list_files(const char *root, const char *rel, char ***v, size_t *n)
{
        _cleanup_free_ char *path = strdup_printf("%s/%s", root, rel);
        DIR *d = opendir(path);
        struct dirent *e;
        assert_non_null(d);
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char *r = *rel ? strdup_printf("%s/%s", rel, e->d_name) : strdup(e->d_name);
                if (e->d_type == DT_DIR) {
                        list_files(root, r, v, n);
                        free(r);
                } else {
                        *v = realloc(*v, (*n + 1) * sizeof **v);
                        (*v)[(*n)++] = r;
                }
        }
        closedir(d);
}

/* One text for the whole tree: paths, modes and contents, with everything that
 * changes from run to run (keys, certificates, base64 of either, the token)
 * replaced by a marker. */
static char *normalise_tree(const char *root)
{
        char **files = NULL;
        size_t n = 0;
        Buf out = BUF_INIT(0);

        list_files(root, "", &files, &n);
        qsort(files, n, sizeof *files, cmp_str);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = strdup_printf("%s/%s", root, files[i]), *text = NULL;
                struct stat st;
                char hdr[512];
                assert_int_equal(stat(p, &st), 0);
                (void) snprintf(hdr, sizeof hdr, "== %s %04o\n", files[i], st.st_mode & 07777);
                assert_int_equal(buf_append(&out, hdr, strlen(hdr)), 0);
                assert_int_equal(read_full_file(p, 1 << 20, &text, NULL), 0);
                /* Review M2: whatever holds a private key, as PEM or as a Secret's data, is 0600. */
                if ((strstr(text, "PRIVATE KEY") || strstr(text, ".key: ")) && (st.st_mode & 07777) != 0600)
                        fail_msg("%s holds a private key but has mode %04o", files[i],
                                 (unsigned) (st.st_mode & 07777));
                if (endswith(files[i], ".crt") || endswith(files[i], ".key")) {
                        const char *m = strstr(text, "PRIVATE KEY") ? "<private key>\n" : "<certificate>\n";
                        assert_int_equal(buf_append(&out, m, strlen(m)), 0);
                        free(files[i]);
                        continue;
                }
                bool in_pem = false;
                for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
                     line = strtok_r(NULL, "\n", &save)) {
                        char masked[4096];
                        const char *colon = strstr(line, ": ");
                        const char *tok = strstr(line, "--initial-cluster-token=");
                        if (strstr(line, "-----END "))
                                in_pem = false;
                        if (in_pem || strstr(line, "-----END "))
                                continue;
                        if (strstr(line, "-----BEGIN ")) {
                                in_pem = true;
                                (void) snprintf(masked, sizeof masked, "%.*s<pem>", (int) strspn(line, " "),
                                                line);
                        } else if (tok)
                                (void) snprintf(masked, sizeof masked,
                                                "%.*s--initial-cluster-token=<token> \\", (int) (tok - line),
                                                line);
                        else if (colon && (strstr(line, ".crt: ") || strstr(line, ".key: ")))
                                (void) snprintf(masked, sizeof masked, "%.*s: <base64>",
                                                (int) (colon - line), line);
                        else
                                (void) snprintf(masked, sizeof masked, "%s", line);
                        assert_int_equal(buf_append(&out, masked, strlen(masked)), 0);
                        assert_int_equal(buf_append(&out, "\n", 1), 0);
                }
                free(files[i]);
        }
        free(files);
        return buf_steal(&out);
}

static void check_cert(const char *root, const char *name, const char *cn, const char *issuer_prefix,
                       bool is_ca, bool node_sans, uint32_t xku)
{
        _cleanup_free_ char *p = strdup_printf(
                "%s/etc-kubernetes/static-pod-resources/etcd-member/etcd-all-certs/%s.crt", root, name);
        _cleanup_free_ char *k = strdup_printf(
                "%s/etc-kubernetes/static-pod-resources/etcd-member/etcd-all-certs/%s.key", root, name);
        _cleanup_free_ char *pem = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *info = NULL;
        struct stat st;

        assert_int_equal(read_full_file(p, 1 << 20, &pem, NULL), 0);
        assert_int_equal(pki_cert_from_pem(pem, &x), 0);
        assert_int_equal(pki_cert_get_info(x, &info), 0);
        if (cn)
                assert_string_equal(info->subject_cn, cn);
        /* Upstream's O values: the client certificates' two (in DER order), none on a node's. */
        if (!is_ca && !node_sans)
                assert_string_equal(info->subject_orgs, streq(cn, "etcd-client")
                                                                ? "etcd-client,system:etcd"
                                                                : "etcd-metric,system:etcd");
        if (node_sans)
                assert_null(info->subject_orgs);
        assert_true(startswith(info->issuer_cn, issuer_prefix));
        assert_int_equal(info->is_ca, is_ca);
        if (xku != UINT32_MAX)
                assert_int_equal(info->ext_key_usage & (XKU_SSL_SERVER | XKU_SSL_CLIENT), xku);
        /* Five years from "now" (minus the one-minute skew allowance). */
        assert_true(info->not_after - info->not_before >= PKI_LEAF_VALIDITY);
        if (node_sans) {
                bool has_ip = false, has_svc = false;
                for (char **s = info->ips; *s; s++)
                        has_ip |= streq(*s, "192.168.111.20");
                for (char **s = info->dns; *s; s++)
                        has_svc |= streq(*s, "etcd.openshift-etcd.svc");
                assert_true(has_ip && has_svc);
        }
        assert_int_equal(stat(k, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_render_tree(void **state)
{
        RenderInputs in;
        _cleanup_free_ char *out = strdup_printf("%s/assets", dir), *err = NULL,
                            *golden = data("golden-bootstrap.txt");
        _cleanup_free_ char *want = NULL;
        struct stat st;

        load_good(&in);
        RenderOptions o = options(out, &in);
        assert_int_equal(render_bootstrap(&o, &err), 0);
        /* Review M2: nobody but the owner looks inside the tree. */
        assert_int_equal(stat(out, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);
        _cleanup_free_ char *got = normalise_tree(out);
        if (getenv("UPDATE_GOLDEN"))
                assert_int_equal(write_file_atomic(golden, got, strlen(got), 0644), 0);
        assert_int_equal(read_full_file(golden, 1 << 20, &want, NULL), 0);
        if (!streq(got, want))
                fail_msg("output differs from %s (UPDATE_GOLDEN=1 to accept):\n%s", golden, got);

        check_cert(out, "etcd-signer", NULL, "openshift-etcd_etcd-signer@", true, false, UINT32_MAX);
        check_cert(out, "etcd-metric-signer", NULL, "openshift-etcd_etcd-metric-signer@", true, false,
                   UINT32_MAX);
        check_cert(out, "etcd-client", "etcd-client", "openshift-etcd_etcd-signer@", false, false,
                   XKU_SSL_CLIENT);
        check_cert(out, "etcd-metric-client", "etcd-metric", "openshift-etcd_etcd-metric-signer@", false,
                   false, XKU_SSL_CLIENT);
        /* A node certificate's CN is the first of its SANs in byte order, as library-go's: of
         * 127.0.0.1, ::1, 192.168.111.20, localhost and the service names, 127.0.0.1. */
        check_cert(out, "etcd-peer-bootstrap", "127.0.0.1", "openshift-etcd_etcd-signer@", false, true,
                   XKU_SSL_SERVER | XKU_SSL_CLIENT);
        check_cert(out, "etcd-serving-bootstrap", "127.0.0.1", "openshift-etcd_etcd-signer@", false, true,
                   XKU_SSL_SERVER | XKU_SSL_CLIENT);
        check_cert(out, "etcd-serving-metrics-bootstrap", "127.0.0.1", "openshift-etcd_etcd-metric-signer@",
                   false, true, XKU_SSL_SERVER | XKU_SSL_CLIENT);

        /* A second run reuses the signers. */
        _cleanup_free_ char *signer = NULL, *signer2 = NULL;
        _cleanup_free_ char *sp =
                strdup_printf("%s/etc-kubernetes/static-pod-resources/etcd-member/etcd-all-certs/"
                              "etcd-signer.crt",
                              out);
        assert_int_equal(read_full_file(sp, 1 << 20, &signer, NULL), 0);
        o.now += 3600 * USEC_PER_SEC;
        assert_int_equal(render_bootstrap(&o, &err), 0);
        assert_int_equal(read_full_file(sp, 1 << 20, &signer2, NULL), 0);
        assert_string_equal(signer, signer2);

        /* Bad input or an unusable signer: an error, and the tree is exactly as it was. */
        _cleanup_free_ char *before = normalise_tree(out);
        RenderOptions bad = o;
        bad.etcd_image = "etcd; rm -rf /";
        assert_int_equal(render_bootstrap(&bad, &err), -EINVAL);
        assert_non_null(strstr(err, "--etcd-image"));
        err = mfree(err);
        bad = o;
        bad.hostname = "Not_A_Name";
        assert_int_equal(render_bootstrap(&bad, &err), -EINVAL);
        assert_non_null(strstr(err, "--hostname"));
        err = mfree(err);
        _cleanup_free_ char *kp =
                strdup_printf("%s/etc-kubernetes/static-pod-resources/etcd-member/etcd-all-certs/"
                              "etcd-signer.key",
                              out);
        _cleanup_free_ char *key = NULL;
        assert_int_equal(read_full_file(kp, 1 << 20, &key, NULL), 0);
        assert_int_equal(write_file_atomic(kp, "garbage", 7, 0600), 0);
        assert_int_equal(render_bootstrap(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "existing signer"));
        assert_int_equal(write_file_atomic(kp, key, strlen(key), 0600), 0);
        _cleanup_free_ char *after = normalise_tree(out);
        assert_string_equal(before, after);
}

static char *read_out(const char *out, const char *rel)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", out, rel);
        char *text = NULL;
        assert_int_equal(read_full_file(p, 1 << 20, &text, NULL), 0);
        return text;
}

/* Installed in place (install-config bootstrapInPlace, one master): the bootstrap member is the
 * node's own (named as the host, its static pod named as the revisions' so that it is mirrored
 * as etcd-<host>), and etcd-endpoints publishes its address instead of the bootstrap annotation.
 * The assisted installer's delayed HA: the namespace's annotation. Neither: as the golden tree. */
static void test_render_variants(void **state)
{
        static const char ic[] =
                "kind: ConfigMap\ndata:\n  install-config: |\n    networking:\n      machineNetwork:\n"
                "      - cidr: 192.168.111.0/24\n    controlPlane:\n      replicas: 1\n"
                "    bootstrapInPlace:\n      installationDisk: /dev/sda\n";
        _cleanup_free_ char *cc = write_tmp("bip.yaml", ic), *out = strdup_printf("%s/bip", dir),
                            *err = NULL;
        RenderInputs in;
        (void) state;
        load_good(&in);
        assert_int_equal(render_read_cluster_config(cc, &in, &err), 0);
        assert_true(in.bootstrap_in_place);
        RenderOptions o = options(out, &in);
        o.hostname = "master-0";
        assert_int_equal(render_bootstrap(&o, &err), 0);
        _cleanup_free_ char *pod = read_out(out, "etc-kubernetes/manifests/etcd-member-pod.yaml"),
                            *cm = read_out(out, "manifests/00_etcd-endpoints-cm.yaml"),
                            *ns = read_out(out, "manifests/00_openshift-etcd-ns.yaml");
        assert_non_null(strstr(pod, "\n  name: etcd\n"));
        assert_non_null(strstr(pod, "--name=master-0 "));
        assert_non_null(strstr(pod, "--initial-cluster=master-0=https://192.168.111.20:2380"));
        assert_null(strstr(pod, "--name=etcd-bootstrap"));
        assert_null(strstr(pod, "etcd-bootstrap-member"));
        /* base64("192.168.111.20") without its padding, as upstream's render keys it. */
        assert_non_null(strstr(cm, "MTkyLjE2OC4xMTEuMjA: 192.168.111.20"));
        assert_null(strstr(cm, "etcd-bootstrap"));
        assert_null(strstr(ns, "delayed"));

        /* Delayed HA on three masters from a bootstrap host. */
        _cleanup_free_ char *out2 = strdup_printf("%s/delayed", dir);
        load_good(&in);
        o = options(out2, &in);
        o.delayed_ha = true;
        assert_int_equal(render_bootstrap(&o, &err), 0);
        _cleanup_free_ char *ns2 = read_out(out2, "manifests/00_openshift-etcd-ns.yaml"),
                            *pod2 = read_out(out2, "etc-kubernetes/manifests/etcd-member-pod.yaml"),
                            *cm2 = read_out(out2, "manifests/00_etcd-endpoints-cm.yaml");
        assert_non_null(strstr(ns2, "openshift.io/delayed-bootstrap: \"\""));
        assert_non_null(strstr(ns2, "pod-security.kubernetes.io/enforce: privileged"));
        assert_non_null(strstr(pod2, "\n  name: etcd-bootstrap-member\n"));
        assert_non_null(strstr(pod2, "--name=etcd-bootstrap "));
        assert_non_null(strstr(cm2, "alpha.installer.openshift.io/etcd-bootstrap: 192.168.111.20"));
        assert_null(strstr(pod2, "ETCD_UNSUPPORTED_ARCH"));

        /* On s390x (and arm64) the bootstrap etcd is told its architecture, as upstream's is;
         * it must still be a Pod with that env entry in the etcd container. */
        _cleanup_free_ char *out3 = strdup_printf("%s/s390x", dir);
        load_good(&in);
        o = options(out3, &in);
        o.machine = "s390x";
        assert_int_equal(render_bootstrap(&o, &err), 0);
        _cleanup_free_ char *pod3 = read_out(out3, "etc-kubernetes/manifests/etcd-member-pod.yaml");
        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
        _cleanup_free_ char *yerr = NULL;
        assert_int_equal(yaml_parse(pod3, strlen(pod3), &j, &yerr), 0);
        const char *arch = NULL;
        cJSON *c, *e;
        JSON_ARRAY_FOREACH (c, json_get_array(j, "spec.containers"))
                if (streq_ptr(json_get_string(c, "name"), "etcd"))
                        JSON_ARRAY_FOREACH (e, json_get_array(c, "env"))
                                if (streq_ptr(json_get_string(e, "name"), "ETCD_UNSUPPORTED_ARCH"))
                                        arch = json_get_string(e, "value");
        assert_string_equal(arch, "s390x");
        assert_non_null(strstr(pod3, "name: ETCD_EXPERIMENTAL_MAX_LEARNERS\n"));

        /* An etcd 3.6 image: the learners' limit as 3.6 names it (3.5 would warn about it). */
        _cleanup_free_ char *out4 = strdup_printf("%s/etcd-3.6", dir);
        load_good(&in);
        o = options(out4, &in);
        o.etcd_minor = ETCD_MINOR_3_6;
        assert_int_equal(render_bootstrap(&o, &err), 0);
        _cleanup_free_ char *pod4 = read_out(out4, "etc-kubernetes/manifests/etcd-member-pod.yaml");
        assert_non_null(strstr(pod4, "name: ETCD_MAX_LEARNERS\n"));
        assert_null(strstr(pod4, "EXPERIMENTAL"));
        assert_string_equal(etcd_unsupported_arch("aarch64"), "arm64");
        assert_null(etcd_unsupported_arch("x86_64"));
        assert_null(etcd_unsupported_arch("ppc64le"));
}

static int setup(void **state)
{
        data_dir = getenv("TEST_DATA");
        return data_dir && mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* The two spellings of the default quota agree. */
static void test_etcd_defaults(void **state)
{
        assert_int_equal(strtoull(ETCD_DEFAULT_QUOTA_BYTES, NULL, 10),
                         (unsigned long long) ETCD_DEFAULT_QUOTA_GIB << 30);
        assert_string_equal(etcd_heartbeat_ms(true), "500");
        assert_string_equal(etcd_election_timeout_ms(false), "1000");
}

static void expect_tls(const char *profile_json, const char *suites, const char *min, const char *name)
{
        _cleanup_(cJSON_Deletep) cJSON *profile = profile_json ? cJSON_Parse(profile_json) : NULL;
        _cleanup_(etcd_tls_done) EtcdTls tls = {};
        char why[320];
        assert_true(!profile_json || profile);
        assert_int_equal(etcd_tls_from_profile(profile, &tls, why, sizeof why), 0);
        if (suites)
                assert_string_equal(tls.cipher_suites, suites);
        else
                assert_null(tls.cipher_suites);
        assert_string_equal(tls.min_version, min);
        assert_string_equal(tls.profile, name);
}

static void expect_tls_error(const char *profile_json, const char *field)
{
        _cleanup_(cJSON_Deletep) cJSON *profile = cJSON_Parse(profile_json);
        EtcdTls tls = {};
        char why[320];
        assert_int_equal(etcd_tls_from_profile(profile, &tls, why, sizeof why), -EINVAL);
        assert_null(tls.cipher_suites);
        if (!strstr(why, field))
                fail_msg("\"%s\" does not name %s", why, field);
}

/* The TLS security profile as etcd's settings, against openshift/api's profiles
 * and library-go's name table. */
static void test_tls_profile(void **state)
{
        /* No profile is Intermediate, and that is what the bootstrap member runs. */
        expect_tls(NULL, INTERMEDIATE_SUITES, "TLS1.2", "Intermediate");
        expect_tls("{}", INTERMEDIATE_SUITES, "TLS1.2", "Intermediate");
        expect_tls("{\"type\":\"Intermediate\",\"intermediate\":{}}", INTERMEDIATE_SUITES, "TLS1.2",
                   "Intermediate");
        /* Old: every suite etcd has a name for, in the profile's order (the TLS 1.3 names
         * first, as upstream's); no DHE and no SHA-384 CBC (library-go has no IANA name for
         * them); etcd's floor is TLS 1.2. */
        expect_tls("{\"type\":\"Old\",\"old\":{}}",
                   INTERMEDIATE_SUITES
                   ",TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,"
                   "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,"
                   "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,"
                   "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,TLS_RSA_WITH_AES_128_GCM_SHA256,"
                   "TLS_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA256,"
                   "TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_256_CBC_SHA,"
                   "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
                   "TLS1.2", "Old");
        /* Modern: TLS 1.3 only, where etcd takes no suite list at all. */
        expect_tls("{\"type\":\"Modern\",\"modern\":{}}", NULL, "TLS1.3", "Modern");
        /* Custom: its own list, each suite once, unknown names left out (a TLS 1.3 name kept). */
        expect_tls(
                "{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS11\",\"ciphers\":"
                "[\"DHE-RSA-AES128-GCM-SHA256\",\"ECDHE-RSA-AES256-GCM-SHA384\",\"AES128-SHA256\","
                "\"AES128-SHA\",\"ECDHE-RSA-AES256-GCM-SHA384\",\"TLS_AES_128_GCM_SHA256\","
                "\"ECDHE-RSA-AES128-GCM-SHA256\"]}}",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA256,"
                "TLS_RSA_WITH_AES_128_CBC_SHA,TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS1.2", "Custom");
        expect_tls("{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS13\",\"ciphers\":"
                   "[\"TLS_AES_128_GCM_SHA256\"]}}",
                   NULL, "TLS1.3", "Custom");
        expect_tls("{\"type\":\"Custom\",\"custom\":{\"ciphers\":[\"ECDHE-ECDSA-AES128-GCM-SHA256\"]}}",
                   "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS1.2", "Custom");
        /* What etcd cannot use is refused, naming the field. */
        expect_tls_error("{\"type\":\"Custom\"}", "custom");
        expect_tls_error("{\"type\":\"Custom\",\"custom\":null}", "custom");
        expect_tls_error("{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS12\",\"ciphers\":"
                         "[\"DHE-RSA-AES128-GCM-SHA256\",\"TLS_AES_128_GCM_SHA256\"]}}",
                         "custom.ciphers");
        /* etcd's HTTP/2 (Go) needs an ECDHE AES-128-GCM suite, or it exits at start. */
        expect_tls_error("{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS12\",\"ciphers\":"
                         "[\"ECDHE-ECDSA-AES256-GCM-SHA384\",\"ECDHE-RSA-AES256-GCM-SHA384\"]}}",
                         "ECDHE-ECDSA-AES128-GCM-SHA256 or ECDHE-RSA-AES128-GCM-SHA256");
        expect_tls_error("{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"TLSv9\",\"ciphers\":"
                         "[\"ECDHE-RSA-AES128-GCM-SHA256\"]}}",
                         "custom.minTLSVersion");
        expect_tls_error("{\"type\":\"Paranoid\"}", "spec.tlsSecurityProfile.type");
}

/* The installer pod comes from its manifest; values a Pod cannot carry are refused, not rendered. */
static void test_installer_pod(void **state)
{
        static const char image[] = "quay.io/openshift/cluster-etcd-operator@sha256:0123";
        cJSON *pod = NULL;
        assert_int_equal(installer_pod_render("installer-3-master-0", "master-0", 3, image, NULL, 0, &pod),
                         0);
        assert_string_equal(json_get_string(pod, "metadata.name"), "installer-3-master-0");
        assert_string_equal(json_get_string(pod, "spec.nodeName"), "master-0");
        cJSON *c = cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0);
        assert_string_equal(json_get_string(c, "image"), image);
        cJSON *cmd = json_get_array(c, "command");
        assert_string_equal(cJSON_GetArrayItem(cmd, 2)->valuestring, "--revision=3");
        assert_string_equal(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1)->valuestring,
                            "--node-name=master-0");
        cJSON_Delete(pod);
        pod = NULL;
        assert_int_equal(installer_pod_render("installer-3-x", "Master_0", 3, image, NULL, 0, &pod),
                         -EINVAL);
        assert_int_equal(installer_pod_render("installer-3-x", "master-0", 0, image, NULL, 0, &pod),
                         -EINVAL);
        assert_int_equal(installer_pod_render("installer-3-x", "master-0", 3, "not an image", NULL, 0, &pod),
                         -EINVAL);
        assert_null(pod);

        /* The quorum guard's seeds: one flag, last; never a URL that could smuggle another. */
        char *eps[] = {"https://10.0.0.5:2379", "https://[fd00::6]:2379"};
        assert_int_equal(installer_pod_render("installer-3-master-0", "master-0", 3, image, eps, 2, &pod),
                         0);
        cmd = json_get_array(cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0), "command");
        assert_string_equal(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1)->valuestring,
                            "--etcd-endpoints=https://10.0.0.5:2379,https://[fd00::6]:2379");
        /* Moved masters' members: one flag each, after; never what is no address. */
        EtcdAddressAlias aliases[] = {{"10.0.1.5", "10.0.0.5"}, {"fd00:1::6", "fd00::6"}};
        assert_int_equal(installer_pod_add_aliases(pod, aliases, 2), 0);
        assert_string_equal(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 2)->valuestring,
                            "--etcd-address-alias=10.0.1.5=10.0.0.5");
        assert_string_equal(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1)->valuestring,
                            "--etcd-address-alias=fd00:1::6=fd00::6");
        EtcdAddressAlias smuggle = {"10.0.1.5 --x", "10.0.0.5"};
        int size = cJSON_GetArraySize(cmd);
        assert_int_equal(installer_pod_add_aliases(pod, &smuggle, 1), -EINVAL);
        assert_int_equal(cJSON_GetArraySize(cmd), size);
        cJSON_Delete(pod);
        pod = NULL;
        char *bad[][1] = {
                {"http://10.0.0.5:2379"}, {"https://a:1,https://b:2"}, {"https://a:1 --x"}, {"https://"}};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(
                        installer_pod_render("installer-3-x", "master-0", 3, image, bad[i], 1, &pod),
                        -EINVAL);
        assert_null(pod);
}

/* etcd.env: sorted `export NAME="value"` lines, safe for any value. */
/* image-references' literal pull specs replaced as the release build does: whole references
 * only, every occurrence, and a tag without an image refused. */
static void test_payload_images(void **state)
{
        (void) state;
        static const char refs_text[] = "kind: ImageStream\n"
                                        "apiVersion: image.openshift.io/v1\n"
                                        "spec:\n"
                                        "  tags:\n"
                                        "  - name: etcd\n"
                                        "    from: {kind: DockerImage, name: quay.io/x/etcd}\n"
                                        "  - name: op\n"
                                        "    from: {kind: DockerImage, name: quay.io/x/op}\n";
        const PayloadImage images[] = {{"etcd", "r.io/etcd@sha256:aa"}, {"op", "r.io/op@sha256:bb"}};
        PayloadRefs *refs = NULL;
        char *out = NULL, *err = NULL;
        size_t n = 0;

        assert_int_equal(payload_refs_parse(refs_text, images, 2, &refs, &err), 0);
        assert_int_equal(payload_substitute(refs,
                                            "image: quay.io/x/op\n"
                                            "- value: \"quay.io/x/etcd\"\n"
                                            "- quay.io/x/etcd-proxy quay.io/x/etcd:tag my.quay.io/x/etcd\n"
                                            "quay.io/x/etcd",
                                            &out, &n),
                         0);
        assert_string_equal(out, "image: r.io/op@sha256:bb\n"
                                 "- value: \"r.io/etcd@sha256:aa\"\n"
                                 "- quay.io/x/etcd-proxy quay.io/x/etcd:tag my.quay.io/x/etcd\n"
                                 "r.io/etcd@sha256:aa");
        assert_int_equal(n, 3);
        free(out);
        assert_int_equal(payload_substitute(refs, "", &out, &n), 0);
        assert_string_equal(out, "");
        assert_int_equal(n, 0);
        free(out);
        refs = payload_refs_free(refs);

        /* A tag the release gives no image: an error naming it. */
        assert_int_equal(payload_refs_parse(refs_text, images, 1, &refs, &err), -ENOENT);
        assert_non_null(strstr(err, "\"op\""));
        assert_null(refs);
        free(err);
        err = NULL;
        assert_int_equal(payload_refs_parse("kind: Pod\n", images, 2, &refs, &err), -EINVAL);
        free(err);
}

static void test_etcd_scripts_env(void **state)
{
        _cleanup_(env_list_done) EnvList env = {};
        _cleanup_free_ char *out = NULL;
        assert_int_equal(env_list_add(&env, "ZED", "%s", "z"), 0);
        assert_int_equal(env_list_add(&env, "ETCD_CIPHER_SUITES", "%s", "A,B"), 0);
        assert_int_equal(env_list_add(&env, "ODD", "%s", "a\"b$c`d\\e"), 0);
        assert_int_equal(etcd_scripts_env(&env, &out), 0);
        assert_string_equal(out, "export ETCD_CIPHER_SUITES=\"A,B\"\n"
                                 "export ODD=\"a\\\"b\\$c\\`d\\\\e\"\n"
                                 "export ZED=\"z\"\n");
        /* The shell reads the value back exactly. */
        _cleanup_free_ char *path = strdup_printf("%s/etcd.env", dir);
        assert_int_equal(write_file_atomic(path, out, strlen(out), 0644), 0);
        _cleanup_free_ char *cmd = strdup_printf(". %s && [ \"$ODD\" = 'a\"b$c`d\\e' ]", path);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(env_list_add(&env, "NOT-A-NAME", "%s", "x"), 0);
        out = mfree(out);
        assert_int_equal(etcd_scripts_env(&env, &out), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_inputs),          cmocka_unit_test(test_input_errors),
                cmocka_unit_test(test_bootstrap_ip),    cmocka_unit_test(test_template),
                cmocka_unit_test(test_staticpod),       cmocka_unit_test(test_render_tree),
                cmocka_unit_test(test_render_variants), cmocka_unit_test(test_installer_pod),
                cmocka_unit_test(test_etcd_defaults),   cmocka_unit_test(test_etcd_scripts_env),
                cmocka_unit_test(test_tls_profile),     cmocka_unit_test(test_payload_images),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
