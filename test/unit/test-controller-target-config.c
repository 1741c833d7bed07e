/* TargetConfigController as a table: nodes, etcd-endpoints and etcds/cluster
 * in, the rendered etcd-pod and restore-etcd-pod ConfigMaps out. The
 * three-master rendering is pinned by golden files under
 * test/data/controllers/ (UPDATE_GOLDEN=1 rewrites them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/yaml.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"
#include "controllers/facts.h"
#include "render/etcdenv.h"

/* The Intermediate TLS profile's suites as etcd takes them (openshift/api, library-go). */
#define INTERMEDIATE_SUITES                                                              \
        "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,"    \
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," \
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384," \
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"

static void endpoints(Fixture *f, const char *bootstrap_ip, const char *data)
{
        fixture_addf(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\"%s%s%s},\"data\":{%s}}",
                bootstrap_ip ? ",\"annotations\":{\"alpha.installer.openshift.io/etcd-bootstrap\":\"" : "",
                strempty(bootstrap_ip), bootstrap_ip ? "\"}" : "", data);
}

static Fixture *three_masters(void)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", true);
        fixture_master(f, "master-2", "10.0.0.3", true);
        endpoints(f, "10.0.0.10", "\"0000000000000002\":\"10.0.0.2\",\"0000000000000001\":\"10.0.0.1\"");
        fixture_etcd_cr(f, NULL, NULL);
        return f;
}

static const char *cm_key(Fixture *f, const char *cm, const char *key)
{
        const Intent *i = fixture_find(f, INTENT_APPLY, "configmaps", cm);
        if (!i)
                fail_msg("no apply of configmap %s in the plan", cm);
        cJSON *y = cJSON_GetObjectItemCaseSensitive(json_get_object(i->object, "data"), key);
        if (!cJSON_IsString(y))
                fail_msg("configmap %s has no key %s", cm, key);
        return y->valuestring;
}

static const char *pod_yaml(Fixture *f, const char *cm)
{
        return cm_key(f, cm, "pod.yaml");
}

static cJSON *parse_pod(const char *yaml)
{
        cJSON *pod = NULL;
        _cleanup_free_ char *err = NULL;
        if (yaml_parse(yaml, strlen(yaml), &pod, &err) < 0)
                fail_msg("rendered pod does not parse: %s", err);
        return pod;
}

static cJSON *container(cJSON *pod, const char *name)
{
        static const char *const lists[] = {"spec.initContainers", "spec.containers"};
        cJSON *c;
        for (size_t k = 0; k < ELEMENTSOF(lists); k++)
                JSON_ARRAY_FOREACH (c, json_get_array(pod, lists[k]))
                        if (streq_ptr(json_get_string(c, "name"), name))
                                return c;
        fail_msg("no container %s", name);
        return NULL;
}

static const char *env_of(cJSON *c, const char *name)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, json_get_array(c, "env"))
                if (streq_ptr(json_get_string(e, "name"), name))
                        return json_get_string(e, "value");
        return NULL;
}

static const char *script_of(cJSON *c)
{
        cJSON *cmd = json_get_array(c, "command");
        cJSON *last = cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1);
        assert_true(cJSON_IsString(last));
        return last->valuestring;
}

static void check_golden(const char *name, const char *got)
{
        const char *data = getenv("TEST_DATA");
        _cleanup_free_ char *path = NULL, *want = NULL;
        assert_non_null(data);
        path = strdup_printf("%s/controllers/%s", data, name);
        if (getenv("UPDATE_GOLDEN"))
                assert_int_equal(write_file_atomic(path, got, strlen(got), 0644), 0);
        assert_int_equal(read_full_file(path, 1 << 20, &want, NULL), 0);
        if (!streq(got, want))
                fail_msg("output differs from %s (UPDATE_GOLDEN=1 to accept):\n%s", path, got);
}

static void test_golden_three_masters(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 3);
        fixture_expect_condition(f, "TargetConfigNodeAddressDegraded", "False", "AsExpected");
        check_golden("etcd-pod-3-masters.yaml", pod_yaml(f, "etcd-pod"));
        check_golden("restore-etcd-pod-3-masters.yaml", pod_yaml(f, "restore-etcd-pod"));
        check_golden("quorum-restore-pod-3-masters.yaml",
                     cm_key(f, "restore-etcd-pod", "quorum-restore-pod.yaml"));
        check_golden("etcd-scripts-etcd.env", cm_key(f, "etcd-scripts", "etcd.env"));
        fixture_free(f);
}

/* etcd-pod and restore-etcd-pod carry upstream's keys forceRedeploymentReason (the spec's,
 * "" when none) and version (the operator's release, CEO_VERSION without one). */
