/* The cluster facts (controllers/facts.h) and the quorum queries of the
 * etcd view, on fixture caches: every definition a controller relies on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/facts.h"
#include "pki/pki.h"
#include "process/etcd-wiring.h"

static SyncContext ctx_of(Fixture *f)
{
        return (SyncContext){
                .key = "key", .now = f->now, .informers = f->factory, .etcd = f->snap, .state = &f->state};
}

static void endpoints_annotation(Fixture *f, const char *ip)
{
        fixture_addf(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\",\"annotations\":{\"alpha.installer.openshift.io/"
                "etcd-bootstrap\":\"%s\"}},\"data\":{}}",
                ip);
}

static void bootstrap_cm(Fixture *f, const char *status)
{
        fixture_addf(f, W_KUBE_SYSTEM_CONFIGMAPS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                     "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"%s\"}}",
                     status);
}

/* ---- nodes and members ---- */

static void test_ready(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", false);
        assert_true(node_is_ready(fixture_get(f, W_MASTER_NODES, NULL, "master-0")));
        assert_false(node_is_ready(fixture_get(f, W_MASTER_NODES, NULL, "master-1")));
        assert_false(pod_is_ready(NULL));
        fixture_etcd_pod(f, "master-0", 2, true);
        fixture_etcd_pod(f, "master-1", 2, false);
        SyncContext ctx = ctx_of(f);
        assert_true(pod_is_ready(etcd_pod_of_node(&ctx, "master-0")));
        assert_false(pod_is_ready(etcd_pod_of_node(&ctx, "master-1")));
        assert_null(etcd_pod_of_node(&ctx, "master-9"));
        fixture_free(f);
}

static void test_peer_urls(void **state)
{
        char url[128];
        IpAddr a, b;
        assert_int_equal(etcd_peer_url_for_ip("10.0.0.1", url, sizeof url), 0);
        assert_string_equal(url, "https://10.0.0.1:2380");
        assert_int_equal(etcd_peer_url_for_ip("fd00:0:0::1", url, sizeof url), 0);
        assert_string_equal(url, "https://[fd00::1]:2380");
        assert_int_equal(etcd_peer_url_for_ip("master-0", url, sizeof url), -EINVAL);
        assert_int_equal(etcd_peer_url_for_ip(NULL, url, sizeof url), -EINVAL);
        assert_int_equal(etcd_peer_url_for_ip("10.0.0.1", url, 10), -ENOBUFS);

        assert_int_equal(url_host_ip("https://[FD00::1]:2380", &a), 0);
        assert_int_equal(ip_parse("fd00:0::1", &b), 0);
        assert_true(ip_equal(&a, &b));
        assert_int_equal(url_host_ip("https://10.0.0.7:2380", &a), 0);
        assert_int_equal(url_host_ip("https://etcd.example.com:2380", &a), -EINVAL);
        assert_int_equal(url_host_ip("10.0.0.7:2380", &a), -EINVAL);
        assert_int_equal(url_host_ip("https://[fd00::1:2380", &a), -EINVAL);
        assert_true(ip_text_equal("fd00::1", "FD00:0:0::1"));
        assert_false(ip_text_equal("10.0.0.1", "10.0.0.10"));
        assert_false(ip_text_equal("master-0", "master-0"));
        char buf[INET6_ADDRSTRLEN];
        assert_string_equal(ip_unbracket("[fd00::1]", buf, sizeof buf), "fd00::1");
        assert_string_equal(ip_unbracket("10.0.0.1", buf, sizeof buf), "10.0.0.1");
        assert_string_equal(ip_unbracket("[fd00::1", buf, sizeof buf), "[fd00::1");
        assert_null(ip_unbracket("[fd00::1]", buf, 7)); /* does not fit */
        assert_null(ip_unbracket(NULL, buf, sizeof buf));
}

static void test_member_of_node(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "fd00:0::2", true);
        fixture_master(f, "master-2", "10.0.0.3", true);
        fixture_master(f, "master-3", "10.0.0.4", true);
        /* master-0 by name (its IP changed); master-1 by canonical IPv6, unstarted; master-2 none;
         * master-3's IP is only a prefix of 10.0.0.40's. */
        fixture_member(f, 1, "master-0", "10.0.0.99", false, true, true);
        fixture_member(f, 2, NULL, "fd00::2", true, false, false);
        fixture_member(f, 4, "other", "10.0.0.40", false, true, true);
        const EtcdViewSnapshot *s = f->snap;
        const EtcdMemberState *m = member_of_node(s, fixture_get(f, W_MASTER_NODES, NULL, "master-0"));
        assert_non_null(m);
        assert_int_equal(m->id, 1);
        m = member_of_node(s, fixture_get(f, W_MASTER_NODES, NULL, "master-1"));
        assert_non_null(m);
        assert_int_equal(m->id, 2);
        assert_null(member_of_node(s, fixture_get(f, W_MASTER_NODES, NULL, "master-2")));
        assert_null(member_of_node(s, fixture_get(f, W_MASTER_NODES, NULL, "master-3")));
        fixture_free(f);
}

