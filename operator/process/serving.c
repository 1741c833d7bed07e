/* The operator's HTTPS endpoint with delegated auth and certificate reload (serving.h). */
#include <unistd.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "pki/pki.h"
#include "serving.h"

#define RELOAD_PERIOD (30 * USEC_PER_SEC)
/* kube-apiserver publishes its client CA here (library-go's delegated authentication reads it
 * so; the bootstrap Role extension-apiserver-authentication-reader and ours may get it). */
#define CLIENT_CA_PATH       "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
#define CLIENT_CA_KEY        "client-ca-file"
#define PEM_MAX              (256 * 1024)
#define SELF_SIGNED_VALIDITY (365 * 24 * 3600 * USEC_PER_SEC)

struct Serving {
        sd_event *event;
        KubeClient *client;
        ServingConfig cfg; /* strings borrowed from the caller's flags */
        HttpServer *http;
        DelegatedAuth *auth;
        sd_event_source *reload;
        sd_event_source *ca_timer;
        KubeCall *ca_call;
        char *cert_pem, *key_pem; /* what the listener serves now */
        char *client_ca;          /* the client CA it verifies certificates with; NULL: none yet */
        char *rejected;           /* the certificate of the last pair that did not load */
        char *rejected_ca;        /* the last client CA that did not load */
        int ca_error;             /* the last fetch's, said once per change */
};

static void wipe_free(char *p)
{
        if (p) {
                explicit_bzero(p, strlen(p));
                free(p);
        }
}

static void on_settled(void *userdata)
{
        Serving *s = userdata;
        http_server_auth_settled(s->http);
}

/* A listener with this material (NULL: plain HTTP; no client CA: no certificates asked for);
 * the old one must be gone already. */
static int listen_with(Serving *s, const char *cert_pem, const char *key_pem, const char *client_ca)
{
        HttpServerConfig hc = {.address = s->cfg.address,
                               .port = s->cfg.port,
                               .tls_cert_pem = cert_pem,
                               .tls_key_pem = key_pem,
                               .client_ca_pem = client_ca};
        int r = http_server_new(s->event, &hc, &s->http);
        if (r < 0)
                return r;
        http_server_set_metrics(s->http, s->cfg.metrics);
        http_server_set_ready(s->http, s->cfg.ready, s->cfg.userdata);
        http_server_set_live(s->http, s->cfg.live, s->cfg.userdata);
        http_server_set_metrics_auth(s->http, delegated_auth_check, s->auth);
        return 0;
}

static int read_pair(const ServingConfig *cfg, char **ret_cert, char **ret_key)
{
        _cleanup_free_ char *cert = NULL;
        char *key = NULL;
        int r = read_full_file(cfg->cert_file, PEM_MAX, &cert, NULL);
        if (r < 0)
                return r;
        r = read_full_file(cfg->key_file, PEM_MAX, &key, NULL);
        if (r < 0)
                return r;
        *ret_cert = TAKE_PTR(cert);
        *ret_key = key;
        return 0;
}

/* The listener again with this material; when it does not load, again with what it had. */
static int relisten(Serving *s, const char *cert, const char *key, const char *client_ca)
{
        s->http = http_server_free(s->http);
        int r = listen_with(s, cert, key, client_ca);
        if (r >= 0)
                return 0;
        int k = listen_with(s, s->cert_pem, s->key_pem, s->client_ca);
        if (k < 0)
                log_error_errno(k,
                                "cannot listen on port %u again: /healthz, /readyz and /metrics are not "
                                "served until the next try in %" PRIu64 " s",
                                s->cfg.port, s->cfg.reload_period / USEC_PER_SEC);
        return r;
}