static void test_pod_configmap_keys(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_string_equal(cm_key(f, "etcd-pod", "forceRedeploymentReason"), "");
        assert_string_equal(cm_key(f, "etcd-pod", "version"), CEO_VERSION);
        assert_string_equal(cm_key(f, "restore-etcd-pod", "version"), CEO_VERSION);
        fixture_etcd_cr(f, "\"forceRedeploymentReason\":\"rotate\"", NULL);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_string_equal(cm_key(f, "etcd-pod", "forceRedeploymentReason"), "rotate");
        assert_string_equal(cm_key(f, "restore-etcd-pod", "forceRedeploymentReason"), "rotate");
        fixture_free(f);
}

/* ConfigMap etcd-scripts: upstream's keys, marked scripts, and etcd.env as
 * `export NAME="value"` lines of the same variables the pods get. */
static void test_etcd_scripts(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        const char *envfile = cm_key(f, "etcd-scripts", "etcd.env");
        assert_non_null(strstr(envfile, "export NODE_master_1_IP=\"10.0.0.2\"\n"));
        assert_non_null(strstr(envfile, "export NODE_master_1_ETCD_NAME=\"master-1\"\n"));
        assert_non_null(strstr(envfile, "export ETCDCTL_CACERT=\""));
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        const cJSON *e;
        size_t n = 0;
        JSON_ARRAY_FOREACH (e, json_get_array(container(pod, "etcd"), "env")) {
                const char *name = json_get_string(e, "name");
                if (!name || streq(name, "ETCD_STATIC_POD_VERSION"))
                        continue; /* the container's own */
                _cleanup_free_ char *line = strdup_printf("export %s=\"", name);
                if (!strstr(envfile, line))
                        fail_msg("etcd.env lacks %s", name);
                n++;
        }
        assert_true(n > 10);
        static const char *const scripts[] = {"cluster-backup.sh", "cluster-restore.sh",
                                              "quorum-restore.sh", "disable-etcd.sh",
                                              "etcd-common-tools", "etcd-member-remove.sh"};
        for (size_t i = 0; i < ELEMENTSOF(scripts); i++) {
                const char *text = cm_key(f, "etcd-scripts", scripts[i]);
                assert_non_null(strstr(text, "### Created by cluster-etcd-operator. DO NOT edit.\n"));
        }
        fixture_free(f);
}

static void test_idempotent(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_CONFIGMAPS), 3);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        /* A node's new address is a new pod (and new etcd.env). */
        fixture_master(f, "master-2", "10.0.0.33", true);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 3);
        assert_non_null(
                strstr(cm_key(f, "etcd-scripts", "etcd.env"), "export NODE_master_2_IP=\"10.0.0.33\""));
        assert_non_null(strstr(pod_yaml(f, "etcd-pod"), "10.0.0.33"));
        fixture_free(f);
}