static void test_node_certified_ip(void **state)
{
        Fixture *f = fixture_new();
        char ip[64];
        fixture_master(f, "master-0", "10.0.1.1", true);
        fixture_master(f, "master-1", "10.0.1.2", true);
        const KubeObject *m0 = fixture_get(f, W_MASTER_NODES, NULL, "master-0");
        const KubeObject *m1 = fixture_get(f, W_MASTER_NODES, NULL, "master-1");
        const char *old[] = {"127.0.0.1", "::1", "10.0.0.1", NULL},
                   *moved[] = {"127.0.0.1", "10.0.1.1", NULL}, *loop_only[] = {"127.0.0.1", "::1", NULL};
        fixture_all_certs(f, "master-0", "etcd-all-certs-3", old);
        fixture_all_certs(f, "master-0", "etcd-all-certs-4", moved);
        fixture_all_certs(f, "master-0", "etcd-all-certs-5", loop_only);
        const KubeObject *s3 = fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-3");
        const KubeObject *s4 = fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-4");
        const KubeObject *s5 = fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-5");

        /* The revision it runs names its old address, past the local ones. */
        assert_int_equal(node_certified_ip(s3, m0, ip, sizeof ip), 1);
        assert_string_equal(ip, "10.0.0.1");
        assert_int_equal(node_certified_ip(s3, m0, ip, 4), -ENOBUFS);
        /* Addresses in 127.0.0.0/8 other than 127.0.0.1 are a node's like any other (the test
         * harness's masters have them). */
        const char *harness[] = {"127.0.0.1", "127.5.0.1", NULL};
        fixture_all_certs(f, "master-0", "etcd-all-certs-6", harness);
        assert_int_equal(
                node_certified_ip(fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs-6"), m0,
                                  ip, sizeof ip),
                1);
        assert_string_equal(ip, "127.5.0.1");
        /* The certificate for the new address: nothing to alias; nor for loopback only. */
        assert_int_equal(node_certified_ip(s4, m0, ip, sizeof ip), 0);
        assert_int_equal(node_certified_ip(s5, m0, ip, sizeof ip), 0);
        /* No certificate for master-1 in it; none at all. */
        assert_int_equal(node_certified_ip(s3, m1, ip, sizeof ip), -ENOENT);
        assert_int_equal(node_certified_ip(NULL, m0, ip, sizeof ip), -ENOENT);
        assert_int_equal(node_certified_ip(s3, NULL, ip, sizeof ip), -EINVAL);

        /* The current revision a node runs, as nodeStatuses say. */
        fixture_etcd_cr(f, NULL,
                        "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\"}]");
        const KubeObject *cr = fixture_get(f, W_ETCD_CR, NULL, "cluster");
        assert_int_equal(node_current_revision(cr, "master-0"), 3);
        assert_int_equal(node_current_revision(cr, "master-1"), 0);
        assert_int_equal(node_current_revision(cr, "master-2"), 0);
        assert_int_equal(node_current_revision(NULL, "master-0"), 0);
        fixture_free(f);
}

/* The operator's etcd client reaches a moved master's member at its new address,
 * verified against the one in the certificate of the revision the node runs, and
 * plainly once the node runs a revision whose certificate names the new one. */
static void test_wiring_aliases(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(loop_unrefp) Loop *loop = loop_new();
        HttpTls tls = {};
        _cleanup_(etcd_client_freep) EtcdClient *c = etcd_client_new(loop, &tls);
        EtcdWiring *w = NULL;
        _cleanup_free_ char *u1 = NULL, *ct1 = NULL, *u2 = NULL, *ct2 = NULL;
        const char *old[] = {"127.0.0.1", "10.0.0.1", NULL}, *moved[] = {"127.0.0.1", "10.0.1.1", NULL};

        assert_non_null(c);
        assert_int_equal(etcd_wiring_new(c, f->factory, NULL, &w), 0);
        fixture_all_certs(f, "master-0", "etcd-all-certs-3", old);
        fixture_all_certs(f, "master-0", "etcd-all-certs-4", moved);
        fixture_etcd_cr(f, NULL, "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":3}]");
        fixture_master(f, "master-0", "10.0.1.1", true);
        assert_int_equal(etcd_client_route(c, "https://10.0.1.1:2379/health", &u1, &ct1), 0);
        assert_string_equal(u1, "https://10.0.0.1:2379/health");
        assert_string_equal(strempty(ct1), "10.0.0.1:2379:10.0.1.1:2379");

        fixture_etcd_cr(f, NULL, "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":4}]");
        assert_int_equal(etcd_client_route(c, "https://10.0.1.1:2379/health", &u2, &ct2), 0);
        assert_string_equal(u2, "https://10.0.1.1:2379/health");
        assert_null(ct2);
        w = etcd_wiring_free(w);
        fixture_free(f);
}

