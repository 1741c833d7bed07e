/* The operator's endpoint as OpenShift serves it (operator/process/serving.h), against
 * Kubernetes' own kube-apiserver (with-kube.sh): HTTPS with a serving certificate from files,
 * /metrics only to a client certificate that kube-apiserver's client CA (as it publishes it in
 * kube-system/extension-apiserver-authentication) issued, or a bearer token that a TokenReview
 * accepts, and then only to Prometheus's user or one a SubjectAccessReview allows `get` on
 * /metrics; the probes to anyone; answers cached, one review per credential at a time; a
 * renewed certificate served once the files change, a broken one never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "kube/client.h"
#include "loop/loop.h"
#include "pki/pki.h"
#include "process/serving.h"

#define DEADLINE (30 * USEC_PER_SEC)

static Loop *loop;
static KubeClient *client;
static char dir[] = "/tmp/ceo-metrics-auth-XXXXXX";
static char *cert_file, *key_file;
static char *ca_pem; /* what the clients trust */
static char *token_reader, *token_nobody;
static PkiPair *kube_ca; /* kube-apiserver's client CA, as kube-controller-manager signs with it */

typedef struct Result {
        bool done;
        int error;
        cJSON *body;
} Result;

static void on_result(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Result *r = userdata;
        (void) c;
        r->done = true;
        r->error = resp->error;
        r->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
}

/* POSTs `json` to `path` as the admin; returns the answer (owned), -EEXIST accepted. */
static cJSON *post(const char *path, const char *json)
{
        Result r = {};
        cJSON *body = NULL;
        assert_int_equal(json_parse(json, strlen(json), &body), 0);
        assert_int_equal(kube_call(client, "POST", path, body, "application/json", on_result, &r, NULL), 0);
        cJSON_Delete(body);
        assert_int_equal(loop_run_until(loop, &r.done, DEADLINE), 0);
        if (r.error != -EEXIST)
                assert_int_equal(r.error, 0);
        return r.body;
}

static char *token_for(const char *sa)
{
        _cleanup_free_ char *path = strdup_printf("/api/v1/namespaces/default/serviceaccounts/%s/token", sa);
        cJSON *b = post(path, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
                              "\"spec\":{\"expirationSeconds\":3600}}");
        const char *t = json_get_string(b, "status.token");
        assert_non_null(t);
        char *ret = strdup(t);
        cJSON_Delete(b);
        return ret;
}

/* A CA and a serving certificate for 127.0.0.1 from it, written to the served files. */
static void new_serving_pair(char **ret_ca_pem)
{
        _cleanup_(pki_pair_freep) PkiPair *ca = NULL, *leaf = NULL;
        _cleanup_free_ char *cert = NULL, *key = NULL, *ca_cert = NULL, *ca_key = NULL;
        usec_t now = now_usec(CLOCK_REALTIME);
        static const char *const ips[] = {"127.0.0.1", NULL};
        static const char *const dns[] = {"metrics.openshift-etcd-operator.svc", NULL};

        assert_int_equal(pki_ca_new("openshift-service-serving-signer", 3600 * USEC_PER_SEC,
                                    PKI_KEY_ECDSA_P256, now, &ca),
                         0);
        PkiCertRequest req = {.profile = PKI_PROFILE_SERVER,
                              .cn = "metrics.openshift-etcd-operator.svc",
                              .dns = dns,
                              .ips = ips,
                              .validity = 3600 * USEC_PER_SEC,
                              .key_type = PKI_KEY_ECDSA_P256};
        assert_int_equal(pki_cert_issue(ca, &req, now, &leaf), 0);
        assert_int_equal(pki_pair_to_pem(leaf, &cert, &key), 0);
        assert_int_equal(pki_pair_to_pem(ca, &ca_cert, &ca_key), 0);
        assert_int_equal(write_file_atomic(key_file, key, strlen(key), 0600), 0);
        assert_int_equal(write_file_atomic(cert_file, cert, strlen(cert), 0644), 0);
        *ret_ca_pem = TAKE_PTR(ca_cert);
}

typedef struct Fetch {
        HttpRequest *req;
        bool done;
        int error;
} Fetch;