static void test_env_ipv4(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        cJSON *etcd = container(pod, "etcd");
        assert_string_equal(env_of(etcd, "NODE_master_0_IP"), "10.0.0.1");
        assert_string_equal(env_of(etcd, "NODE_master_1_ETCD_URL_HOST"), "10.0.0.2");
        assert_string_equal(env_of(etcd, "NODE_master_2_ETCD_NAME"), "master-2");
        assert_string_equal(env_of(etcd, "ALL_ETCD_ENDPOINTS"),
                            "https://10.0.0.10:2379,https://10.0.0.1:2379,https://10.0.0.2:2379");
        assert_string_equal(env_of(etcd, "ETCDCTL_ENDPOINTS"),
                            "https://10.0.0.1:2379,https://10.0.0.2:2379");
        assert_string_equal(env_of(etcd, "ETCD_HEARTBEAT_INTERVAL"), "100");
        assert_string_equal(env_of(etcd, "ETCD_ELECTION_TIMEOUT"), "1000");
        assert_string_equal(env_of(etcd, "ETCD_QUOTA_BACKEND_BYTES"), "8589934592");
        assert_string_equal(env_of(etcd, "ETCD_EXPERIMENTAL_MAX_LEARNERS"), "3");
        assert_string_equal(env_of(etcd, "ETCD_INITIAL_CLUSTER_STATE"), "existing");
        assert_string_equal(env_of(etcd, "ETCD_DATA_DIR"), "/var/lib/etcd");
        assert_string_equal(env_of(etcd, "ETCD_IMAGE"), "quay.io/openshift/etcd@sha256:0123");
        assert_string_equal(env_of(etcd, "ETCD_TLS_MIN_VERSION"), "TLS1.2");
        /* No APIServer: the Intermediate profile, as the bootstrap member's. */
        assert_string_equal(env_of(etcd, "ETCD_CIPHER_SUITES"), INTERMEDIATE_SUITES);
        /* Upstream's fixed set. */
        assert_string_equal(env_of(etcd, "ETCD_ENABLE_PPROF"), "true");
        assert_string_equal(env_of(etcd, "ETCD_SOCKET_REUSE_ADDRESS"), "true");
        assert_string_equal(env_of(etcd, "ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION"), "200ms");
        assert_string_equal(env_of(etcd, "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL"), "5s");
        assert_non_null(strstr(env_of(etcd, "ETCDCTL_CERT"), "etcd-peer-NODE_NAME.crt"));
        assert_null(env_of(etcd, "ETCD_UNSUPPORTED_ARCH")); /* x86_64: supported */
        /* Sorted generated variables first, then the container's own. */
        cJSON *env = json_get_array(etcd, "env"), *e, *prev = NULL;
        JSON_ARRAY_FOREACH (e, env) {
                if (streq(json_get_string(e, "name"), "ETCD_STATIC_POD_VERSION")) {
                        assert_null(e->next);
                        break;
                }
                if (prev)
                        assert_true(strcmp(json_get_string(prev, "name"), json_get_string(e, "name")) < 0);
                prev = e;
        }
        /* Containers without an env list get none; the others all get the set. */
        assert_null(json_get(container(pod, "setup"), "env"));
        assert_null(json_get(container(pod, "etcd-resources-copy"), "env"));
        static const char *const with_env[] = {"etcd-ensure-env-vars", "etcdctl", "etcd-metrics",
                                               "etcd-readyz", "etcd-rev"};
        for (size_t i = 0; i < ELEMENTSOF(with_env); i++)
                assert_string_equal(env_of(container(pod, with_env[i]), "NODE_master_1_IP"), "10.0.0.2");
        /* Default listen mode: all addresses for listeners, loopback for local connections. */
        const char *script = script_of(etcd);
        assert_non_null(strstr(script, "--listen-client-urls=https://0.0.0.0:2379"));
        /* etcd 3.5's layout: gRPC alone on 2379, HTTP (the gateway our clients use) on TLS 2381,
         * and a plain metrics listener on loopback only for the grpc-proxy. */
        assert_non_null(strstr(script, "--listen-client-http-urls=https://0.0.0.0:2381"));
        assert_non_null(strstr(script, "--listen-metrics-urls=https://0.0.0.0:9978,http://127.0.0.1:9976"));
        assert_non_null(
                strstr(script_of(container(pod, "etcd-metrics")), "--endpoints=http://127.0.0.1:9976"));
        assert_non_null(strstr(
                script, "--initial-advertise-peer-urls=https://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:2380"));
        assert_non_null(strstr(script_of(container(pod, "etcd-readyz")), "--target=https://127.0.0.1:2379"));
        assert_non_null(strstr(script_of(container(pod, "etcd-readyz")), "--listen-address=0.0.0.0 "));
        assert_non_null(strstr(script_of(container(pod, "etcd-metrics")), "--listen-addr=127.0.0.1:9977"));
        fixture_free(f);
}

/* On arm64 and s390x etcd 3.5 runs only when told its architecture: upstream sets
 * ETCD_UNSUPPORTED_ARCH from the operator's, and so does this operator. */
static void test_unsupported_arch(void **state)
{
        (void) state;
        Fixture *f = three_masters();
        f->state.machine = "aarch64";
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        assert_string_equal(env_of(container(pod, "etcd"), "ETCD_UNSUPPORTED_ARCH"), "arm64");
        assert_string_equal(env_of(container(pod, "etcdctl"), "ETCD_UNSUPPORTED_ARCH"), "arm64");
        fixture_free(f);
}

/* The etcd minor the image carries names the settings 3.6 renamed, one name each (the other
 * minor would warn about the other name), and spells the corruption check its way. */