static void write_pem(const char *dir, const char *name, const char *pem)
{
        char path[256];
        (void) snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_int_equal(write_file_atomic(path, pem, strlen(pem), 0600), 0);
}

static void new_pair(const char *cn, char **crt, char **key)
{
        _cleanup_(pki_pair_freep) PkiPair *p = NULL;
        assert_int_equal(
                pki_ca_new(cn, 3600 * USEC_PER_SEC, PKI_KEY_ECDSA_P256, now_usec(CLOCK_REALTIME), &p), 0);
        assert_int_equal(pki_pair_to_pem(p, crt, key), 0);
}

/* Credentials from mounted files follow the files: a new certificate is taken once its key is
 * there too (never a certificate with another's key), a new CA bundle at once. */
static void test_wiring_reload_files(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(loop_unrefp) Loop *loop = loop_new();
        HttpTls none = {};
        _cleanup_(etcd_client_freep) EtcdClient *c = etcd_client_new(loop, &none);
        EtcdWiring *w = NULL;
        char dir[] = "/tmp/test-wiring-XXXXXX", ca_path[64], crt_path[64], key_path[64];
        _cleanup_free_ char *ca = NULL, *ca_key = NULL, *crt = NULL, *key = NULL, *crt2 = NULL, *key2 = NULL,
                            *ca2 = NULL, *ca2_key = NULL;

        assert_non_null(c);
        assert_non_null(mkdtemp(dir));
        new_pair("signer", &ca, &ca_key);
        new_pair("client", &crt, &key);
        new_pair("client", &crt2, &key2);
        new_pair("signer-2", &ca2, &ca2_key);
        write_pem(dir, "ca.crt", ca);
        write_pem(dir, "tls.crt", crt);
        write_pem(dir, "tls.key", key);
        (void) snprintf(ca_path, sizeof ca_path, "%s/ca.crt", dir);
        (void) snprintf(crt_path, sizeof crt_path, "%s/tls.crt", dir);
        (void) snprintf(key_path, sizeof key_path, "%s/tls.key", dir);
        EtcdWiringFiles files = {.ca = ca_path, .cert = crt_path, .key = key_path};
        assert_int_equal(etcd_wiring_new(c, f->factory, &files, &w), 0);
        assert_string_equal(etcd_client_get_tls(c)->cert_pem, crt);
        assert_int_equal(etcd_wiring_reload_files(w), 0);

        /* The certificate first, its key later (a copy made file by file). */
        write_pem(dir, "tls.crt", crt2);
        assert_int_equal(etcd_wiring_reload_files(w), -EKEYREJECTED);
        assert_string_equal(etcd_client_get_tls(c)->cert_pem, crt);
        assert_string_equal(etcd_client_get_tls(c)->key_pem, key);
        write_pem(dir, "tls.key", key2);
        assert_int_equal(etcd_wiring_reload_files(w), 1);
        assert_string_equal(etcd_client_get_tls(c)->cert_pem, crt2);
        assert_string_equal(etcd_client_get_tls(c)->key_pem, key2);
        assert_int_equal(etcd_wiring_reload_files(w), 0);

        /* A new bundle. */
        _cleanup_free_ char *bundle = strdup_printf("%s%s", ca, ca2);
        write_pem(dir, "ca.crt", bundle);
        assert_int_equal(etcd_wiring_reload_files(w), 1);
        assert_string_equal(etcd_client_get_tls(c)->ca_pem, bundle);
        assert_string_equal(etcd_client_get_tls(c)->cert_pem, crt2);

        /* A file gone (a volume being remounted): an error, the client keeps what it had. */
        assert_int_equal(unlink(key_path), 0);
        assert_true(etcd_wiring_reload_files(w) < 0);
        assert_string_equal(etcd_client_get_tls(c)->key_pem, key2);

        w = etcd_wiring_free(w);
        assert_int_equal(unlink(ca_path), 0);
        assert_int_equal(unlink(crt_path), 0);
        assert_int_equal(rmdir(dir), 0);
        fixture_free(f);
}

/* ---- bootstrap ---- */

static void test_bootstrap_member(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "fd00::1", true);
        fixture_member(f, 1, "master-0", "fd00::1", false, true, true);
        fixture_member(f, 9, "bootstrap-host", "fd00:0::9", false, true, true);
        SyncContext ctx = ctx_of(f);
        /* Without the annotation, only the name tells. */
        assert_null(bootstrap_member(&ctx, f->snap));
        endpoints_annotation(f, "fd00::9");
        const EtcdMemberState *b = bootstrap_member(&ctx, f->snap);
        assert_non_null(b);
        assert_int_equal(b->id, 9);
        /* Bootstrap in place: the member on the bootstrap IP is named after a master, so it is that master.
         */
        endpoints_annotation(f, "fd00::1");
        assert_null(bootstrap_member(&ctx, f->snap));
        fixture_member(f, 7, "etcd-bootstrap", "10.0.0.7", false, true, true);
        b = bootstrap_member(&ctx, f->snap);
        assert_non_null(b);
        assert_int_equal(b->id, 7);
        fixture_free(f);
}

