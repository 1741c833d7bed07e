/* EtcdCertSignerController as a table: secrets, configmaps, nodes and node
 * statuses in; issued certificates out, each parsed and checked (subject,
 * issuer, SANs, usages, chain). Keys are ECDSA P-256 except where the
 * contract's RSA default is the point. */
#include <dirent.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/yaml.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"
#include "render/bootstrap.h"

#define DAY      PKI_USEC_PER_DAY
#define YEAR     (365 * DAY)
#define MAX_CERT 3 /* certificates issued per sync at most */

static const char *const masters[][2] = {
        {"master-0", "10.0.0.1"}, {"master-1", "10.0.0.2"}, {"master-2", "10.0.0.3"}};
static const char *const node_prefixes[] = {"etcd-peer-", "etcd-serving-", "etcd-serving-metrics-"};

static Fixture *certs_fixture(bool with_masters)
{
        Fixture *f = fixture_new();
        f->state.cert_key_type = PKI_KEY_ECDSA_P256;
        /* As the operator runs: every verdict goes through the memo (10 min). */
        f->state.check_memo = pki_check_memo_new(10 * 60 * USEC_PER_SEC);
        assert_non_null(f->state.check_memo);
        for (size_t i = 0; with_masters && i < ELEMENTSOF(masters); i++)
                fixture_master(f, masters[i][0], masters[i][1], true);
        return f;
}

static bool is_write(const Intent *in)
{
        return in->type != INTENT_CONDITION && in->type != INTENT_EVENT;
}

static size_t writes(Fixture *f)
{
        size_t n = 0;
        for (size_t i = 0; i < f->plan.n; i++)
                n += is_write(&f->plan.intents[i]);
        return n;
}

/* An update of a certificate Secret that only adds its annotations (its data as cached). */
static bool annotation_only(Fixture *f, const Intent *in)
{
        const KubeObject *cached = in->type == INTENT_UPDATE && in->res == &KUBE_SECRETS
                                           ? fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", in->name)
                                           : NULL;
        return cached && cJSON_Compare(json_get(in->object, "data"), json_get(cached->json, "data"), true);
}

/* Writes of secrets with a fresh key: signers and leaves, not the aggregate. */
static size_t issued(Fixture *f)
{
        size_t n = 0;
        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                n += (in->type == INTENT_CREATE || in->type == INTENT_UPDATE) && in->res == &KUBE_SECRETS &&
                     !streq(in->name, "etcd-all-certs") && !annotation_only(f, in);
        }
        return n;
}

/* A write of `name` other than one that only annotates it. */
static const Intent *written(Fixture *f, const char *name)
{
        for (size_t i = 0; i < f->plan.n; i++)
                if (is_write(&f->plan.intents[i]) && streq_ptr(f->plan.intents[i].name, name) &&
                    !annotation_only(f, &f->plan.intents[i]))
                        return &f->plan.intents[i];
        return NULL;
}

static bool event_mentions(Fixture *f, const char *reason, const char *text)
{
        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                if (in->type == INTENT_EVENT && streq(in->reason, reason) && strstr(in->message, text))
                        return true;
        }
        return false;
}

static void feed(Fixture *f)
{
        (void) fixture_feed(f, W_ETCD_SECRETS);
        (void) fixture_feed(f, W_ETCD_CONFIGMAPS);
}

static void sync_ok(Fixture *f)
{
        assert_int_equal(fixture_sync(f, &controller_cert_signer), 0);
        assert_true(issued(f) <= MAX_CERT);
        if (issued(f) > 0) /* more may be left: the sync asks to come back */
                assert_true(f->plan.requeue_after > 0);
}

/* Syncs and carries the plans out until a sync writes nothing. Returns how
 * many certificates were issued on the way. */
static size_t converge(Fixture *f)
{
        size_t total = 0;
        for (int i = 0; i < 40; i++) {
                sync_ok(f);
                total += issued(f);
                if (writes(f) == 0)
                        return total;
                feed(f);
        }
        fail_msg("the controller did not converge");
        return 0;
}

/* Decoded secret data / configmap data from the caches (owned), NULL when absent. */
static char *secret_data(Fixture *f, const char *name, const char *key)
{
        const KubeObject *o = fixture_get(f, W_ETCD_SECRETS, NS_ETCD, name);
        const char *v =
                o ? cJSON_GetStringValue(cJSON_GetObjectItem(json_get_object(o->json, "data"), key)) : NULL;
        char *out = NULL;
        if (!v)
                return NULL;
        assert_int_equal(base64_decode(v, &out, NULL), 0);
        return out;
}

static const char *cm_data(Fixture *f, const char *name, const char *key)
{
        const KubeObject *o = fixture_get(f, W_ETCD_CONFIGMAPS, NS_ETCD, name);
        return o ? cJSON_GetStringValue(cJSON_GetObjectItem(json_get_object(o->json, "data"), key)) : NULL;
}

static PkiCertInfo *info_of(const char *pem)
{
        _cleanup_(X509_freep) X509 *x = NULL;
        PkiCertInfo *i = NULL;
        assert_non_null(pem);
        assert_int_equal(pki_cert_from_pem(pem, &x), 0);
        assert_int_equal(pki_cert_get_info(x, &i), 0);
        return i;
}