static void test_etcd_minor(void **state)
{
        (void) state;
        static const struct {
                EtcdMinor minor;
                const char *set[3], *unset[3], *flag, *not_flag;
        } cases[] = {
                {0,
                 {"ETCD_EXPERIMENTAL_MAX_LEARNERS", "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL",
                  "ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION"},
                 {"ETCD_MAX_LEARNERS", "ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL", "ETCD_WARNING_APPLY_DURATION"},
                 "--experimental-initial-corrupt-check=true",
                 "--feature-gates"},
                {ETCD_MINOR_3_6,
                 {"ETCD_MAX_LEARNERS", "ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL", "ETCD_WARNING_APPLY_DURATION"},
                 {"ETCD_EXPERIMENTAL_MAX_LEARNERS", "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL",
                  "ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION"},
                 "--feature-gates=InitialCorruptCheck=true",
                 "--experimental-initial-corrupt-check"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture *f = three_masters();
                f->state.etcd_minor = cases[i].minor;
                assert_int_equal(fixture_sync(f, &controller_target_config), 0);
                _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
                cJSON *etcd = container(pod, "etcd");
                for (size_t k = 0; k < 3; k++) {
                        assert_non_null(env_of(etcd, cases[i].set[k]));
                        assert_null(env_of(etcd, cases[i].unset[k]));
                }
                assert_string_equal(env_of(etcd, cases[i].set[0]), "3");
                assert_non_null(strstr(script_of(etcd), cases[i].flag));
                assert_null(strstr(script_of(etcd), cases[i].not_flag));
                /* Upstream's --snapshot-count on 3.5 only (3.6's default, deprecated there). */
                assert_true(!strstr(script_of(etcd), "--snapshot-count=10000") ==
                            (cases[i].minor == ETCD_MINOR_3_6));
                /* The metrics proxy's TLS floor where its grpc-proxy has the flag. */
                assert_true(!strstr(script_of(container(pod, "etcd-metrics")),
                                    "--tls-min-version=\"$ETCD_TLS_MIN_VERSION\"") ==
                            (cases[i].minor != ETCD_MINOR_3_6));
                /* The setup container holds the image to the same minor. */
                const char *setup = script_of(container(pod, "setup"));
                assert_non_null(strstr(setup, cases[i].minor == ETCD_MINOR_3_6 ? "\n3.6.*)" : "\n3.5.*)"));
                fixture_free(f);
        }
        /* The version texts the payload may give, and those refused with the reason. */
        EtcdMinor m = 0;
        char why[200];
        assert_int_equal(etcd_minor_parse("3.6.16", &m), 0);
        assert_int_equal(m, ETCD_MINOR_3_6);
        assert_int_equal(etcd_minor_parse("3.5", &m), 0);
        assert_int_equal(m, ETCD_MINOR_3_5);
        assert_int_equal(etcd_minor_parse_why("3.7.0", &m, why, sizeof why), -EOPNOTSUPP);
        assert_non_null(strstr(why, "etcd 3.7.0 is not a release this operator renders for"));
        assert_int_equal(etcd_minor_parse_why("v3.6", &m, why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "\"v3.6\" is no etcd release"));
        static const char *const bad[] = {"", "3", "3.", "3.6.", "3.6.x", "3.6 ", "4.6", "3.05x"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(etcd_minor_parse(bad[i], &m), -EINVAL);
        assert_int_equal(m, ETCD_MINOR_3_5);
        assert_int_equal(etcd_version_minor("3.6.0"), 6);
        assert_int_equal(etcd_version_minor("3.10.1"), 10);
        assert_int_equal(etcd_version_minor("not"), -1);
}

static void member_versions(Fixture *f, uint64_t id, const char *version, const char *storage,
                            const char *downgrade_target)
{
        EtcdMemberState *m = (EtcdMemberState *) etcd_view_find(f->snap, id);
        assert_non_null(m);
        (void) snprintf(m->status.version, sizeof m->status.version, "%s", version);
        (void) snprintf(m->status.storage_version, sizeof m->status.storage_version, "%s", storage);
        m->status.downgrade_enabled = downgrade_target != NULL;
        (void) snprintf(m->status.downgrade_target, sizeof m->status.downgrade_target, "%s",
                        strempty(downgrade_target));
}

/* A release rolling back to etcd 3.5 from members on 3.6: etcd-pod waits until etcd's
 * downgrade is enabled (EtcdDowngradeController, once every member is a healthy voter) and
 * every member's storage reached 3.5; a rollback in the middle of an upgrade (some members
 * still on 3.5) needs none; a downgrade enabled to another minor than the image's is
 * cancelled; with no member status an image change waits. */
static void test_etcd_downgrade(void **state)
{
        (void) state;
        Fixture *f = three_masters();
        for (uint64_t id = 1; id <= 3; id++) {
                char name[16], ip[16];
                (void) snprintf(name, sizeof name, "master-%u", (unsigned) id - 1);
                (void) snprintf(ip, sizeof ip, "10.0.0.%u", (unsigned) id);
                fixture_member(f, id, name, ip, false, true, true);
                member_versions(f, id, "3.6.16", "3.6.0", NULL);
        }
        f->state.etcd_minor = ETCD_MINOR_3_5;
        char why[512];
        assert_int_equal(etcd_downgrade_state(f->snap, ETCD_MINOR_3_5, why, sizeof why),
                         ETCD_DOWNGRADE_NEEDED);
        assert_string_equal(why, "master-0 3.6.16 storage 3.6.0, master-1 3.6.16 storage 3.6.0, master-2 "
                                 "3.6.16 storage 3.6.0");

        /* Needed: nothing rendered; the downgrade is enabled to 3.5. */
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));
        assert_string_equal(f->plan.waiting_reason, "TargetConfigWaitingForDowngrade");
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 1);
        const Intent *i = &f->plan.intents[0];
        for (size_t k = 0; k < f->plan.n; k++)
                if (f->plan.intents[k].type == INTENT_ETCD_DOWNGRADE)
                        i = &f->plan.intents[k];
        assert_string_equal(i->action, "ENABLE");
        assert_string_equal(i->version, "3.5");

        /* ... but not while a member is unhealthy. */
        fixture_member_set(f, 2, false, false);
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 0);
        assert_non_null(strstr(f->plan.waiting, "once every member is a healthy voter"));
        fixture_member_set(f, 2, false, true);

        /* Enabled, one member's storage still 3.6: both wait. */
        for (uint64_t id = 1; id <= 3; id++)
                member_versions(f, id, "3.6.16", id == 3 ? "3.6.0" : "3.5.0", "3.5.0");
        assert_int_equal(etcd_downgrade_state(f->snap, ETCD_MINOR_3_5, NULL, 0), ETCD_DOWNGRADE_MIGRATING);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 0);
        assert_non_null(strstr(f->plan.waiting, "waiting for every member's storage"));

        /* Every storage at 3.5: the 3.5 pod is rendered. */
        member_versions(f, 3, "3.6.16", "3.5.0", "3.5.0");
        assert_int_equal(etcd_downgrade_state(f->snap, ETCD_MINOR_3_5, NULL, 0), ETCD_DOWNGRADE_READY);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_non_null(strstr(pod_yaml(f, "etcd-pod"), "--experimental-initial-corrupt-check=true"));
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 0);

        /* The release rolls forward again (3.6) before the downgrade ended: it is cancelled. */
        f->state.etcd_minor = ETCD_MINOR_3_6;
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 1);
        for (size_t k = 0; k < f->plan.n; k++)
                if (f->plan.intents[k].type == INTENT_ETCD_DOWNGRADE)
                        assert_string_equal(f->plan.intents[k].action, "CANCEL");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_non_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));

        /* Rolled back in the middle of an upgrade: a member still runs 3.5, no downgrade. */
        f->state.etcd_minor = ETCD_MINOR_3_5;
        member_versions(f, 1, "3.5.16", "", NULL);
        member_versions(f, 2, "3.6.16", "3.6.0", NULL);
        member_versions(f, 3, "3.6.16", "3.6.0", NULL);
        assert_int_equal(etcd_downgrade_state(f->snap, ETCD_MINOR_3_5, NULL, 0), ETCD_DOWNGRADE_NONE);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_non_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));
        assert_int_equal(fixture_sync(f, &controller_etcd_downgrade), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_DOWNGRADE), 0);
        fixture_free(f);

        /* No member status: an etcd-pod of another image is kept until one answers; the same
         * image is rendered (a master's address changed, say). */
        f = three_masters();
        fixture_no_etcd(f);
        fixture_add(f, W_ETCD_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-pod\","
                    "\"namespace\":\"openshift-etcd\"},\"data\":{\"pod.yaml\":\"image: quay.io/openshift/"
                    "etcd@sha256:older\"}}");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));
        assert_string_equal(f->plan.waiting_reason, "TargetConfigWaitingForEtcd");
        f->state.etcd_image = "quay.io/openshift/etcd@sha256:older";
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_non_null(fixture_find(f, INTENT_APPLY, "configmaps", "etcd-pod"));
        fixture_free(f);
}