static void test_bootstrap_phase(void **state)
{
        Fixture *f = fixture_new();
        SyncContext ctx = ctx_of(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        assert_false(bootstrap_reported_complete(&ctx));
        assert_int_equal(bootstrap_phase(&ctx, f->snap), BOOTSTRAP_IN_PROGRESS);
        bootstrap_cm(f, "progressing");
        assert_int_equal(bootstrap_phase(&ctx, f->snap), BOOTSTRAP_IN_PROGRESS);
        bootstrap_cm(f, "complete");
        assert_true(bootstrap_reported_complete(&ctx));
        assert_int_equal(bootstrap_phase(&ctx, f->snap), BOOTSTRAP_REPORTED);
        /* Unknown membership never reads as "over". */
        assert_int_equal(bootstrap_phase(&ctx, NULL), BOOTSTRAP_REPORTED);
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        assert_int_equal(bootstrap_phase(&ctx, f->snap), BOOTSTRAP_OVER);
        fixture_etcd_error(f, -ETIMEDOUT);
        assert_int_equal(bootstrap_phase(&ctx, f->snap), BOOTSTRAP_REPORTED);
        assert_string_equal(bootstrap_phase_to_string(BOOTSTRAP_OVER), "over");
        assert_null(bootstrap_phase_to_string(_BOOTSTRAP_PHASE_INVALID));
        fixture_free(f);
}

/* Review M7: only the Event named bootstrap-finished counts, and the watch asks
 * the API server for that one alone (fieldSelector=metadata.name=...), so the
 * cache never holds kube-system's other Events. */
static void test_bootstrap_finished_event(void **state)
{
        Fixture *f = fixture_new();
        SyncContext ctx = ctx_of(f);

        assert_true(streq_ptr(operator_watches[W_KUBE_SYSTEM_EVENTS].name, "bootstrap-finished"));
        assert_null(operator_watches[W_KUBE_SYSTEM_EVENTS].label_selector);
        fixture_add(f, W_KUBE_SYSTEM_EVENTS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"other\","
                    "\"namespace\":\"kube-system\"},\"reason\":\"BootstrapFinished\"}");
        fixture_add(f, W_KUBE_SYSTEM_EVENTS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"bootstrap-finished."
                    "1\",\"namespace\":\"kube-system\"},\"reason\":\"Other\"}");
        assert_false(bootstrap_reported_complete(&ctx));
        /* As the installer's report-progress.sh wrote it: a name, no reason. */
        fixture_add(
                f, W_KUBE_SYSTEM_EVENTS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"bootstrap-finished\","
                "\"namespace\":\"kube-system\"},\"involvedObject\":{\"namespace\":\"kube-system\"},"
                "\"source\":{\"component\":\"cluster\"}}");
        assert_true(bootstrap_reported_complete(&ctx));
        fixture_free(f);
}

/* ---- scaling strategy ---- */

static void infra(Fixture *f, const char *topology)
{
        fixture_addf(f, W_INFRASTRUCTURES,
                     "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                     "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"%s\"}}",
                     topology);
}

static void test_scaling_strategy(void **state)
{
        Fixture *f = fixture_new();
        SyncContext ctx = ctx_of(f);
        assert_int_equal(scaling_strategy(&ctx), SCALING_HA);
        infra(f, "HighlyAvailable");
        assert_int_equal(scaling_strategy(&ctx), SCALING_HA);
        fixture_add(
                f, W_NAMESPACES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"openshift-etcd\","
                "\"annotations\":{\"openshift.io/delayed-bootstrap\":\"\"}}}");
        assert_int_equal(scaling_strategy(&ctx), SCALING_DELAYED_HA);
        infra(f, "SingleReplica");
        assert_int_equal(scaling_strategy(&ctx), SCALING_UNSAFE);
        fixture_add(
                f, W_KUBE_SYSTEM_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cluster-config-v1\","
                "\"namespace\":\"kube-system\"},\"data\":{\"install-config\":\"apiVersion: v1\\n"
                "bootstrapInPlace:\\n  installationDisk: /dev/sda\\n\"}}");
        assert_int_equal(scaling_strategy(&ctx), SCALING_BOOTSTRAP_IN_PLACE);
        /* The override wins over everything, as a string too. */
        fixture_etcd_cr(f, "\"unsupportedConfigOverrides\":{\"" UNSAFE_NON_HA_OVERRIDE "\":\"true\"}", NULL);
        assert_int_equal(scaling_strategy(&ctx), SCALING_UNSAFE);

        assert_int_equal(scaling_members_before_teardown(SCALING_HA), 4);
        assert_int_equal(scaling_members_before_teardown(SCALING_DELAYED_HA), 3);
        assert_int_equal(scaling_members_before_teardown(SCALING_UNSAFE), 2);
        assert_int_equal(scaling_members_before_teardown(SCALING_BOOTSTRAP_IN_PLACE), 2);
        assert_false(scaling_is_single_member(SCALING_HA));
        assert_false(scaling_is_single_member(SCALING_DELAYED_HA));
        assert_true(scaling_is_single_member(SCALING_UNSAFE));
        assert_true(scaling_is_single_member(SCALING_BOOTSTRAP_IN_PLACE));
        assert_string_equal(scaling_strategy_to_string(SCALING_DELAYED_HA), "DelayedHAScalingStrategy");
        assert_null(scaling_strategy_to_string(_SCALING_STRATEGY_MAX));
        fixture_free(f);
}

/* ---- quorum queries on the view ---- */

static void test_quorum_arithmetic(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "m1", "10.0.0.1", false, true, true);
        assert_int_equal(etcd_view_quorum(f->snap), 1);
        assert_int_equal(etcd_view_fault_tolerance(f->snap), 0);
        assert_false(etcd_view_is_fault_tolerant(f->snap));
        fixture_member(f, 2, "m2", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "m3", "10.0.0.3", false, true, true);
        fixture_member(f, 4, "m4", "10.0.0.4", true, true, true); /* a learner does not vote */
        assert_int_equal(etcd_view_count_voters(f->snap), 3);
        assert_int_equal(etcd_view_quorum(f->snap), 2);
        assert_int_equal(etcd_view_fault_tolerance(f->snap), 1);
        assert_true(etcd_view_is_fault_tolerant(f->snap));
        assert_true(etcd_view_removal_keeps_quorum(f->snap, 3));
        assert_false(etcd_view_removal_keeps_quorum(f->snap, 99));
        fixture_member(f, 5, "m5", "10.0.0.5", false, true, false);
        /* 4 voters, 3 healthy: quorum 3, nothing to spare. */
        assert_int_equal(etcd_view_fault_tolerance(f->snap), 0);
        assert_false(etcd_view_is_fault_tolerant(f->snap));
        assert_false(etcd_view_removal_keeps_quorum(f->snap, 1));
        assert_true(etcd_view_removal_keeps_quorum(f->snap, 5));
        fixture_free(f);
}