static size_t strv_len(char **v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

static bool strv_has(char **v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

static void expect_signer(Fixture *f, const char *name)
{
        _cleanup_free_ char *crt = secret_data(f, name, "tls.crt"), *key = secret_data(f, name, "tls.key");
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = info_of(crt);
        _cleanup_free_ char *prefix = strdup_printf("openshift-etcd_%s@", name);
        _cleanup_(pki_pair_freep) PkiPair *pair = NULL;

        assert_true(startswith(i->subject_cn, prefix));
        assert_true(i->is_ca);
        assert_true(i->self_signed);
        assert_int_equal(i->key_usage & KU_KEY_CERT_SIGN, KU_KEY_CERT_SIGN);
        assert_true(i->not_after - i->not_before >= PKI_SIGNER_VALIDITY);
        assert_int_equal(pki_pair_from_pem(crt, key, &pair), 0);
        assert_string_equal(json_get_string(fixture_get(f, W_ETCD_SECRETS, NS_ETCD, name)->json, "type"),
                            "kubernetes.io/tls");
}

/* A leaf as the contract wants it: subject, issuer, SANs, usages, key, chain. */
static void expect_leaf(Fixture *f, const char *name, const char *cn, const char *org, const char *signer,
                        const char *const *node_ips)
{
        static const char *const dns[] = {"localhost", "etcd.kube-system.svc",
                                          "etcd.kube-system.svc.cluster.local", "etcd.openshift-etcd.svc",
                                          "etcd.openshift-etcd.svc.cluster.local"};
        _cleanup_free_ char *crt = secret_data(f, name, "tls.crt"), *key = secret_data(f, name, "tls.key");
        _cleanup_free_ char *ca = secret_data(f, signer, "tls.crt");
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = NULL, *cai = NULL;
        _cleanup_(pki_pair_freep) PkiPair *pair = NULL;
        const char *bundle =
                cm_data(f, streq(signer, "etcd-signer") ? "etcd-ca-bundle" : "etcd-metrics-ca-bundle",
                        "ca-bundle.crt");

        if (!crt)
                fail_msg("no certificate in secret %s", name);
        i = info_of(crt);
        cai = info_of(ca);
        /* Upstream's subjects: a node certificate's CN is the first of its SANs in byte order
         * (library-go), with no O; a client certificate's two O values in one RDN, which DER
         * orders by value. */
        const char *want_cn = cn;
        for (size_t k = 0; node_ips && k < ELEMENTSOF(dns) + 2; k++) {
                const char *v = k < ELEMENTSOF(dns) ? dns[k] : k == ELEMENTSOF(dns) ? "127.0.0.1" : "::1";
                if (!want_cn || strcmp(v, want_cn) < 0)
                        want_cn = v;
        }
        for (size_t k = 0; node_ips && node_ips[k]; k++)
                if (strcmp(node_ips[k], want_cn) < 0)
                        want_cn = node_ips[k];
        assert_string_equal(i->subject_cn, want_cn);
        if (org)
                assert_string_equal(i->subject_orgs, org);
        else
                assert_null(i->subject_orgs);
        assert_string_equal(i->issuer, cai->subject);
        assert_false(i->is_ca);
        assert_int_equal(i->key_usage & KU_DIGITAL_SIGNATURE, KU_DIGITAL_SIGNATURE);
        assert_int_equal(i->ext_key_usage, node_ips ? XKU_SSL_SERVER | XKU_SSL_CLIENT : XKU_SSL_CLIENT);
        assert_int_equal(pki_pair_from_pem(crt, key, &pair), 0);
        assert_int_equal(pki_verify_chain(crt, bundle, PKI_PURPOSE_CLIENT, f->now, NULL), PKI_VALID);
        assert_string_equal(json_get_string(fixture_get(f, W_ETCD_SECRETS, NS_ETCD, name)->json, "type"),
                            "kubernetes.io/tls");
        if (!node_ips) {
                assert_int_equal(strv_len(i->dns), 0);
                assert_int_equal(strv_len(i->ips), 0);
                return;
        }
        assert_int_equal(pki_verify_chain(crt, bundle, PKI_PURPOSE_SERVER, f->now, NULL), PKI_VALID);
        assert_int_equal(strv_len(i->dns), ELEMENTSOF(dns));
        for (size_t k = 0; k < ELEMENTSOF(dns); k++)
                assert_true(strv_has(i->dns, dns[k]));
        size_t n = 0;
        for (; node_ips[n]; n++)
                if (!strv_has(i->ips, node_ips[n]))
                        fail_msg("%s: no IP SAN %s", name, node_ips[n]);
        assert_int_equal(strv_len(i->ips), n + 2);
        assert_true(strv_has(i->ips, "127.0.0.1"));
        assert_true(strv_has(i->ips, "::1"));
}

static void expect_node_certs(Fixture *f, const char *node, const char *const *ips)
{
        _cleanup_free_ char *peer = strdup_printf("etcd-peer-%s", node),
                            *srv = strdup_printf("etcd-serving-%s", node),
                            *met = strdup_printf("etcd-serving-metrics-%s", node);
        expect_leaf(f, peer, NULL, NULL, "etcd-signer", ips);
        expect_leaf(f, srv, NULL, NULL, "etcd-signer", ips);
        expect_leaf(f, met, NULL, NULL, "etcd-metric-signer", ips);
}

/* etcd-all-certs holds exactly the node certificates of `nodes`, byte for byte. */
static void expect_all_certs(Fixture *f, const char *const *nodes, size_t n)
{
        const KubeObject *all = fixture_get(f, W_ETCD_SECRETS, NS_ETCD, "etcd-all-certs");
        cJSON *data = all ? json_get_object(all->json, "data") : NULL;
        assert_non_null(data);
        assert_string_equal(json_get_string(all ? all->json : NULL, "type"), "Opaque");
        assert_int_equal(cJSON_GetArraySize(data), (int) (n * ELEMENTSOF(node_prefixes) * 2));
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < ELEMENTSOF(node_prefixes); k++) {
                        _cleanup_free_ char *sec = strdup_printf("%s%s", node_prefixes[k], nodes[i]);
                        _cleanup_free_ char *kc = strdup_printf("%s.crt", sec),
                                            *kk = strdup_printf("%s.key", sec);
                        const KubeObject *o = fixture_get(f, W_ETCD_SECRETS, NS_ETCD, sec);
                        assert_non_null(o);
                        cJSON *d = json_get_object(o->json, "data");
                        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(data, kc)),
                                            cJSON_GetStringValue(cJSON_GetObjectItem(d, "tls.crt")));
                        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(data, kk)),
                                            cJSON_GetStringValue(cJSON_GetObjectItem(d, "tls.key")));
                }
}

static size_t bundle_count(const char *pem)
{
        _cleanup_(sk_X509_pop_freep) PkiCerts *certs = NULL;
        assert_int_equal(pki_certs_from_pem(pem, &certs), 0);
        return (size_t) sk_X509_num(certs);
}

/* ---- fresh cluster ---- */

static void test_fresh_cluster(void **state)
{
        Fixture *f = certs_fixture(true);
        const char *const names[] = {"master-0", "master-1", "master-2"};

        /* 2 signers, 2 client certificates, 3 per node; at most 3 per sync. */
        assert_int_equal(converge(f), 2 + 2 + 9);
        expect_signer(f, "etcd-signer");
        expect_signer(f, "etcd-metric-signer");
        expect_leaf(f, "etcd-client", "etcd-client", "etcd-client,system:etcd", "etcd-signer", NULL);
        expect_leaf(f, "etcd-metric-client", "etcd-metric", "etcd-metric,system:etcd", "etcd-metric-signer",
                    NULL);
        for (size_t i = 0; i < ELEMENTSOF(masters); i++)
                expect_node_certs(f, masters[i][0], (const char *const[]){masters[i][1], NULL});
        expect_all_certs(f, names, 3);

        /* The bundles trust their signer; etcd-all-bundles carries both. */
        _cleanup_free_ char *ca = secret_data(f, "etcd-signer", "tls.crt");
        _cleanup_free_ char *mca = secret_data(f, "etcd-metric-signer", "tls.crt");
        assert_string_equal(cm_data(f, "etcd-ca-bundle", "ca-bundle.crt"), ca);
        assert_string_equal(cm_data(f, "etcd-metrics-ca-bundle", "ca-bundle.crt"), mca);
        assert_string_equal(cm_data(f, "etcd-all-bundles", "server-ca-bundle.crt"), ca);
        assert_string_equal(cm_data(f, "etcd-all-bundles", "metrics-ca-bundle.crt"), mca);

        /* Level-triggered and idempotent: a resync writes nothing. */
        f->now += DAY;
        sync_ok(f);
        assert_int_equal(writes(f), 0);
        fixture_free(f);
}