static void test_env_ipv6_and_dual_stack(void **state)
{
        Fixture *f = fixture_new();
        fixture_add(f, W_NETWORKS,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Network\",\"metadata\":{\"name\":"
                    "\"cluster\"},\"spec\":{\"serviceNetwork\":[\"fd02::/112\",\"172.30.0.0/16\"]}}");
        fixture_master(f, "master-0", "fd00::1", true);
        /* Dual stack: the IPv4 address comes first, the IPv6 one is preferred. */
        fixture_add(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-1\",\"labels\":"
                "{\"node-role.kubernetes.io/"
                "master\":\"\"}},\"status\":{\"addresses\":[{\"type\":\"InternalIP\","
                "\"address\":\"10.0.0.2\"},{\"type\":\"InternalIP\",\"address\":\"fd00:0:0::2\"}]}}");
        endpoints(f, "fd00::10", "\"1\":\"fd00::1\"");
        fixture_etcd_cr(f, NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        cJSON *etcd = container(pod, "etcd");
        assert_string_equal(env_of(etcd, "NODE_master_0_IP"), "[fd00::1]");
        assert_string_equal(env_of(etcd, "NODE_master_0_ETCD_URL_HOST"), "[fd00::1]");
        assert_string_equal(env_of(etcd, "NODE_master_1_IP"), "[fd00::2]");
        assert_string_equal(env_of(etcd, "NODE_master_1_ETCD_URL_HOST"), "[fd00::2]");
        assert_string_equal(env_of(etcd, "ALL_ETCD_ENDPOINTS"),
                            "https://[fd00::10]:2379,https://[fd00::1]:2379");
        assert_string_equal(env_of(etcd, "ETCDCTL_ENDPOINTS"), "https://[fd00::1]:2379");
        assert_string_equal(env_of(etcd, "ETCD_EXPERIMENTAL_MAX_LEARNERS"), "2");
        assert_non_null(strstr(script_of(etcd), "--listen-peer-urls=https://[::]:2380"));
        assert_non_null(strstr(script_of(container(pod, "etcd-readyz")), "--target=https://[::1]:2379"));
        assert_non_null(strstr(script_of(container(pod, "etcd-readyz")), "--listen-address=:: "));
        fixture_free(f);
}

static int64_t int_at(const cJSON *o, const char *path)
{
        int64_t v = -1;
        assert_true(json_get_int64(o, path, &v) >= 0);
        return v;
}

static void test_slower_and_quota(void **state)
{
        Fixture *f = three_masters();
        fixture_etcd_cr(f, "\"controlPlaneHardwareSpeed\":\"Slower\",\"backendQuotaGiB\":16", NULL);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        cJSON *etcd = container(pod, "etcd");
        assert_string_equal(env_of(etcd, "ETCD_HEARTBEAT_INTERVAL"), "500");
        assert_string_equal(env_of(etcd, "ETCD_ELECTION_TIMEOUT"), "2500");
        assert_string_equal(env_of(etcd, "ETCD_QUOTA_BACKEND_BYTES"), "17179869184");
        /* The probes give a database twice the default twice the time (as upstream's). */
        assert_int_equal(int_at(etcd, "livenessProbe.failureThreshold"), 40);
        assert_int_equal(int_at(etcd, "startupProbe.failureThreshold"), 60);
        assert_int_equal(int_at(etcd, "startupProbe.initialDelaySeconds"), 30);
        assert_int_equal(int_at(etcd, "readinessProbe.timeoutSeconds"), 30);
        /* The restore pod carries the same settings. */
        _cleanup_(cJSON_Deletep) cJSON *restore = parse_pod(pod_yaml(f, "restore-etcd-pod"));
        assert_string_equal(env_of(container(restore, "etcd"), "ETCD_ELECTION_TIMEOUT"), "2500");
        fixture_free(f);
}

/* Without controlPlaneHardwareSpeed, the platform decides as upstream's: Azure and IBM Cloud
 * VPC are Slower; an explicit Standard wins over the platform. */
static void test_platform_hardware_speed(void **state)
{
        static const struct {
                const char *platform_status, *speed, *heartbeat;
        } cases[] = {
                {"{\"type\":\"Azure\",\"azure\":{}}", NULL, "500"},
                {"{\"type\":\"IBMCloud\",\"ibmcloud\":{\"providerType\":\"VPC\"}}", NULL, "500"},
                {"{\"type\":\"IBMCloud\",\"ibmcloud\":{\"providerType\":\"Classic\"}}", NULL, "100"},
                {"{\"type\":\"AWS\",\"aws\":{\"region\":\"us-east-1\"}}", NULL, "100"},
                {"{\"type\":\"Azure\",\"azure\":{}}", "Standard", "100"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture *f = three_masters();
                fixture_addf(f, W_INFRASTRUCTURES,
                             "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\","
                             "\"metadata\":{\"name\":\"cluster\"},\"status\":{\"platformStatus\":%s}}",
                             cases[i].platform_status);
                if (cases[i].speed) {
                        _cleanup_free_ char *spec =
                                strdup_printf("\"controlPlaneHardwareSpeed\":\"%s\"", cases[i].speed);
                        fixture_etcd_cr(f, spec, NULL);
                }
                assert_int_equal(fixture_sync(f, &controller_target_config), 0);
                _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
                if (!streq(env_of(container(pod, "etcd"), "ETCD_HEARTBEAT_INTERVAL"), cases[i].heartbeat))
                        fail_msg("case %zu: heartbeat %s, want %s", i,
                                 env_of(container(pod, "etcd"), "ETCD_HEARTBEAT_INTERVAL"),
                                 cases[i].heartbeat);
                fixture_free(f);
        }
}

static void apiserver_profile(Fixture *f, const char *profile)
{
        fixture_addf(f, W_APISERVERS,
                     "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"APIServer\",\"metadata\":"
                     "{\"name\":\"cluster\"},\"spec\":{\"tlsSecurityProfile\":%s}}",
                     profile);
}

/* The APIServer's TLS security profile gives etcd's suites and minimum version, in every
 * pod that runs etcd and in the nodes' etcd.env; one etcd cannot use changes nothing. */
static void test_tls_security_profile(void **state)
{
        Fixture *f = three_masters();
        apiserver_profile(
                f, "{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS12\","
                   "\"ciphers\":[\"ECDHE-RSA-AES256-GCM-SHA384\",\"ECDHE-ECDSA-AES128-GCM-SHA256\"]}}");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        fixture_expect_condition(f, "TargetConfigTLSProfileDegraded", "False", "AsExpected");
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        const char *want = "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
        assert_string_equal(env_of(container(pod, "etcd"), "ETCD_CIPHER_SUITES"), want);
        assert_string_equal(env_of(container(pod, "etcd"), "ETCD_TLS_MIN_VERSION"), "TLS1.2");
        _cleanup_(cJSON_Deletep) cJSON *restore = parse_pod(pod_yaml(f, "restore-etcd-pod"));
        assert_string_equal(env_of(container(restore, "etcd"), "ETCD_CIPHER_SUITES"), want);
        assert_non_null(strstr(cm_key(f, "etcd-scripts", "etcd.env"), want));
        fixture_free(f);

        /* Modern: TLS 1.3 and no suite list, which etcd 3.5+ would refuse. */
        f = three_masters();
        apiserver_profile(f, "{\"type\":\"Modern\",\"modern\":{}}");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *modern = parse_pod(pod_yaml(f, "etcd-pod"));
        assert_null(env_of(container(modern, "etcd"), "ETCD_CIPHER_SUITES"));
        assert_string_equal(env_of(container(modern, "etcd"), "ETCD_TLS_MIN_VERSION"), "TLS1.3");
        assert_non_null(
                strstr(fixture_condition(f, "TargetConfigTLSProfileDegraded")->cond_message, "Modern"));
        fixture_free(f);

        /* Unusable: no write at all, and the condition names the field and the fix. */
        f = three_masters();
        apiserver_profile(f, "{\"type\":\"Custom\",\"custom\":{\"minTLSVersion\":\"VersionTLS12\","
                             "\"ciphers\":[\"DHE-RSA-AES128-GCM-SHA256\"]}}");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        fixture_expect_condition(f, "TargetConfigTLSProfileDegraded", "True", "UnusableTLSSecurityProfile");
        const char *msg = fixture_condition(f, "TargetConfigTLSProfileDegraded")->cond_message;
        assert_non_null(strstr(msg, "spec.tlsSecurityProfile.custom.ciphers"));
        assert_non_null(strstr(msg, "ECDHE-RSA-AES128-GCM-SHA256"));
        fixture_free(f);
}

/* etcd's log level follows spec.logLevel as upstream maps it; Normal (and unset) is info. */
static void test_log_level(void **state)
{
        static const char *const cases[][2] = {
                {"Normal", "info"}, {"Debug", "debug"}, {"Trace", "debug"}, {"TraceAll", "debug"}};
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture *f = three_masters();
                _cleanup_free_ char *spec = strdup_printf("\"logLevel\":\"%s\"", cases[i][0]);
                _cleanup_free_ char *want = strdup_printf("--log-level=%s ", cases[i][1]);
                fixture_etcd_cr(f, spec, NULL);
                assert_int_equal(fixture_sync(f, &controller_target_config), 0);
                assert_non_null(strstr(pod_yaml(f, "etcd-pod"), want));
                assert_non_null(strstr(pod_yaml(f, "restore-etcd-pod"), want));
                fixture_free(f);
        }
}

static void test_node_without_ip(void **state)
{
        Fixture *f = three_masters();
        fixture_add(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-3\",\"labels\":"
                "{\"node-role.kubernetes.io/"
                "master\":\"\"}},\"status\":{\"addresses\":[{\"type\":\"Hostname\","
                "\"address\":\"master-3\"}]}}");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        fixture_expect_condition(f, "TargetConfigNodeAddressDegraded", "True", "NodeWithoutInternalIP");
        assert_non_null(
                strstr(fixture_condition(f, "TargetConfigNodeAddressDegraded")->cond_message, "master-3"));
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        cJSON *etcd = container(pod, "etcd");
        assert_null(env_of(etcd, "NODE_master_3_IP"));
        assert_null(env_of(etcd, "NODE_master_3_ETCD_NAME"));
        assert_string_equal(env_of(etcd, "NODE_master_2_IP"), "10.0.0.3");
        assert_string_equal(env_of(etcd, "ETCD_EXPERIMENTAL_MAX_LEARNERS"),
                            "4"); /* control-plane replicas */
        fixture_free(f);
}

static void test_listen_on_node_ip(void **state)
{
        Fixture *f = three_masters();
        fixture_etcd_cr(f, "\"unsupportedConfigOverrides\":{\"listenOnNodeIP\":true}", NULL);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        const char *script = script_of(container(pod, "etcd"));
        assert_non_null(
                strstr(script, "--listen-client-urls=https://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:2379"));
        assert_non_null(strstr(
                script, "--listen-client-http-urls=https://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:2381"));
        assert_non_null(strstr(script, "http://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:9976"));
        assert_null(strstr(script, "//0.0.0.0"));
        assert_null(strstr(pod_yaml(f, "etcd-pod"), "127.0.0.1:"));
        const char *readyz = script_of(container(pod, "etcd-readyz"));
        assert_non_null(strstr(readyz, "--target=https://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:2379"));
        assert_non_null(strstr(readyz, "--listen-address=$NODE_NODE_ENVVAR_NAME_IP "));
        assert_non_null(strstr(script_of(container(pod, "etcd-metrics")),
                               "--metrics-addr=https://$NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST:9979"));
        /* The harness default can also come from the operator's state. */
        fixture_etcd_cr(f, NULL, NULL);
        f->state.listen_on_node_ip = true;
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_null(strstr(pod_yaml(f, "etcd-pod"), "//0.0.0.0"));
        fixture_free(f);
}

/* What the installer will do with the bytes on master-1, revision 3. */
static char *substitute(const char *in)
{
        static const char *const from[] = {"REVISION", "NODE_ENVVAR_NAME", "NODE_NAME"};
        static const char *const to[] = {"3", "master_1", "master-1"};
        Buf b = BUF_INIT(0);
        for (const char *p = in; *p;) {
                size_t k = 0;
                while (k < ELEMENTSOF(from) && !startswith(p, from[k]))
                        k++;
                if (k < ELEMENTSOF(from)) {
                        assert_int_equal(buf_append(&b, to[k], strlen(to[k])), 0);
                        p += strlen(from[k]);
                } else
                        assert_int_equal(buf_append(&b, p++, 1), 0);
        }
        return buf_steal(&b);
}

/* Every shell script parses (sh -n) as the node will run it. */
static void check_scripts(cJSON *pod)
{
        static const char *const lists[] = {"spec.initContainers", "spec.containers"};
        cJSON *c;
        for (size_t k = 0; k < ELEMENTSOF(lists); k++)
                JSON_ARRAY_FOREACH (c, json_get_array(pod, lists[k])) {
                        const char *script = script_of(c);
                        FILE *sh = popen("sh -n", "w");
                        assert_non_null(sh);
                        assert_true(fputs(script, sh) >= 0);
                        int status = pclose(sh);
                        if (status != 0)
                                fail_msg("container %s: sh -n rejects its script:\n%s",
                                         json_get_string(c, "name"), script);
                }
}

static void test_installer_substitution(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        static const char *const cms[] = {"etcd-pod", "restore-etcd-pod"};
        for (size_t i = 0; i < ELEMENTSOF(cms); i++) {
                _cleanup_free_ char *text = substitute(pod_yaml(f, cms[i]));
                _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(text);
                assert_string_equal(json_get_string(pod, "metadata.labels.revision"), "3");
                assert_string_equal(json_get_string(pod, "metadata.name"), "etcd");
                cJSON *etcd = container(pod, "etcd");
                assert_string_equal(env_of(etcd, "ETCD_STATIC_POD_VERSION"), "3");
                const char *script = script_of(etcd);
                assert_non_null(strstr(script, "etcd-serving-master-1.crt"));
                assert_non_null(strstr(script, "$NODE_master_1_ETCD_URL_HOST:2379"));
                assert_null(strstr(text, "${"));
                check_scripts(pod);
        }
        _cleanup_free_ char *text = substitute(pod_yaml(f, "etcd-pod"));
        assert_non_null(strstr(text, "/etc/kubernetes/static-pod-resources/etcd-pod-3\n"));
        assert_non_null(strstr(text, "ensure-env --node-name=master-1"));
        fixture_free(f);
}

static void test_waits_for_endpoints(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_etcd_cr(f, NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(f->plan.n, 0);
        assert_true(f->plan.requeue_after > 0);
        /* Present but empty: still nothing for discover to talk to. */
        endpoints(f, NULL, "");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        /* Only the bootstrap member: etcdctl talks to it until a master is published. */
        endpoints(f, "10.0.0.10", "");
        assert_int_equal(fixture_sync(f, &controller_target_config), 0);
        _cleanup_(cJSON_Deletep) cJSON *pod = parse_pod(pod_yaml(f, "etcd-pod"));
        assert_string_equal(env_of(container(pod, "etcdctl"), "ETCDCTL_ENDPOINTS"),
                            "https://10.0.0.10:2379");
        fixture_free(f);
}

static void test_bad_image(void **state)
{
        Fixture *f = three_masters();
        f->state.etcd_image = "not an image";
        assert_true(fixture_sync(f, &controller_target_config) < 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_golden_three_masters),
                cmocka_unit_test(test_etcd_scripts),
                cmocka_unit_test(test_pod_configmap_keys),
                cmocka_unit_test(test_idempotent),
                cmocka_unit_test(test_env_ipv4),
                cmocka_unit_test(test_unsupported_arch),
                cmocka_unit_test(test_etcd_minor),
                cmocka_unit_test(test_etcd_downgrade),
                cmocka_unit_test(test_env_ipv6_and_dual_stack),
                cmocka_unit_test(test_slower_and_quota),
                cmocka_unit_test(test_log_level),
                cmocka_unit_test(test_platform_hardware_speed),
                cmocka_unit_test(test_tls_security_profile),
                cmocka_unit_test(test_node_without_ip),
                cmocka_unit_test(test_listen_on_node_ip),
                cmocka_unit_test(test_installer_substitution),
                cmocka_unit_test(test_waits_for_endpoints),
                cmocka_unit_test(test_bad_image),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