static bool up_unless_2(const EtcdMemberState *m, void *userdata)
{
        (void) userdata;
        return m->id != 2;
}

static void test_restart_keeps_quorum(void **state)
{
        size_t up = 0, voters = 0, q = 0;
        Fixture *f = fixture_new();
        fixture_member(f, 1, "m1", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "m2", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "m3", "10.0.0.3", false, true, true);
        assert_true(etcd_view_restart_keeps_quorum(f->snap, 1, NULL, NULL, NULL, NULL));
        /* The caller knows m2's pod is down: only m3 would stay up. */
        EtcdQuorumHints h = {.up = up_unless_2};
        assert_false(etcd_view_restart_keeps_quorum(f->snap, 1, &h, &up, &voters, &q));
        assert_int_equal(up, 1);
        assert_int_equal(voters, 3);
        assert_int_equal(q, 2);
        /* m2 itself is down by every account only if etcd agrees; it is healthy, so it counts. */
        assert_true(etcd_view_restart_keeps_quorum(f->snap, 2, &h, NULL, NULL, NULL));
        /* Unknown members and unstarted ones may always restart. */
        assert_true(etcd_view_restart_keeps_quorum(f->snap, 42, &h, NULL, NULL, NULL));
        fixture_member(f, 4, NULL, "10.0.0.4", true, false, false);
        assert_true(etcd_view_restart_keeps_quorum(f->snap, 4, &h, NULL, NULL, NULL));
        fixture_free(f);

        /* A leaving member neither votes nor counts as up; a started learner restarting counts as a voter.
         */
        f = fixture_new();
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.9", false, true, true);
        fixture_member(f, 1, "m1", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "m2", "10.0.0.2", true, true, true);
        assert_true(etcd_view_restart_keeps_quorum(f->snap, 2, NULL, &up, &voters, &q));
        h = (EtcdQuorumHints){.leaving = 9};
        assert_false(etcd_view_restart_keeps_quorum(f->snap, 2, &h, &up, &voters, &q));
        assert_int_equal(voters, 2);
        assert_int_equal(up, 1);
        fixture_free(f);
}

/* The view wakes its readers only when the digest changes: what they decide
 * from changes it, the figures that move every round do not. */