static void on_fetched(HttpRequest *req, int error, void *userdata)
{
        Fetch *f = userdata;
        (void) req;
        f->done = true;
        f->error = error;
}

/* A client certificate (PEM, certificate then key) is presented when given. */
typedef struct Client {
        char *cert_pem, *key_pem;
} Client;

static void client_free(Client *c)
{
        free(c->cert_pem);
        free(c->key_pem);
}

/* A client certificate for `cn` (and group `org`) from `ca`, as kube-controller-manager's
 * kube-apiserver-client signer issues them; with PKI_PROFILE_SERVER, one that may not
 * authenticate a client. */
static Client client_cert(const PkiPair *ca, PkiProfile profile, const char *cn, const char *org)
{
        _cleanup_(pki_pair_freep) PkiPair *leaf = NULL;
        static const char *const dns[] = {"prometheus-k8s.openshift-monitoring.svc", NULL};
        PkiCertRequest req = {.profile = profile,
                              .cn = cn,
                              .org = org,
                              .dns = profile == PKI_PROFILE_SERVER ? dns : NULL,
                              .validity = 3600 * USEC_PER_SEC,
                              .key_type = PKI_KEY_ECDSA_P256};
        Client c = {};
        assert_int_equal(pki_cert_issue(ca, &req, now_usec(CLOCK_REALTIME), &leaf), 0);
        assert_int_equal(pki_pair_to_pem(leaf, &c.cert_pem, &c.key_pem), 0);
        return c;
}

static void fetch_start_as(Fetch *f, Serving *s, const char *path, const Client *as, const char *token,
                           char *trust)
{
        _cleanup_free_ char *url = strdup_printf("https://127.0.0.1:%u%s", serving_get_port(s), path);
        HttpTls tls = {.ca_pem = trust,
                       .insecure_skip_verify = !trust,
                       .cert_pem = as ? as->cert_pem : NULL,
                       .key_pem = as ? as->key_pem : NULL};
        *f = (Fetch){.req = http_request_new("GET", url)};
        assert_non_null(f->req);
        http_request_set_timeout(f->req, 20 * USEC_PER_SEC);
        assert_int_equal(http_request_set_tls(f->req, &tls), 0);
        if (token) {
                _cleanup_free_ char *h = strdup_printf("Authorization: Bearer %s", token);
                assert_int_equal(http_request_add_header(f->req, h), 0);
        }
        assert_int_equal(loop_http_start(loop, f->req, on_fetched, f), 0);
}

static void fetch_start(Fetch *f, Serving *s, const char *path, const char *token, char *trust)
{
        fetch_start_as(f, s, path, NULL, token, trust);
}

/* GETs `path` as `as` (NULL: no certificate) and checks the status; the body must hold `want`
 * when given. */
static void expect_as(Serving *s, const char *path, const Client *as, const char *token, long status,
                      const char *want)
{
        Fetch f;
        fetch_start_as(&f, s, path, as, token, ca_pem);
        assert_int_equal(loop_run_until(loop, &f.done, DEADLINE), 0);
        assert_int_equal(f.error, 0);
        const char *body = http_request_get_body(f.req, NULL);
        if (http_request_get_status(f.req) != status || (want && !strstr(strempty(body), want)))
                fail_msg("GET %s: %ld \"%s\", wanted %ld with \"%s\"", path, http_request_get_status(f.req),
                         strempty(body), status, strempty(want));
        if (status == 401)
                assert_string_equal(strempty(http_request_get_header(f.req, "WWW-Authenticate")), "Bearer");
        http_request_unref(f.req);
}

static void expect(Serving *s, const char *path, const char *token, long status, const char *want)
{
        expect_as(s, path, NULL, token, status, want);
}

/* Asks for `path` as `as` every 100 ms until it answers 200 (a listener restarting with new
 * material); false after `tries`. */
static bool answers_ok_soon(Serving *s, const char *path, const Client *as, int tries)
{
        for (int i = 0; i < tries; i++) {
                Fetch f;
                bool never = false;
                fetch_start_as(&f, s, path, as, NULL, ca_pem);
                assert_int_equal(loop_run_until(loop, &f.done, DEADLINE), 0);
                bool ok = f.error == 0 && http_request_get_status(f.req) == 200;
                http_request_unref(f.req);
                if (ok)
                        return true;
                (void) loop_run_until(loop, &never, 100 * USEC_PER_MSEC);
        }
        return false;
}