/* The signer and bundles come first; leaves only once the bundle trusts the signer. */
static void test_fresh_order_and_budget(void **state)
{
        Fixture *f = certs_fixture(true);

        sync_ok(f);
        assert_int_equal(issued(f), 2);
        assert_int_equal(written(f, "etcd-signer")->type, INTENT_CREATE);
        assert_int_equal(written(f, "etcd-metric-signer")->type, INTENT_CREATE);
        assert_true(event_mentions(f, "SignerCreated", "etcd-signer"));
        assert_null(written(f, "etcd-ca-bundle"));
        feed(f);

        sync_ok(f);
        assert_int_equal(issued(f), 0);
        assert_int_equal(written(f, "etcd-ca-bundle")->type, INTENT_CREATE);
        assert_int_equal(written(f, "etcd-metrics-ca-bundle")->type, INTENT_CREATE);
        assert_non_null(written(f, "etcd-all-bundles"));
        feed(f);

        sync_ok(f);
        assert_int_equal(issued(f), MAX_CERT);
        assert_true(f->plan.requeue_after > 0);
        assert_non_null(written(f, "etcd-client"));
        assert_true(event_mentions(f, "CertificateCreated", "etcd-client: missing"));
        assert_null(written(f, "etcd-all-certs")); /* not before every node certificate exists */
        fixture_free(f);
}

/* The contract's keys: RSA 2048 unless the operator is told otherwise. */
static void test_rsa_by_default(void **state)
{
        Fixture *f = fixture_new();
        assert_int_equal(fixture_sync(f, &controller_cert_signer), 0);
        assert_int_equal(issued(f), 2);
        feed(f);
        _cleanup_free_ char *crt = secret_data(f, "etcd-signer", "tls.crt");
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = info_of(crt);
        assert_int_equal(i->key_type, PKI_KEY_RSA_2048);
        assert_int_equal(i->key_bits, 2048);
        assert_true(i->not_after - i->not_before >= PKI_SIGNER_VALIDITY);
        fixture_free(f);
}

/* With a key pool (as the operator runs), a sync never generates a key: an
 * empty pool means nothing is issued and the sync asks to come back; each
 * key the pool hands out becomes one certificate. */
static void test_keys_from_pool(void **state)
{
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Fixture *f = certs_fixture(false);
        size_t total = 0;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(key_pool_new(e, PKI_KEY_ECDSA_P256, 1, &f->state.keys), 0);
        sync_ok(f);
        assert_int_equal(writes(f), 0);
        assert_true(f->plan.requeue_after > 0);

        for (int i = 0; i < 40; i++) {
                for (int t = 0; t < 300 && key_pool_available(f->state.keys) == 0; t++)
                        assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
                assert_int_equal(key_pool_available(f->state.keys), 1);
                sync_ok(f);
                assert_true(issued(f) <= 1);
                total += issued(f);
                if (writes(f) == 0)
                        break;
                feed(f);
        }
        /* 2 signers and 2 client certificates, one key each. */
        assert_int_equal(total, 4);
        expect_signer(f, "etcd-signer");
        expect_leaf(f, "etcd-client", "etcd-client", "etcd-client,system:etcd", "etcd-signer", NULL);

        /* A pool of another type is not used: the sync makes its own key. */
        f->state.keys = key_pool_free(f->state.keys);
        assert_int_equal(key_pool_new(e, PKI_KEY_RSA_2048, 1, &f->state.keys), 0);
        fixture_add(f, W_ETCD_SECRETS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"etcd-client\","
                    "\"namespace\":\"openshift-etcd\"},\"type\":\"kubernetes.io/tls\",\"data\":{}}");
        sync_ok(f);
        assert_int_equal(issued(f), 1);
        assert_non_null(written(f, "etcd-client"));
        f->state.keys = key_pool_free(f->state.keys);
        fixture_free(f);
}

/* ---- render's bootstrap material ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

/* Loads render's manifests/openshift-etcd-*.yaml as the installer would create them. */
static void load_render_manifests(Fixture *f, const char *dir)
{
        _cleanup_free_ char *mdir = strdup_printf("%s/manifests", dir);
        DIR *d = opendir(mdir);
        struct dirent *de;
        size_t n = 0;

        assert_non_null(d);
        while ((de = readdir(d))) {
                if (!startswith(de->d_name, "openshift-etcd-") ||
                    streq(de->d_name, "openshift-etcd-svc.yaml"))
                        continue;
                _cleanup_free_ char *p = strdup_printf("%s/%s", mdir, de->d_name);
                _cleanup_(cJSON_Deletep) cJSON *j = NULL;
                assert_int_equal(yaml_parse_file(p, &j, NULL), 0);
                _cleanup_free_ char *text = json_print(j);
                const char *kind = json_get_string(j, "kind");
                fixture_add(f, streq(kind, "Secret") ? W_ETCD_SECRETS : W_ETCD_CONFIGMAPS, text);
                n++;
        }
        closedir(d);
        assert_int_equal(n, 7 + 1 + 3); /* the secrets, etcd-all-certs, three configmaps */
}

/* Installed from render's manifests (bootstrap-in-place: render ran on
 * master-0 with its IP), the signers, client certificates, bundles and
 * master-0's certificates are reused as they are. */