static void test_view_digest(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "m1", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "m2", "10.0.0.2", true, true, true);
        uint64_t d0 = etcd_view_digest(f->snap);
        assert_int_equal(etcd_view_digest(f->snap), d0);
        f->snap->states[0].status.raft_index += 100;
        f->snap->states[0].status.db_size += 4096;
        f->snap->taken_at += USEC_PER_SEC;
        assert_int_equal(etcd_view_digest(f->snap), d0);
        f->snap->states[1].healthy = false;
        uint64_t d1 = etcd_view_digest(f->snap);
        assert_true(d1 != d0);
        f->snap->states[1].healthy = true;
        assert_int_equal(etcd_view_digest(f->snap), d0);
        f->snap->states[1].is_learner = false; /* promoted */
        assert_true(etcd_view_digest(f->snap) != d0);
        f->snap->states[1].is_learner = true;
        f->snap->leader = 2;
        assert_true(etcd_view_digest(f->snap) != d0);
        f->snap->leader = 1;
        assert_int_equal(etcd_view_digest(f->snap), d0);
        EtcdAlarm a = {.member_id = 1, .alarm = "NOSPACE"};
        f->snap->alarms = &a;
        f->snap->n_alarms = 1;
        assert_true(etcd_view_digest(f->snap) != d0);
        f->snap->alarms = NULL;
        f->snap->n_alarms = 0;
        fixture_etcd_error(f, -ETIMEDOUT);
        assert_true(etcd_view_digest(f->snap) != d0);
        fixture_free(f);
}

/* The cache keeps of a pod what controllers read, and nothing they never read. */
static void test_cache_transform(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL, *cm = NULL, *trash = cJSON_CreateArray();
        static const char pod_json[] =
                "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-guard-m0\",\"namespace\":\"openshift-"
                "etcd\","
                "\"labels\":{\"app\":\"guard\"},\"managedFields\":[{\"manager\":\"kubelet\"}]},"
                "\"spec\":{\"nodeName\":\"m0\",\"volumes\":[{\"name\":\"v\"}],\"tolerations\":[{"
                "\"operator\":"
                "\"Exists\"}],\"dnsPolicy\":\"ClusterFirst\",\"priorityClassName\":\"system-cluster-"
                "critical\","
                "\"terminationGracePeriodSeconds\":3,\"securityContext\":{},\"initContainers\":[{\"name\":"
                "\"setup\",\"image\":\"img\",\"command\":[\"sh\"],\"env\":[{\"name\":\"A\"}]}],"
                "\"containers\":[{\"name\":\"guard\",\"image\":\"img\",\"command\":[\"sh\",\"-c\",\"x\"],"
                "\"args\":[\"a\"],\"env\":[{\"name\":\"B\",\"value\":\"1\"}],\"imagePullPolicy\":"
                "\"IfNotPresent\","
                "\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"volumeMounts\":[{\"name\":"
                "\"v\"}],\"resources\":{},\"livenessProbe\":{},\"startupProbe\":{},\"readinessProbe\":{"
                "\"httpGet\":{\"host\":\"10.0.0.1\",\"port\":9980}}}]},\"status\":{\"phase\":\"Running\","
                "\"podIP\":\"10.0.0.1\",\"podIPs\":[{\"ip\":\"10.0.0.1\"}],\"startTime\":\"t\",\"qosClass\":"
                "\"Burstable\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":"
                "null,"
                "\"lastTransitionTime\":\"t0\"}],\"containerStatuses\":[{\"name\":\"guard\",\"ready\":true,"
                "\"image\":\"img\",\"imageID\":\"\",\"containerID\":\"cri://1\",\"started\":true}]}}";
        assert_int_equal(json_parse(pod_json, strlen(pod_json), &pod), 0);
        operator_cache_transform(&KUBE_PODS, pod, trash);
        /* managedFields; volumes and 5 scheduling fields; 2 + 9 container fields; podIPs,
         * startTime, qosClass, a condition's lastProbeTime and a container status's image,
         * imageID, containerID, started */
        assert_int_equal(cJSON_GetArraySize(trash), 26);
        static const char *const spec_dropped[] = {"volumes",
                                                   "tolerations",
                                                   "dnsPolicy",
                                                   "priorityClassName",
                                                   "terminationGracePeriodSeconds",
                                                   "securityContext"};
        for (size_t k = 0; k < ELEMENTSOF(spec_dropped); k++)
                assert_null(json_get(json_get_object(pod, "spec"), spec_dropped[k]));
        cJSON *cs = cJSON_GetArrayItem(json_get_array(pod, "status.containerStatuses"), 0);
        cJSON *cond = cJSON_GetArrayItem(json_get_array(pod, "status.conditions"), 0);
        assert_null(json_get(pod, "status.podIPs"));
        assert_null(json_get(pod, "status.startTime"));
        assert_null(json_get(cs, "image"));
        assert_null(json_get(cs, "containerID"));
        assert_null(json_get(cond, "lastProbeTime"));
        assert_string_equal(json_get_string(cond, "lastTransitionTime"), "t0");
        assert_string_equal(json_get_string(cs, "name"), "guard");
        assert_null(json_get(pod, "metadata.managedFields"));
        assert_null(json_get(pod, "spec.volumes"));
        cJSON *c = cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0);
        cJSON *init = cJSON_GetArrayItem(json_get_array(pod, "spec.initContainers"), 0);
        static const char *const dropped[] = {"command",      "args",           "env",
                                              "volumeMounts", "resources",      "livenessProbe",
                                              "startupProbe", "imagePullPolicy"};
        for (size_t k = 0; k < ELEMENTSOF(dropped); k++) {
                assert_null(json_get(c, dropped[k]));
                assert_null(json_get(init, dropped[k]));
        }
        /* What the controllers read stays: metadata, node, image, the guard's probe, status. */
        assert_string_equal(json_get_string(pod, "metadata.labels.app"), "guard");
        assert_string_equal(json_get_string(pod, "spec.nodeName"), "m0");
        assert_string_equal(json_get_string(c, "name"), "guard");
        assert_string_equal(json_get_string(c, "image"), "img");
        assert_string_equal(json_get_string(c, "readinessProbe.httpGet.host"), "10.0.0.1");
        assert_string_equal(json_get_string(init, "image"), "img");
        assert_string_equal(json_get_string(pod, "status.podIP"), "10.0.0.1");
        assert_true(json_get_bool(cJSON_GetArrayItem(json_get_array(pod, "status.containerStatuses"), 0),
                                  "ready", false));

        /* Other kinds lose only managedFields. */
        static const char cm_json[] =
                "{\"metadata\":{\"name\":\"c\",\"managedFields\":[{}]},\"spec\":{\"volumes\":1},"
                "\"data\":{\"podyaml\":\"x\"}}";
        assert_int_equal(json_parse(cm_json, strlen(cm_json), &cm), 0);
        operator_cache_transform(&KUBE_CONFIGMAPS, cm, trash);
        assert_null(json_get(cm, "metadata.managedFields"));
        assert_non_null(json_get(cm, "spec.volumes"));
        assert_string_equal(json_get_string(cm, "data.podyaml"), "x");
}