static int on_reload(sd_event_source *src, uint64_t usec, void *userdata)
{
        Serving *s = userdata;
        _cleanup_free_ char *cert = NULL;
        char *key = NULL;

        (void) sd_event_source_set_time(src, usec + s->cfg.reload_period);
        int r = read_pair(&s->cfg, &cert, &key);
        if (r < 0) {
                log_warning_errno(
                        r, "cannot read the serving certificate %s or key %s; serving the one loaded before",
                        s->cfg.cert_file, s->cfg.key_file);
                return 0;
        }
        if (streq(cert, s->cert_pem) && streq(key, s->key_pem)) {
                wipe_free(key);
                return 0;
        }
        /* A pair that does not go together (service-ca writes the two files one after the
         * other) or does not parse: the listener stays as it is, said once per such pair. */
        _cleanup_(pki_pair_freep) PkiPair *pair = NULL;
        r = pki_pair_from_pem(cert, key, &pair);
        if (r < 0) {
                if (!streq_ptr(s->rejected, cert))
                        log_error_errno(
                                r,
                                "the serving certificate %s and key %s do not load together; serving "
                                "the ones loaded before",
                                s->cfg.cert_file, s->cfg.key_file);
                free(s->rejected);
                s->rejected = TAKE_PTR(cert);
                wipe_free(key);
                return 0;
        }
        s->rejected = mfree(s->rejected);
        log_info("the serving certificate %s changed: serving it from now on", s->cfg.cert_file);
        r = relisten(s, cert, key, s->client_ca);
        if (r < 0) {
                log_error_errno(
                        r, "the new serving certificate %s and key %s do not load; serving the old ones",
                        s->cfg.cert_file, s->cfg.key_file);
                wipe_free(key);
                return 0;
        }
        free(s->cert_pem);
        wipe_free(s->key_pem);
        s->cert_pem = TAKE_PTR(cert);
        s->key_pem = key;
        return 0;
}

/* kube-apiserver's client CA as it publishes it now: a changed one is the listener's from now on
 * (it restarts). Kept as it is while kube-apiserver cannot be reached: Prometheus's scrapes need
 * nothing of it then. */
static void on_client_ca(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Serving *s = userdata;
        const char *pem = NULL;
        int r;

        (void) c;
        s->ca_call = NULL;
        if (resp->error == -ECANCELED)
                return;
        if (resp->error >= 0)
                pem = json_get_string(resp->body, "data." CLIENT_CA_KEY);
        r = resp->error < 0 ? resp->error : !pem || !*pem ? -ENODATA : 0;
        if (r < 0) {
                if (r != s->ca_error)
                        log_warning("cannot read kube-apiserver's client CA (configmap "
                                    "kube-system/extension-apiserver-authentication, key %s): %s; %s",
                                    CLIENT_CA_KEY, r == -ENODATA ? "it has none" : kube_strerror(r),
                                    s->client_ca ? "verifying client certificates with the one read before"
                                                 : "/metrics takes bearer tokens only until it can");
                s->ca_error = r;
                return;
        }
        s->ca_error = 0;
        if (streq_ptr(pem, s->client_ca) || streq_ptr(pem, s->rejected_ca))
                return;
        _cleanup_free_ char *ca = strdup(pem);
        if (!ca)
                return;
        r = relisten(s, s->cert_pem, s->key_pem, ca);
        if (r < 0) {
                log_error_errno(r,
                                "kube-apiserver's client CA (configmap "
                                "kube-system/extension-apiserver-authentication) does not load; %s",
                                s->client_ca ? "verifying client certificates with the one read before"
                                             : "/metrics takes bearer tokens only");
                free(s->rejected_ca);
                s->rejected_ca = TAKE_PTR(ca);
                return;
        }
        if (s->client_ca)
                log_info("kube-apiserver's client CA changed: verifying client certificates with the new "
                         "one");
        else
                log_info("kube-apiserver's client CA read: /metrics takes client certificates it issued");
        s->rejected_ca = mfree(s->rejected_ca);
        free(s->client_ca);
        s->client_ca = TAKE_PTR(ca);
}

static int on_ca_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
        Serving *s = userdata;

        (void) sd_event_source_set_time(src, usec + s->cfg.reload_period);
        /* A restart that could not listen again, with the new material or the old (the port
         * taken meanwhile): try again each period, whatever changes or not. */
        if (!s->http) {
                int k = listen_with(s, s->cert_pem, s->key_pem, s->client_ca);
                if (k < 0)
                        log_error_errno(k,
                                        "cannot listen on port %u again: /healthz, /readyz and /metrics are "
                                        "not served until the next try",
                                        s->cfg.port);
                else
                        log_info("listening on port %u again", s->cfg.port);
        }
        if (s->ca_call)
                return 0;
        int r = kube_call(s->client, "GET", CLIENT_CA_PATH, NULL, NULL, on_client_ca, s, &s->ca_call);
        if (r < 0) {
                s->ca_call = NULL;
                log_debug_errno(r, "cannot ask for kube-apiserver's client CA");
        }
        return 0;
}