/* Until the listener verifies client certificates (it restarts then): kube-apiserver's client
 * CA is asked for at once. */
static void wait_client_ca(Serving *s)
{
        for (int i = 0; i < 300 && !serving_has_client_ca(s); i++) {
                bool never = false;
                (void) loop_run_until(loop, &never, 20 * USEC_PER_MSEC);
        }
        assert_true(serving_has_client_ca(s));
}

static Serving *serving(MetricsRegistry *reg)
{
        Serving *s = NULL;
        ServingConfig cfg = {.address = "127.0.0.1",
                             .cert_file = cert_file,
                             .key_file = key_file,
                             .metrics = reg,
                             .reload_period = 200 * USEC_PER_MSEC};
        assert_int_equal(serving_new(loop_get_event(loop), client, &cfg, &s), 0);
        assert_false(serving_is_self_signed(s));
        wait_client_ca(s);
        return s;
}

static MetricsRegistry *registry(void)
{
        MetricsRegistry *reg = metrics_registry_new();
        Metric *m = NULL;
        assert_non_null(reg);
        assert_int_equal(metrics_gauge(reg, &m, "ceo_up", "Up.", NULL), 0);
        assert_int_equal(metrics_set(m, 1, NULL), 0);
        return reg;
}

static void test_who_may_read(void **state)
{
        (void) state;
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        _cleanup_(serving_freep) Serving *s = serving(reg);
        DelegatedAuthStats st;

        expect(s, "/healthz", NULL, 200, "ok");
        expect(s, "/readyz", NULL, 200, "ok");
        expect(s, "/metrics", NULL, 401, "no client certificate and no bearer token");
        expect(s, "/metrics", "not-a-token", 401, "not valid");
        expect(s, "/metrics", token_nobody, 403, "system:serviceaccount:default:nobody");
        expect(s, "/metrics", token_reader, 200, "ceo_up 1");
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.token_reviews, 3); /* not-a-token, nobody, the reader */
        assert_int_equal(st.access_reviews, 2);
        /* Within the 10 s the answers hold, each is given again without asking. */
        for (int i = 0; i < 10; i++) {
                expect(s, "/metrics", token_reader, 200, "ceo_up 1");
                expect(s, "/metrics", token_nobody, 403, "cannot get path \"/metrics\"");
        }
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.token_reviews, 3);
        assert_int_equal(st.cache_hits, 3 + 20); /* a held request asks again once answered */
}

/* Client certificates, as OpenShift's Prometheus scrapes (scrape class
 * tls-client-certificate-auth): verified with the client CA kube-apiserver publishes; Prometheus's
 * user allowed without a review, anyone else as a SubjectAccessReview says; a certificate the CA
 * did not issue, or one that may not authenticate clients, is nobody, and a bearer token beside
 * it is reviewed as without it. */