static void test_bootstrap_material_reused(void **state)
{
        Fixture *f = certs_fixture(true);
        char base[] = "/tmp/test-controller-certs-XXXXXX";
        assert_non_null(mkdtemp(base));
        _cleanup_free_ char *out = strdup_printf("%s/assets", base);
        RenderInputs in = {.control_plane_replicas = 3};
        RenderOptions o = {.output_dir = out,
                           .etcd_image = "quay.io/openshift/etcd@sha256:0123456789abcdef",
                           .operator_image = "quay.io/openshift/cluster-etcd-operator@sha256:0123",
                           .hostname = "master-0",
                           .key_type = PKI_KEY_ECDSA_P256,
                           .now = f->now - DAY,
                           .inputs = &in};
        _cleanup_free_ char *err = NULL;
        assert_int_equal(ip_parse("10.0.0.1", &o.bootstrap_ip), 0);
        assert_int_equal(render_bootstrap(&o, &err), 0);
        load_render_manifests(f, out);
        assert_int_equal(nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);

        static const char *const reused[] = {"etcd-signer",           "etcd-metric-signer",
                                             "etcd-client",           "etcd-metric-client",
                                             "etcd-ca-bundle",        "etcd-metrics-ca-bundle",
                                             "etcd-all-bundles",      "etcd-peer-master-0",
                                             "etcd-serving-master-0", "etcd-serving-metrics-master-0"};
        _cleanup_free_ char *render_peer = secret_data(f, "etcd-peer-master-0", "tls.crt");
        sync_ok(f);
        for (size_t i = 0; i < ELEMENTSOF(reused); i++)
                if (written(f, reused[i]))
                        fail_msg("%s from render was replaced", reused[i]);
        assert_int_equal(issued(f), MAX_CERT); /* master-1's three */
        feed(f);
        assert_int_equal(converge(f), 3); /* master-2's */
        expect_leaf(f, "etcd-client", "etcd-client", "etcd-client,system:etcd", "etcd-signer", NULL);
        expect_node_certs(f, "master-1", (const char *const[]){"10.0.0.2", NULL});
        expect_node_certs(f, "master-2", (const char *const[]){"10.0.0.3", NULL});
        _cleanup_free_ char *peer = secret_data(f, "etcd-peer-master-0", "tls.crt");
        assert_string_equal(peer, render_peer);
        /* The aggregate now has the masters' certificates, not the bootstrap's set. */
        expect_all_certs(f, (const char *const[]){"master-0", "master-1", "master-2"}, 3);
        fixture_free(f);
}

/* ---- changes on a running cluster ---- */