/* Without service-ca's files, as library-go's controllercmd: a certificate of our own, made
 * now, for the names the operator is reached at. Nobody can verify it (the kubelet's HTTPS
 * probes do not); it keeps bearer tokens off the wire in clear text until service-ca's comes. */
static int self_signed(const char *address, char **ret_cert, char **ret_key)
{
        _cleanup_(pki_pair_freep) PkiPair *ca = NULL, *leaf = NULL;
        char host[256] = "";
        const char *dns[3] = {"localhost"}, *ips[4] = {"127.0.0.1", "::1"}; /* NULL-terminated */
        usec_t now = now_usec(CLOCK_REALTIME);
        int r;

        if (gethostname(host, sizeof host - 1) == 0 && pki_san_dns_name_is_valid(host) &&
            !streq(host, "localhost"))
                dns[1] = host;
        if (address && !streq(address, "0.0.0.0") && !streq(address, "::") && !streq(address, "127.0.0.1") &&
            !streq(address, "::1"))
                ips[2] = address;
        r = pki_ca_new("cluster-etcd-operator-self-signed-signer", SELF_SIGNED_VALIDITY, PKI_KEY_ECDSA_P256,
                       now, &ca);
        if (r < 0)
                return r;
        PkiCertRequest req = {.profile = PKI_PROFILE_SERVER,
                              .cn = "cluster-etcd-operator",
                              .dns = dns,
                              .ips = ips,
                              .validity = SELF_SIGNED_VALIDITY,
                              .key_type = PKI_KEY_ECDSA_P256};
        r = pki_cert_issue(ca, &req, now, &leaf);
        if (r < 0)
                return r;
        return pki_pair_to_pem(leaf, ret_cert, ret_key);
}

int serving_new(sd_event *e, KubeClient *client, const ServingConfig *cfg, Serving **ret)
{
        assert_return(e && client && cfg && ret, -EINVAL);
        assert_return(!cfg->cert_file == !cfg->key_file, -EINVAL);

        _cleanup_(serving_freep) Serving *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(e);
        s->client = client;
        s->cfg = *cfg;
        if (s->cfg.reload_period == 0)
                s->cfg.reload_period = RELOAD_PERIOD;
        int r;
        s->auth = delegated_auth_new(client, "/metrics", on_settled, s);
        if (!s->auth)
                return -ENOMEM;
        if (!cfg->cert_file) {
                if ((r = self_signed(cfg->address, &s->cert_pem, &s->key_pem)) < 0)
                        return r;
        } else {
                if ((r = read_pair(cfg, &s->cert_pem, &s->key_pem)) < 0)
                        return r;
                r = sd_event_add_time_relative(e, &s->reload, CLOCK_MONOTONIC, s->cfg.reload_period,
                                               USEC_PER_MSEC, on_reload, s);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_enabled(s->reload, SD_EVENT_ON);
        }
        if ((r = listen_with(s, s->cert_pem, s->key_pem, NULL)) < 0)
                return r;
        s->cfg.port = http_server_get_port(s->http); /* a restart after a reload takes the same one */
        /* The client CA at once, then as often as the files. */
        r = sd_event_add_time(e, &s->ca_timer, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_ca_timer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(s->ca_timer, SD_EVENT_ON);
        *ret = TAKE_PTR(s);
        return 0;
}

Serving *serving_free(Serving *s)
{
        if (!s)
                return NULL;
        s->reload = sd_event_source_disable_unref(s->reload);
        s->ca_timer = sd_event_source_disable_unref(s->ca_timer);
        if (s->ca_call)
                kube_call_cancel(s->ca_call);
        s->http = http_server_free(s->http);
        s->auth = delegated_auth_free(s->auth);
        free(s->cert_pem);
        free(s->client_ca);
        free(s->rejected);
        free(s->rejected_ca);
        wipe_free(s->key_pem);
        sd_event_unref(s->event);
        return mfree(s);
}

uint16_t serving_get_port(Serving *s)
{
        return s ? http_server_get_port(s->http) : 0;
}

bool serving_is_self_signed(Serving *s)
{
        return s && !s->cfg.cert_file;
}

bool serving_has_client_ca(Serving *s)
{
        return s && s->client_ca;
}

void serving_get_auth_stats(Serving *s, DelegatedAuthStats *ret)
{
        delegated_auth_get_stats(s ? s->auth : NULL, ret);
}