static void test_client_certificates(void **state)
{
        (void) state;
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        _cleanup_(serving_freep) Serving *s = serving(reg);
        _cleanup_(pki_pair_freep) PkiPair *stranger = NULL;
        DelegatedAuthStats st;

        assert_int_equal(pki_ca_new("not-kube-apiserver's", 3600 * USEC_PER_SEC, PKI_KEY_ECDSA_P256,
                                    now_usec(CLOCK_REALTIME), &stranger),
                         0);
        _cleanup_(client_free) Client prom =
                client_cert(kube_ca, PKI_PROFILE_CLIENT, DELEGATED_AUTH_PROMETHEUS_USER, NULL);
        _cleanup_(client_free) Client reader =
                client_cert(kube_ca, PKI_PROFILE_CLIENT, "ceo-test-cert-reader", "ceo-test-metrics-readers");
        _cleanup_(client_free) Client nobody =
                client_cert(kube_ca, PKI_PROFILE_CLIENT, "ceo-test-cert-nobody", "ceo-test-other-group");
        _cleanup_(client_free) Client forged =
                client_cert(stranger, PKI_PROFILE_CLIENT, DELEGATED_AUTH_PROMETHEUS_USER, NULL);
        _cleanup_(client_free) Client server_only =
                client_cert(kube_ca, PKI_PROFILE_SERVER, DELEGATED_AUTH_PROMETHEUS_USER, NULL);

        expect_as(s, "/metrics", &prom, NULL, 200, "ceo_up 1");
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.local_allows, 1);
        assert_int_equal(st.token_reviews + st.access_reviews, 0); /* kube-apiserver not asked */

        expect_as(s, "/metrics", &reader, NULL, 200, "ceo_up 1"); /* its group may */
        expect_as(s, "/metrics", &nobody, NULL, 403, "user \"ceo-test-cert-nobody\" cannot get path");
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.access_reviews, 2);
        assert_int_equal(st.token_reviews, 0);
        for (int i = 0; i < 5; i++) { /* cached as token answers are */
                expect_as(s, "/metrics", &reader, NULL, 200, "ceo_up 1");
                expect_as(s, "/metrics", &nobody, NULL, 403, "ceo-test-cert-nobody");
                expect_as(s, "/metrics", &prom, NULL, 200, "ceo_up 1");
        }
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.access_reviews, 2);
        assert_int_equal(st.local_allows, 6);

        expect_as(s, "/metrics", &forged, NULL, 401, "not one kube-apiserver's client CA vouches for");
        expect_as(s, "/metrics", &server_only, NULL, 401, "not one kube-apiserver's client CA vouches for");
        expect_as(s, "/metrics", &forged, token_reader, 200, "ceo_up 1");
        expect_as(s, "/metrics", &forged, token_nobody, 403, "system:serviceaccount:default:nobody");
        /* The probes ask for nothing, whoever comes. */
        expect_as(s, "/healthz", &forged, NULL, 200, "ok");
        expect_as(s, "/readyz", &nobody, NULL, 200, "ok");
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.local_allows, 6);
}

/* kube-apiserver's client CA changes (a second CA joins the bundle, as when its signer is
 * rotated; kube-apiserver keeps the union): certificates from the new one are taken once the
 * listener has read the ConfigMap again, and those from the old one still are. */
static void test_client_ca_changes(void **state)
{
        (void) state;
        static const char path[] =
                "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        _cleanup_(serving_freep) Serving *s = serving(reg);
        _cleanup_(pki_pair_freep) PkiPair *next = NULL;
        _cleanup_free_ char *next_crt = NULL, *next_key = NULL, *patch = NULL;
        Result r = {};

        assert_int_equal(pki_ca_new("kube-apiserver-client-signer-next", 3600 * USEC_PER_SEC,
                                    PKI_KEY_ECDSA_P256, now_usec(CLOCK_REALTIME), &next),
                         0);
        assert_int_equal(pki_pair_to_pem(next, &next_crt, &next_key), 0);
        _cleanup_(client_free) Client prom_next =
                client_cert(next, PKI_PROFILE_CLIENT, DELEGATED_AUTH_PROMETHEUS_USER, NULL);
        _cleanup_(client_free) Client prom =
                client_cert(kube_ca, PKI_PROFILE_CLIENT, DELEGATED_AUTH_PROMETHEUS_USER, NULL);
        expect_as(s, "/metrics", &prom_next, NULL, 401, "not one kube-apiserver's client CA vouches for");

        assert_int_equal(kube_call(client, "GET", path, NULL, NULL, on_result, &r, NULL), 0);
        assert_int_equal(loop_run_until(loop, &r.done, DEADLINE), 0);
        assert_int_equal(r.error, 0);
        const char *bundle = json_get_string(r.body, "data.client-ca-file");
        assert_non_null(bundle);
        _cleanup_(cJSON_Deletep) cJSON *body = cJSON_CreateObject();
        cJSON *data = cJSON_AddObjectToObject(body, "data");
        patch = strdup_printf("%s%s", bundle, next_crt);
        assert_non_null(cJSON_AddStringToObject(data, "client-ca-file", patch));
        cJSON_Delete(r.body);
        r = (Result){};
        assert_int_equal(
                kube_call(client, "PATCH", path, body, "application/merge-patch+json", on_result, &r, NULL),
                0);
        assert_int_equal(loop_run_until(loop, &r.done, DEADLINE), 0);
        assert_int_equal(r.error, 0);
        cJSON_Delete(r.body);

        assert_true(answers_ok_soon(s, "/metrics", &prom_next, 100));
        expect_as(s, "/metrics", &prom, NULL, 200, "ceo_up 1");
}

