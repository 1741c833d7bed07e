/* etcd client wiring from informer events. */
#include "etcd-wiring.h"
#include "base/base64.h"
#include "base/contract.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "loop/loop.h"
#include "pki/pki.h"

#define MAX_URLS 16

struct EtcdWiring {
        EtcdClient *client;
        InformerFactory *factory;
        bool tls_from_files;
        bool have_tls;
        /* From files: what they hold, and the CA the client was last given (theirs, then the
         * published etcd-ca-bundle's). */
        char *file_ca, *file_cert, *file_key;
        char *ca_given;
        /* The mounted files, read again every FILES_CHECK_PERIOD: the kubelet replaces a mounted
         * Secret's or ConfigMap's files when the object changes (a signer rotation issues a new
         * etcd-client), and the old client certificate stops working once its signer expires. */
        char *path_ca, *path_cert, *path_key;
        sd_event_source *files_timer;
        char *rejected_cert; /* a certificate on disk refused (no matching key yet), said once */
        char *endpoints_key; /* the last endpoint list set, joined */
        char *aliases_key;   /* the last address aliases set, joined; NULL when none */
};

static Informer *informer(EtcdWiring *w, OperatorWatch k)
{
        const WatchSpec *ws = &operator_watches[k];
        return informer_factory_get(w->factory, ws->res, ws->namespace, ws->label_selector, ws->name);
}