/* A revision's copies: named <base>-<N>, cached with their long values as digests
 * except those controllers read, and still compared equal to the objects they copy. */
static void test_revision_copies(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *trash = cJSON_CreateArray(), *certs = NULL, *certs_copy = NULL,
                                       *pod = NULL, *pod_copy = NULL, *bundles = NULL;
        char long_a[200], long_b[200];

        assert_int_equal(revision_copy_number("etcd-pod-12", "etcd-pod"), 12);
        assert_int_equal(revision_copy_number("etcd-pod-0", "etcd-pod"), -1);
        assert_int_equal(revision_copy_number("etcd-pod-012", "etcd-pod"), -1);
        assert_int_equal(revision_copy_number("etcd-pod-1x", "etcd-pod"), -1);
        assert_int_equal(revision_copy_number("etcd-pod", "etcd-pod"), -1);
        assert_int_equal(revision_copy_number("etcd-pods-1", "etcd-pod"), -1);
        assert_int_equal(revision_copy_number("revision-status-3", REVISION_STATUS_NAME), 3);
        assert_ptr_equal(revision_copy_of(&KUBE_SECRETS, "openshift-etcd", "etcd-all-certs-4"),
                         &revisioned_objects[3]);
        assert_null(revision_copy_of(&KUBE_CONFIGMAPS, "openshift-etcd", "etcd-all-certs-4"));
        assert_null(revision_copy_of(&KUBE_SECRETS, "openshift-etcd", "etcd-all-certs"));
        assert_null(revision_copy_of(&KUBE_CONFIGMAPS, "openshift-etcd-operator", "etcd-pod-2"));

        memset(long_a, 'a', sizeof long_a - 1);
        long_a[sizeof long_a - 1] = 0;
        memcpy(long_b, long_a, sizeof long_b);
        long_b[100] = 'b';
        /* etcd-all-certs-2: the certificates stay whole, the private keys become digests. */
        certs = cJSON_Parse("{\"metadata\":{\"name\":\"etcd-all-certs-2\",\"namespace\":\"openshift-etcd\"},"
                            "\"data\":{}}");
        assert_non_null(certs);
        cJSON *d = json_get_object(certs, "data");
        cJSON_AddStringToObject(d, "etcd-serving-m0.crt", long_a);
        cJSON_AddStringToObject(d, "etcd-serving-m0.key", long_a);
        cJSON_AddStringToObject(d, "short.key", "k");
        certs_copy = cJSON_Duplicate(certs, true);
        operator_cache_transform(&KUBE_SECRETS, certs_copy, trash);
        assert_int_equal(cJSON_GetArraySize(trash), 1); /* the key's full text */
        cJSON *cd = json_get_object(certs_copy, "data");
        assert_string_equal(json_string(cJSON_GetObjectItem(cd, "etcd-serving-m0.crt")), long_a);
        const char *digest = json_string(cJSON_GetObjectItem(cd, "etcd-serving-m0.key"));
        assert_true(startswith(digest, CACHED_DIGEST_PREFIX));
        assert_int_equal(strlen(digest), strlen(CACHED_DIGEST_PREFIX) + 64);
        assert_string_equal(json_string(cJSON_GetObjectItem(cd, "short.key")), "k");
        assert_true(revision_copy_map_matches(cd, d));
        /* A changed key, a changed certificate, a key more or less: not the same. */
        cJSON_ReplaceItemInObject(d, "etcd-serving-m0.key", cJSON_CreateString(long_b));
        assert_false(revision_copy_map_matches(cd, d));
        cJSON_ReplaceItemInObject(d, "etcd-serving-m0.key", cJSON_CreateString(long_a));
        assert_true(revision_copy_map_matches(cd, d));
        cJSON_ReplaceItemInObject(d, "etcd-serving-m0.crt", cJSON_CreateString(long_b));
        assert_false(revision_copy_map_matches(cd, d));
        cJSON_ReplaceItemInObject(d, "etcd-serving-m0.crt", cJSON_CreateString(long_a));
        cJSON_AddStringToObject(d, "extra", "x");
        assert_false(revision_copy_map_matches(cd, d));
        cJSON_DeleteItemFromObject(d, "extra");
        cJSON_DeleteItemFromObject(d, "short.key");
        assert_false(revision_copy_map_matches(cd, d));
        assert_false(revision_copy_map_matches(cd, NULL));
        assert_true(revision_copy_map_matches(NULL, NULL));

        /* etcd-pod-3: pod.yaml becomes a digest; the current etcd-pod is not a copy: kept whole. */
        pod = cJSON_Parse("{\"metadata\":{\"name\":\"etcd-pod\",\"namespace\":\"openshift-etcd\"},"
                          "\"data\":{\"version\":\"4.99\"}}");
        assert_non_null(pod);
        cJSON_AddStringToObject(json_get_object(pod, "data"), "pod.yaml", long_a);
        pod_copy = cJSON_Duplicate(pod, true);
        cJSON_ReplaceItemInObject(json_get_object(pod_copy, "metadata"), "name",
                                  cJSON_CreateString("etcd-pod-3"));
        operator_cache_transform(&KUBE_CONFIGMAPS, pod, trash);
        operator_cache_transform(&KUBE_CONFIGMAPS, pod_copy, trash);
        assert_string_equal(json_string(cJSON_GetObjectItem(json_get_object(pod, "data"), "pod.yaml")),
                            long_a);
        assert_true(
                startswith(json_string(cJSON_GetObjectItem(json_get_object(pod_copy, "data"), "pod.yaml")),
                           CACHED_DIGEST_PREFIX));
        assert_string_equal(json_get_string(pod_copy, "data.version"), "4.99");
        assert_true(
                revision_copy_map_matches(json_get_object(pod_copy, "data"), json_get_object(pod, "data")));

        /* etcd-all-bundles-3: read by the CA rollout, kept whole. */
        bundles = cJSON_Parse("{\"metadata\":{\"name\":\"etcd-all-bundles-3\",\"namespace\":"
                              "\"openshift-etcd\"},\"data\":{}}");
        assert_non_null(bundles);
        cJSON_AddStringToObject(json_get_object(bundles, "data"), "server-ca-bundle.crt", long_a);
        cJSON_AddStringToObject(json_get_object(bundles, "data"), "other", long_a);
        operator_cache_transform(&KUBE_CONFIGMAPS, bundles, trash);
        assert_string_equal(json_string(cJSON_GetObjectItem(json_get_object(bundles, "data"), "other")),
                            long_a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cache_transform),
                cmocka_unit_test(test_ready),
                cmocka_unit_test(test_peer_urls),
                cmocka_unit_test(test_member_of_node),
                cmocka_unit_test(test_node_certified_ip),
                cmocka_unit_test(test_wiring_aliases),
                cmocka_unit_test(test_wiring_reload_files),
                cmocka_unit_test(test_bootstrap_member),
                cmocka_unit_test(test_bootstrap_phase),
                cmocka_unit_test(test_bootstrap_finished_event),
                cmocka_unit_test(test_scaling_strategy),
                cmocka_unit_test(test_quorum_arithmetic),
                cmocka_unit_test(test_restart_keeps_quorum),
                cmocka_unit_test(test_view_digest),
                cmocka_unit_test(test_revision_copies),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