/* Scrapes that arrive together with a token not seen yet wait for one review, and every
 * other request is served meanwhile. */
static void test_one_review_per_token(void **state)
{
        (void) state;
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        _cleanup_(serving_freep) Serving *s = serving(reg);
        Fetch f[6];

        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                fetch_start(&f[i], s, "/metrics", token_reader, ca_pem);
        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                assert_int_equal(loop_run_until(loop, &f[i].done, DEADLINE), 0);
                assert_int_equal(f[i].error, 0);
                assert_int_equal(http_request_get_status(f[i].req), 200);
                http_request_unref(f[i].req);
        }
        DelegatedAuthStats st;
        serving_get_auth_stats(s, &st);
        assert_int_equal(st.token_reviews, 1);
        assert_int_equal(st.access_reviews, 1);
}

/* service-ca renews the certificate: the new one is served from the next read of the files
 * on; a pair that does not load leaves the one before serving. */
static void test_renewed_certificate(void **state)
{
        (void) state;
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        _cleanup_(serving_freep) Serving *s = serving(reg);
        _cleanup_free_ char *old_ca = TAKE_PTR(ca_pem);
        Fetch f;

        new_serving_pair(&ca_pem);
        assert_true(answers_ok_soon(s, "/healthz", NULL, 50));
        fetch_start(&f, s, "/healthz", NULL, old_ca); /* the old CA no longer vouches for it */
        assert_int_equal(loop_run_until(loop, &f.done, DEADLINE), 0);
        assert_int_equal(f.error, -EPROTO);
        http_request_unref(f.req);
        expect(s, "/metrics", token_reader, 200, "ceo_up 1");

        /* A torn write (the key of another pair beside this certificate): the last good pair
         * stays, loudly. */
        _cleanup_free_ char *good_key = NULL, *stray_pem = NULL;
        EVP_PKEY *stray = NULL;
        assert_int_equal(read_full_file(key_file, 1 << 20, &good_key, NULL), 0);
        assert_int_equal(pki_key_new(PKI_KEY_ECDSA_P256, &stray), 0);
        assert_int_equal(pki_key_to_pem(stray, &stray_pem), 0);
        EVP_PKEY_free(stray);
        assert_int_equal(write_file_atomic(key_file, stray_pem, strlen(stray_pem), 0600), 0);
        bool never = false;
        (void) loop_run_until(loop, &never, 600 * USEC_PER_MSEC);
        expect(s, "/healthz", NULL, 200, "ok");
        expect(s, "/metrics", token_reader, 200, "ceo_up 1");
        assert_int_equal(write_file_atomic(key_file, good_key, strlen(good_key), 0600), 0);
}

/* No certificate files (service-ca has not issued it yet): HTTPS all the same, with a
 * certificate of its own that nobody verifies (as the kubelet's probes do not), /metrics
 * still behind the tokens. */
static void test_self_signed(void **state)
{
        (void) state;
        _cleanup_(metrics_registry_freep) MetricsRegistry *reg = registry();
        Serving *s = NULL;
        ServingConfig cfg = {.address = "127.0.0.1", .metrics = reg};
        Fetch f;

        assert_int_equal(serving_new(loop_get_event(loop), client, &cfg, &s), 0);
        assert_true(serving_is_self_signed(s));
        wait_client_ca(s);
        fetch_start(&f, s, "/healthz", NULL, ca_pem); /* service-ca's CA does not vouch for it */
        assert_int_equal(loop_run_until(loop, &f.done, DEADLINE), 0);
        assert_int_equal(f.error, -EPROTO);
        http_request_unref(f.req);
        const char *cases[][2] = {{"/healthz", NULL}, {"/metrics", NULL}, {"/metrics", token_reader}};
        const long want[] = {200, 401, 200};
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                fetch_start(&f, s, cases[i][0], cases[i][1], NULL);
                assert_int_equal(loop_run_until(loop, &f.done, DEADLINE), 0);
                assert_int_equal(f.error, 0);
                assert_int_equal(http_request_get_status(f.req), want[i]);
                http_request_unref(f.req);
        }
        serving_free(s);
}