static void test_node_ip_change(void **state)
{
        Fixture *f = certs_fixture(true);
        const char *const names[] = {"master-0", "master-1", "master-2"};
        converge(f);
        _cleanup_free_ char *old_peer0 = secret_data(f, "etcd-peer-master-0", "tls.crt");

        /* master-1 moves to a new IPv4 address and gains an IPv6 one. */
        fixture_add(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-1\",\"labels\":"
                "{\"node-role.kubernetes.io/"
                "master\":\"\"}},\"status\":{\"addresses\":[{\"type\":\"InternalIP\","
                "\"address\":\"10.0.0.12\"},{\"type\":\"InternalIP\",\"address\":\"fd00::12\"},"
                "{\"type\":\"ExternalIP\",\"address\":\"203.0.113.9\"},{\"type\":\"Hostname\",\"address\":"
                "\"master-1\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
        sync_ok(f);
        assert_int_equal(writes(f), 3);
        for (size_t k = 0; k < ELEMENTSOF(node_prefixes); k++) {
                _cleanup_free_ char *name = strdup_printf("%smaster-1", node_prefixes[k]);
                const Intent *in = written(f, name);
                assert_non_null(in);
                assert_int_equal(in->type, INTENT_UPDATE);
                assert_true(event_mentions(f, "CertificateRegenerated", "missing IP SAN 10.0.0.12"));
        }
        feed(f);
        sync_ok(f);
        assert_int_equal(writes(f), 1); /* then one aggregate change: one rollout */
        assert_non_null(written(f, "etcd-all-certs"));
        feed(f);
        sync_ok(f);
        assert_int_equal(writes(f), 0);
        expect_node_certs(f, "master-1", (const char *const[]){"10.0.0.12", "fd00::12", NULL});
        _cleanup_free_ char *peer0 = secret_data(f, "etcd-peer-master-0", "tls.crt");
        assert_string_equal(peer0, old_peer0);
        expect_all_certs(f, names, 3);
        fixture_free(f);
}

static void test_scale_up_and_down(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_free_ char *signer = secret_data(f, "etcd-signer", "tls.crt");

        fixture_master(f, "master-3", "10.0.0.4", true);
        sync_ok(f);
        assert_int_equal(writes(f), 3);
        for (size_t k = 0; k < ELEMENTSOF(node_prefixes); k++) {
                _cleanup_free_ char *name = strdup_printf("%smaster-3", node_prefixes[k]);
                assert_int_equal(written(f, name)->type, INTENT_CREATE);
        }
        feed(f);
        sync_ok(f);
        assert_int_equal(writes(f), 1);
        assert_non_null(written(f, "etcd-all-certs"));
        feed(f);
        expect_node_certs(f, "master-3", (const char *const[]){"10.0.0.4", NULL});
        expect_all_certs(f, (const char *const[]){"master-0", "master-1", "master-2", "master-3"}, 4);
        _cleanup_free_ char *signer_after = secret_data(f, "etcd-signer", "tls.crt");
        assert_string_equal(signer, signer_after); /* a scale-up never rotates a signer */

        /* A removed master leaves the aggregate; its secrets are left alone. */
        fixture_delete(f, W_MASTER_NODES, NULL, "master-0");
        sync_ok(f);
        assert_int_equal(writes(f), 1);
        assert_non_null(written(f, "etcd-all-certs"));
        feed(f);
        expect_all_certs(f, (const char *const[]){"master-1", "master-2", "master-3"}, 3);
        fixture_free(f);
}

static void test_node_without_ip(void **state)
{
        Fixture *f = certs_fixture(true);
        fixture_add(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-3\",\"labels\":"
                "{\"node-role.kubernetes.io/master\":\"\"}},\"status\":{}}");
        converge(f);
        assert_null(fixture_get(f, W_ETCD_SECRETS, NS_ETCD, "etcd-peer-master-3"));
        expect_all_certs(f, (const char *const[]){"master-0", "master-1", "master-2"}, 3);
        fixture_free(f);
}

/* ---- leaves that must be replaced ---- */

static void put_secret(Fixture *f, const char *name, const char *crt, const char *key)
{
        _cleanup_free_ char *c = base64_encode(crt, strlen(crt)), *k = base64_encode(key, strlen(key));
        _cleanup_free_ char *j =
                strdup_printf("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":"
                              "\"%s\",\"namespace\":\"openshift-etcd\",\"uid\":\"u-%s\"},\"type\":"
                              "\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"%s\",\"tls.key\":\"%s\"}}",
                              name, name, c, k);
        fixture_add(f, W_ETCD_SECRETS, j);
}

/* A certificate for master-0's serving secret from `ca`, as configured, with subject O `org`. */
static void put_serving_org(Fixture *f, const PkiPair *ca, const char *cn, const char *org, const char *ip,
                            usec_t validity)
{
        _cleanup_(pki_pair_freep) PkiPair *p = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL;
        PkiCertRequest req = {.profile = PKI_PROFILE_SERVER_CLIENT,
                              .cn = cn,
                              .org = org,
                              .dns = (const char *const[]){"localhost", "etcd.kube-system.svc",
                                                           "etcd.kube-system.svc.cluster.local",
                                                           "etcd.openshift-etcd.svc",
                                                           "etcd.openshift-etcd.svc.cluster.local", NULL},
                              .ips = (const char *const[]){"127.0.0.1", "::1", ip, NULL},
                              .validity = validity,
                              .key_type = PKI_KEY_ECDSA_P256};
        assert_int_equal(pki_cert_issue(ca, &req, f->now, &p), 0);
        assert_int_equal(pki_pair_to_pem(p, &crt, &key), 0);
        put_secret(f, "etcd-serving-master-0", crt, key);
}

/* The subject this operator issued before 2026-11-30: CN system:etcd-server:<node>, one O. */
static void put_serving(Fixture *f, const PkiPair *ca, const char *cn, const char *ip, usec_t validity)
{
        put_serving_org(f, ca, cn, "system:etcd-servers", ip, validity);
}

static PkiPair *signer_pair(Fixture *f, const char *name)
{
        _cleanup_free_ char *crt = secret_data(f, name, "tls.crt"), *key = secret_data(f, name, "tls.key");
        PkiPair *p = NULL;
        assert_int_equal(pki_pair_from_pem(crt, key, &p), 0);
        return p;
}

static void set_revisions(Fixture *f, unsigned r0, unsigned r1, unsigned r2)
{
        _cleanup_free_ char *j =
                strdup_printf("{\"apiVersion\":\"operator.openshift.io/"
                              "v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":\"cluster\"},"
                              "\"spec\":{\"managementState\":\"Managed\"},\"status\":{\"nodeStatuses\":["
                              "{\"nodeName\":\"master-0\",\"currentRevision\":%u},{\"nodeName\":\"master-"
                              "1\",\"currentRevision\":%u},"
                              "{\"nodeName\":\"master-2\",\"currentRevision\":%u}]}}",
                              r0, r1, r2);
        fixture_add(f, W_ETCD_CR, j);
}

/* What the revision controller does: snapshot etcd-all-bundles as revision N. */
static void snapshot_bundles(Fixture *f, unsigned rev)
{
        const KubeObject *o = fixture_get(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-all-bundles");
        _cleanup_(cJSON_Deletep) cJSON *c = cJSON_Duplicate(o->json, true);
        _cleanup_free_ char *name = strdup_printf("etcd-all-bundles-%u", rev);
        cJSON *md = json_get_object(c, "metadata");
        assert_int_equal(json_set_string(md, "name", name), 0);
        cJSON_DeleteItemFromObject(md, "resourceVersion");
        _cleanup_free_ char *text = json_print(c);
        fixture_add(f, W_ETCD_CONFIGMAPS, text);
}

typedef enum Damage {
        DAMAGE_EXPIRING,
        DAMAGE_FOREIGN_SIGNER,
        DAMAGE_OTHER_FAMILY, /* signed by the metric signer */
        DAMAGE_KEY_MISMATCH,
        DAMAGE_GARBAGE,
        DAMAGE_WRONG_CN,
        DAMAGE_WRONG_IP,
} Damage;

static void test_damaged_leaf(void **state)
{
        static const struct {
                Damage d;
                const char *reason;
        } table[] = {
                {DAMAGE_EXPIRING, "expiring: expires at"},
                {DAMAGE_FOREIGN_SIGNER, "wrong-signer"},
                {DAMAGE_OTHER_FAMILY, "wrong-signer"},
                {DAMAGE_KEY_MISMATCH, "key-mismatch"},
                {DAMAGE_GARBAGE, "unparseable"},
                {DAMAGE_WRONG_CN, "wrong subject or usage"},
                {DAMAGE_WRONG_IP, "unexpected IP SAN 10.9.9.9"},
        };
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_(pki_pair_freep) PkiPair *ca = signer_pair(f, "etcd-signer");
        _cleanup_(pki_pair_freep) PkiPair *mca = signer_pair(f, "etcd-metric-signer");
        _cleanup_(pki_pair_freep) PkiPair *foreign = NULL;
        assert_int_equal(pki_ca_new("foreign", PKI_SIGNER_VALIDITY, PKI_KEY_ECDSA_P256, f->now, &foreign),
                         0);
        set_revisions(f, 1, 1, 1); /* every node trusts the signer */
        snapshot_bundles(f, 1);

        for (size_t t = 0; t < ELEMENTSOF(table); t++) {
                switch (table[t].d) {
                case DAMAGE_EXPIRING:
                        put_serving(f, ca, "system:etcd-server:master-0", "10.0.0.1", 100 * DAY);
                        break;
                case DAMAGE_FOREIGN_SIGNER:
                        put_serving(f, foreign, "system:etcd-server:master-0", "10.0.0.1", YEAR);
                        break;
                case DAMAGE_OTHER_FAMILY:
                        put_serving(f, mca, "system:etcd-server:master-0", "10.0.0.1", YEAR);
                        break;
                case DAMAGE_KEY_MISMATCH: {
                        _cleanup_free_ char *c = secret_data(f, "etcd-serving-master-0", "tls.crt");
                        _cleanup_free_ char *k = secret_data(f, "etcd-peer-master-0", "tls.key");
                        put_secret(f, "etcd-serving-master-0", c, k);
                        break;
                }
                case DAMAGE_GARBAGE:
                        put_secret(f, "etcd-serving-master-0", "garbage", "more garbage");
                        break;
                case DAMAGE_WRONG_CN:
                        put_serving(f, ca, "system:etcd-server:master-9", "10.0.0.1", YEAR);
                        break;
                case DAMAGE_WRONG_IP:
                        put_serving(f, ca, "system:etcd-server:master-0", "10.9.9.9", YEAR);
                        break;
                }
                sync_ok(f);
                if (writes(f) != 1 || !written(f, "etcd-serving-master-0"))
                        fail_msg("case %zu: want one write of etcd-serving-master-0, got %zu", t, writes(f));
                assert_int_equal(written(f, "etcd-serving-master-0")->type, INTENT_UPDATE);
                if (!event_mentions(f, "CertificateRegenerated", table[t].reason))
                        fail_msg("case %zu: no event with \"%s\"", t, table[t].reason);
                feed(f);
                expect_node_certs(f, "master-0", (const char *const[]){"10.0.0.1", NULL});
                converge(f);
        }
        fixture_free(f);
}

/* An operator taking over a cluster keeps the leaves it finds when their subject is upstream's
 * (CN the first SAN, no O) or the one it issued before (CN system:etcd-server:<node>, O
 * system:etcd-servers): neither re-issues every leaf and rolls out a revision. A CN of either
 * form for another node, or upstream's CN with an O, is re-issued. */
static void test_subject_forms_kept(void **state)
{
        static const struct {
                const char *cn, *org;
                bool kept;
        } table[] = {
                {"10.0.0.1", NULL, true},                                     /* upstream's: the first SAN */
                {"system:etcd-server:master-0", "system:etcd-servers", true}, /* ours before */
                {"system:etcd-server:master-1", "system:etcd-servers", false},
                {"127.0.0.1", NULL, false}, /* a SAN, but not the first */
                {"10.0.0.1", "system:etcd-servers", false},
        };
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_(pki_pair_freep) PkiPair *ca = signer_pair(f, "etcd-signer");
        set_revisions(f, 1, 1, 1);
        snapshot_bundles(f, 1);
        for (size_t t = 0; t < ELEMENTSOF(table); t++) {
                put_serving_org(f, ca, table[t].cn, table[t].org, "10.0.0.1", YEAR);
                sync_ok(f);
                if (table[t].kept != !written(f, "etcd-serving-master-0"))
                        fail_msg("case %zu (CN=%s O=%s): %s", t, table[t].cn, strempty(table[t].org),
                                 table[t].kept ? "re-issued" : "kept");
                if (!table[t].kept)
                        assert_true(event_mentions(f, "CertificateRegenerated", "wrong subject"));
                feed(f);
                converge(f);
        }
        fixture_free(f);
}

/* Without knowing that every node trusts the signer (no node statuses yet),
 * a leaf that is merely expiring is kept; a broken one is not. */
static void test_expiring_leaf_waits_for_rollout(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_(pki_pair_freep) PkiPair *ca = signer_pair(f, "etcd-signer");
        put_serving(f, ca, "system:etcd-server:master-0", "10.0.0.1", 100 * DAY);
        sync_ok(f);
        assert_null(written(f, "etcd-serving-master-0"));
        set_revisions(f, 3, 3, 0); /* master-2 runs no revision yet */
        snapshot_bundles(f, 3);
        sync_ok(f);
        assert_null(written(f, "etcd-serving-master-0"));
        set_revisions(f, 3, 3, 3);
        sync_ok(f);
        assert_int_equal(written(f, "etcd-serving-master-0")->type, INTENT_UPDATE);
        fixture_free(f);
}

/* render and the signer issue node certificates from one profile
 * (render/certs.h, upstream's SANs); test_bootstrap_material_reused shows a
 * render-issued set is kept. A leaf whose SANs differ from that rule, here
 * one with the node name as a DNS SAN (what render used to add), is issued
 * again: there is no second shape to accept. */
static void test_sans_follow_one_profile(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_(pki_pair_freep) PkiPair *ca = signer_pair(f, "etcd-signer");
        _cleanup_(pki_pair_freep) PkiPair *p = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL;
        PkiCertRequest req = {
                .profile = PKI_PROFILE_SERVER_CLIENT,
                .cn = "system:etcd-peer:master-0",
                .org = "system:etcd-peers",
                .dns = (const char *const[]){"localhost", "etcd.kube-system.svc",
                                             "etcd.kube-system.svc.cluster.local", "etcd.openshift-etcd.svc",
                                             "etcd.openshift-etcd.svc.cluster.local", "master-0", NULL},
                .ips = (const char *const[]){"127.0.0.1", "::1", "10.0.0.1", NULL},
                .validity = PKI_LEAF_VALIDITY,
                .key_type = PKI_KEY_ECDSA_P256};
        assert_int_equal(pki_cert_issue(ca, &req, f->now, &p), 0);
        assert_int_equal(pki_pair_to_pem(p, &crt, &key), 0);
        put_secret(f, "etcd-peer-master-0", crt, key);
        sync_ok(f);
        assert_non_null(written(f, "etcd-peer-master-0"));
        fixture_free(f);
}

/* library-go's certificate metadata on every certificate Secret, and on one that lacks it
 * (render's, an older operator's) added without touching its data. */
static void test_certificate_annotations(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        const KubeObject *sec = fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-peer-master-0");
        assert_non_null(sec);
        cJSON *ann = json_get_object(sec->json, "metadata.annotations");
        _cleanup_free_ char *crt = secret_data(f, "etcd-peer-master-0", "tls.crt");
        _cleanup_free_ char *ca = secret_data(f, "etcd-signer", "tls.crt");
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = info_of(crt), *c = info_of(ca);
        char when[64];
#define ANN(k) json_string(cJSON_GetObjectItemCaseSensitive(ann, k))
        assert_string_equal(ANN("auth.openshift.io/certificate-not-after"),
                            format_rfc3339(when, sizeof when, i->not_after));
        assert_string_equal(ANN("auth.openshift.io/certificate-not-before"),
                            format_rfc3339(when, sizeof when, i->not_before));
        assert_true(i->not_after - i->not_before >= 3 * YEAR &&
                    i->not_after - i->not_before < 3 * YEAR + DAY);
        assert_string_equal(ANN("auth.openshift.io/certificate-issuer"), c->subject_cn);
        assert_string_equal(ANN("auth.openshift.io/certificate-hostnames"),
                            "10.0.0.1,127.0.0.1,::1,etcd.kube-system.svc,etcd.kube-system.svc.cluster.local,"
                            "etcd.openshift-etcd.svc,etcd.openshift-etcd.svc.cluster.local,localhost");
        assert_string_equal(ANN("openshift.io/owning-component"), "etcd");
        assert_non_null(strstr(ANN("openshift.io/description"), "Peer certificate"));
        /* Replaced 2.2 years after notBefore, as library-go writes a Go duration. */
        assert_string_equal(ANN("certificates.openshift.io/refresh-period"), "19272h0m0s");
        /* A client certificate has no hostnames; a signer is described as one. */
        ann = json_get_object(fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-client")->json,
                              "metadata.annotations");
        assert_null(ANN("auth.openshift.io/certificate-hostnames"));
        assert_non_null(ANN("auth.openshift.io/certificate-not-after"));
        ann = json_get_object(fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-signer")->json,
                              "metadata.annotations");
        assert_non_null(strstr(ANN("openshift.io/description"), "Signs etcd's"));
        assert_string_equal(ANN("certificates.openshift.io/refresh-period"), "36792h0m0s"); /* 4.2 years */

        /* The same certificate without them: one update adds them, the data unchanged, no event. */
        _cleanup_free_ char *key = secret_data(f, "etcd-peer-master-0", "tls.key");
        put_secret(f, "etcd-peer-master-0", crt, key);
        sync_ok(f);
        assert_null(written(f, "etcd-peer-master-0")); /* no fresh certificate */
        const Intent *up = fixture_find(f, INTENT_UPDATE, "secrets", "etcd-peer-master-0");
        assert_non_null(up);
        ann = json_get_object(up->object, "metadata.annotations");
        assert_string_equal(ANN("auth.openshift.io/certificate-not-after"),
                            format_rfc3339(when, sizeof when, i->not_after));
        assert_string_equal(ANN("certificates.openshift.io/refresh-period"), "19272h0m0s");
        assert_false(event_mentions(f, "CertificateRegenerated", "etcd-peer-master-0"));
        feed(f);
        sync_ok(f);
        assert_null(fixture_find(f, INTENT_UPDATE, "secrets", "etcd-peer-master-0"));

        /* The CA bundles as library-go's certrotation labels them; the aggregates owned by "Etcd". */
        const KubeObject *cm = fixture_get(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-metrics-ca-bundle");
        ann = json_get_object(cm->json, "metadata.annotations");
        assert_string_equal(ANN("openshift.io/owning-component"), "etcd");
        assert_non_null(strstr(ANN("openshift.io/description"), "etcd-metric-signer"));
        ann = json_get_object(cm->json, "metadata.labels");
        assert_string_equal(ANN("auth.openshift.io/managed-certificate-type"), "ca-bundle");
        ann = json_get_object(fixture_get(f, W_ETCD_CONFIGMAPS, "openshift-etcd", "etcd-all-bundles")->json,
                              "metadata.annotations");
        assert_string_equal(ANN("openshift.io/owning-component"), "Etcd");
        ann = json_get_object(fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", "etcd-all-certs")->json,
                              "metadata.annotations");
        assert_string_equal(ANN("openshift.io/owning-component"), "Etcd");

        /* A bundle of an older release, its data current and no metadata: written once, same data. */
        cJSON *bare = cJSON_Duplicate(cm->json, true);
        cJSON_DeleteItemFromObjectCaseSensitive(json_get_object(bare, "metadata"), "annotations");
        cJSON_DeleteItemFromObjectCaseSensitive(json_get_object(bare, "metadata"), "labels");
        _cleanup_free_ char *before = strdup(cm_data(f, "etcd-metrics-ca-bundle", "ca-bundle.crt"));
        fixture_add_object(f, W_ETCD_CONFIGMAPS, bare);
        sync_ok(f);
        const Intent *b = fixture_find(f, INTENT_UPDATE, "configmaps", "etcd-metrics-ca-bundle");
        assert_non_null(b);
        assert_string_equal(json_string(cJSON_GetObjectItemCaseSensitive(json_get_object(b->object, "data"),
                                                                         "ca-bundle.crt")),
                            before);
        assert_int_equal(issued(f), 0);
        feed(f);
        sync_ok(f);
        assert_null(fixture_find(f, INTENT_UPDATE, "configmaps", "etcd-metrics-ca-bundle"));
#undef ANN
        fixture_free(f);
}

/* ---- signers ---- */

static void expect_issuer(Fixture *f, const char *name, const char *signer_pem)
{
        _cleanup_free_ char *crt = secret_data(f, name, "tls.crt");
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = info_of(crt), *s = info_of(signer_pem);
        assert_string_equal(i->issuer, s->subject);
}

/* Two phases: new signer into the bundle, leaves only after every node runs it. */
static void test_signer_rotation(void **state)
{
        Fixture *f = certs_fixture(false);
        usec_t start = f->now;
        assert_int_equal(converge(f), 4); /* signers and client certificates at `start` */
        set_revisions(f, 1, 1, 1);
        snapshot_bundles(f, 1);
        f->now = start + 4 * YEAR; /* a year left: not yet due */
        for (size_t i = 0; i < ELEMENTSOF(masters); i++)
                fixture_master(f, masters[i][0], masters[i][1], true);
        /* the node certificates, and the client certificates again (leaves live 3 years) */
        assert_int_equal(converge(f), 9 + 2);
        _cleanup_free_ char *old_ca = secret_data(f, "etcd-signer", "tls.crt");
        _cleanup_free_ char *old_peer = secret_data(f, "etcd-peer-master-0", "tls.crt");
        double days = 0;
        assert_int_equal(cert_signer_expiration_days(f->factory, "etcd-signer", f->now, &days), 0);
        assert_true(days > 364 && days < 366);

        /* 265 days left: inside the refresh window. Phase 1: the signer is replaced... */
        f->now = start + 4 * YEAR + 100 * DAY;
        sync_ok(f);
        assert_int_equal(issued(f), 2);
        assert_int_equal(written(f, "etcd-signer")->type, INTENT_UPDATE);
        assert_int_equal(written(f, "etcd-metric-signer")->type, INTENT_UPDATE);
        assert_true(event_mentions(f, "SignerRotated", "expiring"));
        feed(f);
        expect_signer(f, "etcd-signer");
        _cleanup_free_ char *new_ca = secret_data(f, "etcd-signer", "tls.crt");
        assert_string_not_equal(new_ca, old_ca);

        /* ...and joins the bundle next to the old one. */
        sync_ok(f);
        assert_int_equal(issued(f), 0);
        assert_non_null(written(f, "etcd-ca-bundle"));
        assert_non_null(written(f, "etcd-all-bundles"));
        feed(f);
        const char *bundle = cm_data(f, "etcd-ca-bundle", "ca-bundle.crt");
        assert_int_equal(bundle_count(bundle), 2);
        assert_int_equal(pki_bundle_contains(bundle, old_ca), 1);
        assert_int_equal(pki_bundle_contains(bundle, new_ca), 1);
        assert_int_equal(bundle_count(cm_data(f, "etcd-all-bundles", "server-ca-bundle.crt")), 2);

        /* Nothing is issued from the new signer yet: the leaves are good, and
         * the nodes do not trust the new signer yet. */
        assert_int_equal(converge(f), 0);
        _cleanup_free_ char *peer = secret_data(f, "etcd-peer-master-0", "tls.crt");
        assert_string_equal(peer, old_peer);
        expect_issuer(f, "etcd-client", old_ca);

        /* Two of three nodes run the new bundles: still waiting. */
        snapshot_bundles(f, 2);
        set_revisions(f, 2, 2, 1);
        sync_ok(f);
        assert_int_equal(writes(f), 0);

        /* Every node does: phase 2 re-issues the leaves, then one aggregate change. */
        set_revisions(f, 2, 2, 2);
        sync_ok(f);
        assert_int_equal(issued(f), MAX_CERT);
        assert_true(event_mentions(f, "CertificateRegenerated", "etcd-client: signed by a previous signer"));
        feed(f);
        assert_int_equal(converge(f), 2 + 9 - MAX_CERT);
        expect_issuer(f, "etcd-client", new_ca);
        for (size_t i = 0; i < ELEMENTSOF(masters); i++) {
                expect_node_certs(f, masters[i][0], (const char *const[]){masters[i][1], NULL});
                _cleanup_free_ char *name = strdup_printf("etcd-serving-%s", masters[i][0]);
                expect_issuer(f, name, new_ca);
        }
        expect_all_certs(f, (const char *const[]){"master-0", "master-1", "master-2"}, 3);

        /* Half a minute before the old signer expires, the sync asks to come back a second after
         * (not at the next resync, up to a minute later), so that it leaves the bundles at once. */
        usec_t expiry = 0;
        assert_int_equal(pki_bundle_first_expiry(cm_data(f, "etcd-ca-bundle", "ca-bundle.crt"), &expiry), 0);
        assert_true(expiry > f->now);
        f->now = expiry - 30 * USEC_PER_SEC;
        sync_ok(f);
        assert_int_equal(writes(f), 0);
        assert_int_equal(f->plan.requeue_after, 31 * USEC_PER_SEC);

        /* Once the old signer expires it leaves the bundles. */
        f->now = start + 5 * YEAR + DAY;
        sync_ok(f);
        assert_int_equal(issued(f), 0);
        assert_non_null(written(f, "etcd-ca-bundle"));
        assert_non_null(written(f, "etcd-metrics-ca-bundle"));
        assert_non_null(written(f, "etcd-all-bundles"));
        feed(f);
        assert_string_equal(cm_data(f, "etcd-ca-bundle", "ca-bundle.crt"), new_ca);
        fixture_free(f);
}

/* An expiring signer the bundle does not trust yet is published before it is replaced. */
static void test_rotation_waits_for_bundle(void **state)
{
        Fixture *f = certs_fixture(false);
        usec_t start = f->now;
        converge(f);
        _cleanup_free_ char *old_ca = secret_data(f, "etcd-signer", "tls.crt");
        fixture_delete(f, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-ca-bundle");
        f->now = start + 4 * YEAR + 100 * DAY;
        sync_ok(f);
        assert_null(written(f, "etcd-signer"));
        assert_int_equal(written(f, "etcd-metric-signer")->type, INTENT_UPDATE);
        const Intent *b = written(f, "etcd-ca-bundle");
        assert_non_null(b);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(json_get_object(b->object, "data"),
                                                                     "ca-bundle.crt")),
                            old_ca);
        feed(f);
        sync_ok(f);
        assert_int_equal(written(f, "etcd-signer")->type, INTENT_UPDATE);
        fixture_free(f);
}

/* A signer that cannot sign is replaced, loudly; the bundle keeps what it trusted. */
static void test_broken_signer_replaced(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        _cleanup_free_ char *old_ca = secret_data(f, "etcd-signer", "tls.crt");
        put_secret(f, "etcd-signer", "not a certificate", "not a key");
        sync_ok(f);
        assert_int_equal(issued(f), 1);
        assert_int_equal(written(f, "etcd-signer")->type, INTENT_UPDATE);
        const Intent *ev = NULL;
        for (size_t i = 0; i < f->plan.n; i++)
                if (f->plan.intents[i].type == INTENT_EVENT)
                        ev = &f->plan.intents[i];
        assert_non_null(ev);
        assert_true(ev && ev->warning);
        assert_string_equal(ev ? ev->reason : NULL, "SignerRotated");
        feed(f);
        converge(f);
        const char *bundle = cm_data(f, "etcd-ca-bundle", "ca-bundle.crt");
        assert_int_equal(bundle_count(bundle), 2);
        assert_int_equal(pki_bundle_contains(bundle, old_ca), 1);
        fixture_free(f);
}

static void test_expiration_days(void **state)
{
        Fixture *f = certs_fixture(false);
        double days = 0;
        assert_int_equal(cert_signer_expiration_days(f->factory, "etcd-signer", f->now, &days), -ENOENT);
        converge(f);
        for (const char *const *n = cert_signer_names; *n; n++) {
                assert_int_equal(cert_signer_expiration_days(f->factory, *n, f->now, &days), 0);
                assert_true(days > 5 * 365 - 1 && days <= 5 * 365 + 1);
        }
        fixture_free(f);
}

/* EtcdCertCleanerController on what the signer wrote: a gone master's three Secrets go, one
 * per sync, only once the bootstrap is over, no member is named after it and none uses an
 * address its certificates name; the other masters' stay. */
static void test_cert_cleaner(void **state)
{
        Fixture *f = certs_fixture(true);
        converge(f);
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
        for (size_t i = 0; i < ELEMENTSOF(masters); i++)
                fixture_member(f, i + 1, masters[i][0], masters[i][1], false, true, true);

        /* Every master there: nothing. */
        assert_int_equal(fixture_sync(f, &controller_cert_cleaner), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 0);

        /* master-0's Node gone, its member still listed: kept. */
        fixture_delete(f, W_MASTER_NODES, NULL, "master-0");
        assert_int_equal(fixture_sync(f, &controller_cert_cleaner), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 0);
        assert_non_null(strstr(f->plan.waiting, "node master-0 is gone, but an etcd member may still use"));

        /* A member without the name (unstarted) on master-0's address: still kept. */
        fixture_no_etcd(f);
        fixture_member(f, 2, masters[1][0], masters[1][1], false, true, true);
        fixture_member(f, 3, masters[2][0], masters[2][1], false, true, true);
        fixture_member(f, 9, NULL, masters[0][1], true, false, false);
        assert_int_equal(fixture_sync(f, &controller_cert_cleaner), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 0);

        /* The member gone: its three Secrets go, one per sync, each with an event. */
        fixture_no_etcd(f);
        fixture_member(f, 2, masters[1][0], masters[1][1], false, true, true);
        fixture_member(f, 3, masters[2][0], masters[2][1], false, true, true);
        size_t gone = 0;
        for (int round = 0; round < 5; round++) {
                assert_int_equal(fixture_sync(f, &controller_cert_cleaner), 0);
                const Intent *d = fixture_find(f, INTENT_DELETE, "secrets", NULL);
                if (!d)
                        break;
                assert_int_equal(fixture_count(f, INTENT_DELETE), 1);
                assert_non_null(fixture_find(f, INTENT_EVENT, NULL, NULL));
                assert_true(endswith(d->name, "-master-0"));
                fixture_delete(f, W_ETCD_SECRETS, "openshift-etcd", d->name);
                gone++;
        }
        assert_int_equal(gone, ELEMENTSOF(node_prefixes));
        for (size_t k = 0; k < ELEMENTSOF(node_prefixes); k++) {
                _cleanup_free_ char *name = strdup_printf("%smaster-1", node_prefixes[k]);
                assert_non_null(fixture_get(f, W_ETCD_SECRETS, "openshift-etcd", name));
        }
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fresh_cluster),
                cmocka_unit_test(test_cert_cleaner),
                cmocka_unit_test(test_fresh_order_and_budget),
                cmocka_unit_test(test_rsa_by_default),
                cmocka_unit_test(test_keys_from_pool),
                cmocka_unit_test(test_bootstrap_material_reused),
                cmocka_unit_test(test_node_ip_change),
                cmocka_unit_test(test_scale_up_and_down),
                cmocka_unit_test(test_node_without_ip),
                cmocka_unit_test(test_damaged_leaf),
                cmocka_unit_test(test_expiring_leaf_waits_for_rollout),
                cmocka_unit_test(test_subject_forms_kept),
                cmocka_unit_test(test_sans_follow_one_profile),
                cmocka_unit_test(test_certificate_annotations),
                cmocka_unit_test(test_signer_rotation),
                cmocka_unit_test(test_rotation_waits_for_bundle),
                cmocka_unit_test(test_broken_signer_replaced),
                cmocka_unit_test(test_expiration_days),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