static int add_url(char **urls, size_t *n, const char *ip)
{
        char buf[128];
        if (!ip || !*ip || *n >= MAX_URLS)
                return 0;
        (void) snprintf(buf, sizeof buf, strchr(ip, ':') ? "https://[%s]:2379" : "https://%s:2379", ip);
        if (!etcd_url_is_valid(buf))
                return 0;
        for (size_t i = 0; i < *n; i++)
                if (streq(urls[i], buf))
                        return 0;
        urls[*n] = strdup(buf);
        if (!urls[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* The nodes whose members etcd is reached on: the masters, and an arbiter node's member as a
 * master's (only controlPlaneTopology HighlyAvailableArbiter has arbiter nodes). */
static const OperatorWatch node_watches[] = {W_MASTER_NODES, W_ARBITER_NODES};

static void update_endpoints(EtcdWiring *w)
{
        char *urls[MAX_URLS] = {};
        size_t n = 0;
        const KubeObject *cm = informer_get(informer(w, W_ETCD_CONFIGMAPS), NS_ETCD, CM_ETCD_ENDPOINTS);
        cJSON *v;

        /* Published members first, then the bootstrap member, then the masters as a fallback. */
        JSON_ARRAY_FOREACH (v, cm ? json_get_object(cm->json, "data") : NULL)
                if (json_string(v))
                        (void) add_url(urls, &n, json_string(v));
        const char *bootstrap = kube_object_annotation(cm, BOOTSTRAP_IP_ANNOTATION);
        if (bootstrap)
                (void) add_url(urls, &n, bootstrap);
        for (size_t k = 0; k < ELEMENTSOF(node_watches); k++) {
                _cleanup_free_ const KubeObject **nodes = NULL;
                size_t nn = 0;
                if (informer_list(informer(w, node_watches[k]), &nodes, &nn) >= 0)
                        for (size_t i = 0; i < nn; i++)
                                (void) add_url(urls, &n, node_internal_ip(nodes[i]));
        }

        size_t len = 1;
        for (size_t i = 0; i < n; i++)
                len += strlen(urls[i]) + 1;
        _cleanup_free_ char *key = calloc(1, len);
        for (size_t i = 0; key && i < n; i++) {
                strcat(key, urls[i]);
                strcat(key, ",");
        }
        if (key && n > 0 && !streq_ptr(key, w->endpoints_key)) {
                if (etcd_client_set_endpoints(w->client, urls, n) >= 0) {
                        log_info("etcd endpoints: %s", key);
                        free(w->endpoints_key);
                        w->endpoints_key = TAKE_PTR(key);
                }
        }
        for (size_t i = 0; i < n; i++)
                free(urls[i]);
}

/* Masters whose Node has an address their etcd's certificate does not name yet
 * (the cluster moved; a quorum restore brought etcd back on the new address with
 * the certificate of the revision the node runs): requests to the new address
 * verify the certificate against the address it names, so the operator reaches
 * the member, updates its peer URL and rolls out certificates for the new
 * address (docs/runbooks/address-change.md). */
static const KubeObject *etcd_secret(const char *name, void *userdata)
{
        EtcdWiring *w = userdata;
        return informer_get(informer(w, W_ETCD_SECRETS), NS_ETCD, name);
}

static void update_aliases(EtcdWiring *w)
{
        EtcdAddressAlias aliases[MAX_URLS] = {};
        size_t n = 0;
        const KubeObject *cr = informer_get(informer(w, W_ETCD_CR), NULL, "cluster");
        _cleanup_free_ char *key = NULL;

        for (size_t k = 0; k < ELEMENTSOF(node_watches); k++) {
                _cleanup_free_ const KubeObject **nodes = NULL;
                size_t nn = 0;
                if (informer_list(informer(w, node_watches[k]), &nodes, &nn) < 0)
                        return;
                for (size_t i = 0; i < nn && n < ELEMENTSOF(aliases); i++)
                        n += node_address_alias(cr, nodes[i], etcd_secret, w, &aliases[n]) > 0;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *k = strdup_printf("%s%s%s as %s", strempty(key), i ? ", " : "",
                                                       aliases[i].serves_on, aliases[i].named);
                if (!k)
                        return;
                free(key);
                key = TAKE_PTR(k);
        }
        if (streq_ptr(key, w->aliases_key) || (!key && !w->aliases_key))
                return;
        if (etcd_client_set_aliases(w->client, aliases, n) < 0)
                return;
        if (n)
                log_info("etcd: reaching moved masters' members at their new addresses, each verified as "
                         "the address its certificate names: %s",
                         key);
        else
                log_info("etcd: every master's member is reached at the address its certificate names");
        free(w->aliases_key);
        w->aliases_key = TAKE_PTR(key);
}

/* With credentials from files, the client also trusts the signers openshift-etcd/etcd-ca-bundle
 * publishes: the mounted CA file is a copy of that bundle which the kubelet refreshes up to a
 * minute or more after it changes, and until then the members' certificates of a new signer
 * would fail verification. The bundle is what every member already trusts; the client
 * certificate stays the file's. */
static void update_tls_from_files(EtcdWiring *w)
{
        const char *published = object_data_string(
                informer_get(informer(w, W_ETCD_CONFIGMAPS), NS_ETCD, CM_ETCD_CA_BUNDLE), "ca-bundle.crt");
        _cleanup_free_ char *merged = published && *published
                                              ? strdup_printf("%s\n%s", w->file_ca, published)
                                              : strdup(w->file_ca);
        if (!merged || streq_ptr(merged, w->ca_given))
                return;
        HttpTls tls = {.ca_pem = merged, .cert_pem = w->file_cert, .key_pem = w->file_key};
        if (etcd_client_set_tls(w->client, &tls) < 0)
                return;
        if (published && *published)
                log_info("etcd client trusts its CA file and the signers of %s/%s", NS_ETCD,
                         CM_ETCD_CA_BUNDLE);
        free(w->ca_given);
        w->ca_given = TAKE_PTR(merged);
}

/* The CA bundle, certificate and key files, read whole (4 MiB at most each); on a failure
 * nothing is returned (the key is read last, so no part of it is left behind). */
static int read_credential_files(const char *path_ca, const char *path_cert, const char *path_key,
                                 char **ret_ca, char **ret_cert, char **ret_key)
{
        _cleanup_free_ char *ca = NULL, *crt = NULL, *key = NULL;
        int r;

        if ((r = read_full_file(path_ca, 4u << 20, &ca, NULL)) < 0 ||
            (r = read_full_file(path_cert, 4u << 20, &crt, NULL)) < 0 ||
            (r = read_full_file(path_key, 4u << 20, &key, NULL)) < 0)
                return r;
        *ret_ca = TAKE_PTR(ca);
        *ret_cert = TAKE_PTR(crt);
        *ret_key = TAKE_PTR(key);
        return 0;
}

/* Reads the mounted files again; takes what changed. 1: the client's credentials changed; 0:
 * nothing did; < 0: the files could not be read or the certificate and key on disk do not
 * belong together (the kubelet swaps them together, a copy made file by file may be caught
 * half way): the client keeps what it had and the next check tries again. */
int etcd_wiring_reload_files(EtcdWiring *w)
{
        _cleanup_free_ char *ca = NULL, *crt = NULL, *key = NULL;
        int r;

        assert_return(w, -EINVAL);
        if (!w->tls_from_files)
                return 0;
        if ((r = read_credential_files(w->path_ca, w->path_cert, w->path_key, &ca, &crt, &key)) < 0)
                return r;
        bool pair_changed = !streq(crt, w->file_cert) || !streq(key, w->file_key);
        bool ca_changed = !streq(ca, w->file_ca);
        if (pair_changed) {
                _cleanup_(pki_pair_freep) PkiPair *p = NULL;
                r = pki_pair_from_pem(crt, key, &p);
                if (r < 0) {
                        if (!streq_ptr(crt, w->rejected_cert)) {
                                log_warning_errno(r,
                                                  "etcd client: %s changed but does not match %s; keeping "
                                                  "the certificate in use until they match",
                                                  w->path_cert, w->path_key);
                                free(w->rejected_cert);
                                w->rejected_cert = TAKE_PTR(crt);
                        }
                        explicit_bzero(key, strlen(key));
                        return r;
                }
                w->rejected_cert = mfree(w->rejected_cert);
                free(w->file_cert);
                w->file_cert = TAKE_PTR(crt);
                explicit_bzero(w->file_key, strlen(w->file_key));
                free(w->file_key);
                w->file_key = TAKE_PTR(key);
                log_info("etcd client: the certificate in %s changed; using it from now on", w->path_cert);
        } else
                explicit_bzero(key, strlen(key));
        if (ca_changed) {
                free(w->file_ca);
                w->file_ca = TAKE_PTR(ca);
                log_info("etcd client: the CA bundle in %s changed; trusting it from now on", w->path_ca);
        }
        if (!pair_changed && !ca_changed)
                return 0;
        w->ca_given = mfree(w->ca_given); /* given again, with the new material */
        update_tls_from_files(w);
        return w->ca_given ? 1 : -EIO;
}

#define FILES_CHECK_PERIOD (10 * USEC_PER_SEC)

static int on_files_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void) etcd_wiring_reload_files(userdata);
        int r = sd_event_source_set_time(s, usec + FILES_CHECK_PERIOD);
        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static void update_tls(EtcdWiring *w)
{
        if (w->tls_from_files) {
                update_tls_from_files(w);
                return;
        }
        const KubeObject *sec = informer_get(informer(w, W_ETCD_SECRETS), NS_ETCD, SECRET_ETCD_CLIENT);
        const KubeObject *ca = informer_get(informer(w, W_ETCD_CONFIGMAPS), NS_ETCD, CM_ETCD_CA_BUNDLE);
        cJSON *data = sec ? json_get_object(sec->json, "data") : NULL;
        cJSON *c = data ? cJSON_GetObjectItemCaseSensitive(data, "tls.crt") : NULL;
        cJSON *k = data ? cJSON_GetObjectItemCaseSensitive(data, "tls.key") : NULL;
        cJSON *cad = ca ? json_get_object(ca->json, "data") : NULL;
        cJSON *b = cad ? cJSON_GetObjectItemCaseSensitive(cad, "ca-bundle.crt") : NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL;

        if (!json_string(c) || !json_string(k) || !json_string(b))
                return;
        if (base64_decode(json_string(c), &crt, NULL) < 0 || base64_decode(json_string(k), &key, NULL) < 0)
                return;
        HttpTls tls = {.ca_pem = b->valuestring, .cert_pem = crt, .key_pem = key};
        if (etcd_client_set_tls(w->client, &tls) >= 0) {
                if (!w->have_tls)
                        log_info("etcd client credentials taken from openshift-etcd/etcd-client");
                w->have_tls = true;
        }
        explicit_bzero(key, strlen(key));
}

static void on_event(Informer *inf, InformerEvent ev, const KubeObject *old, const KubeObject *obj,
                     void *userdata)
{
        EtcdWiring *w = userdata;
        (void) inf;
        (void) ev;
        (void) old;
        (void) obj;
        update_endpoints(w);
        update_aliases(w);
        update_tls(w);
}

int etcd_wiring_new(EtcdClient *c, InformerFactory *f, const EtcdWiringFiles *files, EtcdWiring **ret)
{
        _cleanup_(etcd_wiring_freep) EtcdWiring *w = calloc(1, sizeof *w);
        int r;

        if (!w)
                return -ENOMEM;
        w->client = c;
        w->factory = f;
        if (files && files->ca && files->cert && files->key && access(files->ca, R_OK) == 0 &&
            access(files->cert, R_OK) == 0 && access(files->key, R_OK) == 0) {
                _cleanup_free_ char *ca = NULL, *crt = NULL, *key = NULL;
                if ((r = read_credential_files(files->ca, files->cert, files->key, &ca, &crt, &key)) < 0)
                        return r;
                HttpTls tls = {.ca_pem = ca, .cert_pem = crt, .key_pem = key};
                r = etcd_client_set_tls(c, &tls);
                if (r < 0) {
                        explicit_bzero(key, strlen(key));
                        return r;
                }
                w->file_ca = TAKE_PTR(ca);
                w->file_cert = TAKE_PTR(crt);
                w->file_key = TAKE_PTR(key);
                w->path_ca = strdup(files->ca);
                w->path_cert = strdup(files->cert);
                w->path_key = strdup(files->key);
                if (!w->path_ca || !w->path_cert || !w->path_key)
                        return -ENOMEM;
                w->tls_from_files = w->have_tls = true;
                Loop *loop = etcd_client_get_loop(c);
                if (loop) {
                        r = sd_event_add_time_relative(loop_get_event(loop), &w->files_timer,
                                                       CLOCK_MONOTONIC, FILES_CHECK_PERIOD, USEC_PER_SEC,
                                                       on_files_timer, w);
                        if (r < 0)
                                return r;
                }
                log_info("etcd client credentials from %s", files->cert);
        }
        static const OperatorWatch watched[] = {W_ETCD_CONFIGMAPS, W_ETCD_SECRETS, W_MASTER_NODES,
                                                W_ARBITER_NODES, W_ETCD_CR};
        for (size_t i = 0; i < ELEMENTSOF(watched); i++) {
                Informer *inf = informer(w, watched[i]);
                if (!inf)
                        return -ENOMEM;
                r = informer_add_handler(inf, on_event, w);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(w);
        return 0;
}

EtcdWiring *etcd_wiring_free(EtcdWiring *w)
{
        if (!w)
                return NULL;
        free(w->endpoints_key);
        free(w->aliases_key);
        free(w->file_ca);
        free(w->file_cert);
        if (w->file_key)
                explicit_bzero(w->file_key, strlen(w->file_key));
        free(w->file_key);
        free(w->ca_given);
        free(w->path_ca);
        free(w->path_cert);
        free(w->path_key);
        free(w->rejected_cert);
        sd_event_source_disable_unref(w->files_timer);
        return mfree(w);
}

bool etcd_wiring_ready(EtcdWiring *w)
{
        return w && w->have_tls && w->endpoints_key;
}