static int setup(void **state)
{
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;

        (void) state;
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (kube_config_load(NULL, NULL, &cfg, &err) < 0) {
                fprintf(stderr, "KUBECONFIG: %s (run through test/integration/with-kube.sh)\n", err);
                return -1;
        }
        loop = loop_new();
        client = kube_client_new(loop, cfg);
        if (!mkdtemp(dir))
                return -1;
        cert_file = strdup_printf("%s/tls.crt", dir);
        key_file = strdup_printf("%s/tls.key", dir);
        new_serving_pair(&ca_pem);

        /* What the monitoring stack grants Prometheus: get on /metrics (and nothing to nobody). */
        cJSON_Delete(post(
                "/api/v1/namespaces/default/serviceaccounts",
                "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"reader\"}}"));
        cJSON_Delete(post(
                "/api/v1/namespaces/default/serviceaccounts",
                "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"nobody\"}}"));
        cJSON_Delete(post(
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{"
                "\"name\":\"ceo-test-metrics-reader\"},\"rules\":[{\"nonResourceURLs\":[\"/metrics\"],"
                "\"verbs\":[\"get\"]}]}"));
        cJSON_Delete(post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
                          "\"metadata\":{\"name\":\"ceo-test-metrics-reader\"},\"roleRef\":{\"apiGroup\":"
                          "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
                          "\"ceo-test-metrics-reader\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":"
                          "\"reader\",\"namespace\":\"default\"}]}"));
        cJSON_Delete(post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                          "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
                          "\"metadata\":{\"name\":\"ceo-test-metrics-readers\"},\"roleRef\":{\"apiGroup\":"
                          "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
                          "\"ceo-test-metrics-reader\"},\"subjects\":[{\"kind\":\"Group\",\"name\":"
                          "\"ceo-test-metrics-readers\",\"apiGroup\":\"rbac.authorization.k8s.io\"}]}"));
        token_reader = token_for("reader");
        token_nobody = token_for("nobody");

        /* kube-apiserver's client CA, which kube-controller-manager signs client certificates with. */
        _cleanup_free_ char *kube_dir = strdup_printf("%s/kube", strempty(getenv("KUBE_DIR")));
        _cleanup_free_ char *ca_crt_file = strdup_printf("%s/ca.crt", kube_dir);
        _cleanup_free_ char *ca_key_file = strdup_printf("%s/ca.key", kube_dir);
        _cleanup_free_ char *ca_crt = NULL, *ca_key = NULL;
        if (read_full_file(ca_crt_file, 1 << 20, &ca_crt, NULL) < 0 ||
            read_full_file(ca_key_file, 1 << 20, &ca_key, NULL) < 0 ||
            pki_pair_from_pem(ca_crt, ca_key, &kube_ca) < 0) {
                fprintf(stderr, "cannot load kube-apiserver's client CA from %s (KUBE_DIR)\n", kube_dir);
                return -1;
        }
        return 0;
}

static int teardown(void **state)
{
        (void) state;
        (void) unlink(cert_file);
        (void) unlink(key_file);
        (void) rmdir(dir);
        free(cert_file);
        free(key_file);
        free(ca_pem);
        free(token_reader);
        free(token_nobody);
        kube_ca = pki_pair_free(kube_ca);
        client = kube_client_free(client);
        loop = loop_unref(loop);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_who_may_read),        cmocka_unit_test(test_client_certificates),
                cmocka_unit_test(test_client_ca_changes),   cmocka_unit_test(test_one_review_per_token),
                cmocka_unit_test(test_renewed_certificate), cmocka_unit_test(test_self_signed),
        };
        json_hooks_install();
        return cmocka_run_group_tests(tests, setup, teardown);
}
