/* EtcdCertSignerController: owns the TLS material in openshift-etcd (the
 * contract's "Certificates" table). The two signers are created only when
 * missing and rotated in two phases: a new signer replaces the secret and
 * joins the CA bundle next to the old one; the leaf certificates it signed
 * stay until every master runs a revision whose etcd-all-bundles trusts the
 * new signer, and only then are re-issued from it. Leaves are (re)issued
 * only when missing or judged wrong by pki_cert_check (SANs after an IP
 * change, signer, expiry, key), at most CERTS_PER_SYNC per sync so key
 * generation never holds the loop long; the rest are requeued. The
 * aggregates (etcd-all-certs, etcd-all-bundles) are what revisions snapshot:
 * etcd-all-certs is written only once nothing is left to issue, so a
 * scale-up or a rotation becomes one change and one rollout. Every write is
 * a create or an update under the cached resourceVersion: a stale cache
 * fails with a conflict instead of overwriting what we have not seen. */

#include "base/base64.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "pki/keypool.h"
#include "pki/pki.h"
#include "render/certs.h"

#define CERTS_PER_SYNC     3U
#define PENDING_REQUEUE    (500 * USEC_PER_MSEC)
#define MAX_NODE_IPS       16
#define CERT_SIGNER_RESYNC (60 * USEC_PER_SEC)

typedef struct SignerSpec {
        const char *secret, *bundle, *all_bundles_key;
} SignerSpec;

static const SignerSpec signer_specs[_CERT_SIGNER_MAX] = {
        [CERT_SIGNER_ETCD] = {SECRET_ETCD_SIGNER, CM_ETCD_CA_BUNDLE, "server-ca-bundle.crt"},
        [CERT_SIGNER_METRIC] = {SECRET_ETCD_METRIC_SIGNER, CM_ETCD_METRICS_CA_BUNDLE,
                                "metrics-ca-bundle.crt"},
};

const char *const cert_signer_names[] = {SECRET_ETCD_SIGNER, SECRET_ETCD_METRIC_SIGNER, NULL};
/* Upstream's label values of openshift_etcd_operator_signer_expiration_days for those two. */
const char *const cert_signer_metric_labels[] = {"signer-ca", "metrics-signer-ca", NULL};

typedef struct Signer {
        const SignerSpec *spec;
        char *cert_pem; /* the current signer certificate, when it parses */
        PkiPair *pair;  /* set when it may sign: valid, a CA, not expiring */
        char *bundle;   /* desired ca-bundle.crt: published bundle + signer, expired dropped */
        bool ready;     /* pair set and the published bundle trusts it */
        int rolled_out; /* every master runs a revision whose etcd-all-bundles trusts it; -1: not known yet
                         */
} Signer;

typedef struct Sync {
        const SyncContext *ctx;
        Plan *p;
        PkiKeyType key_type;
        KeyPool *keys; /* pre-generated keys (NULL: generate in the sync, as tests do) */
        PkiCheckMemo *memo;
        unsigned budget;
        bool settled; /* nothing issued or left to issue: etcd-all-certs may be written */
        const KubeObject **nodes;
        size_t n_nodes;
        Signer signers[ELEMENTSOF(signer_specs)];
        cJSON *all_certs; /* data of etcd-all-certs */
} Sync;

static void sync_done(Sync *s)
{
        for (size_t i = 0; i < ELEMENTSOF(s->signers); i++) {
                free(s->signers[i].cert_pem);
                pki_pair_free(s->signers[i].pair);
                free(s->signers[i].bundle);
        }
        cJSON_Delete(s->all_certs);
        free(s->nodes);
}

static void erase_freep(char **p)
{
        if (*p)
                explicit_bzero(*p, strlen(*p));
        free(*p);
}
#define _cleanup_erase_ _cleanup_(erase_freep)

/* tls.crt and tls.key of a secret, decoded; -ENODATA when either is absent. */
static int secret_pems(const KubeObject *o, char **ret_crt, char **ret_key)
{
        const char *c = object_data_string(o, "tls.crt"), *k = object_data_string(o, "tls.key");
        _cleanup_free_ char *crt = NULL;
        _cleanup_erase_ char *key = NULL;
        int r;

        if (!c || !k)
                return -ENODATA;
        if ((r = base64_decode(c, &crt, NULL)) < 0 || (r = base64_decode(k, &key, NULL)) < 0)
                return r;
        *ret_crt = TAKE_PTR(crt);
        *ret_key = TAKE_PTR(key);
        return 0;
}

/* The data member of a tls secret (base64 encoded), NULL on OOM. */
static cJSON *tls_data(const char *crt, const char *key)
{
        _cleanup_free_ char *c = base64_encode(crt, strlen(crt));
        _cleanup_erase_ char *k = base64_encode(key, strlen(key));
        _cleanup_(cJSON_Deletep) cJSON *d = cJSON_CreateObject();
        if (!c || !k || !d || !cJSON_AddStringToObject(d, "tls.crt", c) ||
            !cJSON_AddStringToObject(d, "tls.key", k))
                return NULL;
        return TAKE_PTR(d);
}

static bool differs(const KubeObject *old, const char *type, const cJSON *data)
{
        return !old || (type && !streq_ptr(json_get_string(old->json, "type"), type)) ||
               !cJSON_Compare(data, json_get_object(old->json, "data"), true);
}

/* What write_object() puts in an object's metadata besides its data. */
typedef enum Meta {
        META_CERT,      /* a Secret holding a certificate: library-go's certificate annotations */
        META_BUNDLE,    /* a CA bundle ConfigMap: owner, description, the ca-bundle label */
        META_AGGREGATE, /* etcd-all-certs, etcd-all-bundles: upstream's owner "Etcd" */
} Meta;

/* Plans `old` with data (taken) and type replaced, keeping its other
 * metadata, under its resourceVersion; or creates it. A secret's type is
 * immutable: another type means delete and create. `meta` says what goes in
 * its metadata (META_CERT: from certificate `crt`). */
static void write_object(Sync *s, const KubeResource *res, const KubeObject *old, const char *name,
                         const char *type, cJSON *data, const char *crt, Meta meta)
{
        _cleanup_(cJSON_Deletep) cJSON *d = data, *o = NULL;
        int r;

        if (old && type && !streq_ptr(json_get_string(old->json, "type"), type)) {
                plan_delete(s->p, res, NS_ETCD, name, kube_object_uid(old));
                old = NULL;
        }
        o = old ? cJSON_Duplicate(old->json, true) : kube_object_skeleton(res, NS_ETCD, name);
        if (!o || !d) {
                s->p->error = -ENOMEM;
                return;
        }
        if (type && json_set_string(o, "type", type) < 0) {
                s->p->error = -ENOMEM;
                return;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(o, "data");
        cJSON_AddItemToObject(o, "data", TAKE_PTR(d));
        r = meta == META_BUNDLE      ? cert_bundle_metadata_set(o, name)
            : meta == META_AGGREGATE ? cert_aggregate_metadata_set(o)
            : crt                    ? cert_annotations_set(o, name, crt)
                                     : 0;
        if (r < 0) {
                s->p->error = r;
                return;
        }
        if (old)
                plan_update(s->p, res, o);
        else
                plan_create(s->p, res, o);
}

static bool take_budget(Sync *s)
{
        s->settled = false;
        if (s->budget == 0) {
                plan_requeue_after(s->p, PENDING_REQUEUE);
                return false;
        }
        s->budget--;
        plan_requeue_after(s->p, PENDING_REQUEUE);
        return true;
}

/* A key for the next certificate: from the pool when there is one, so the
 * sync signs but never generates RSA keys on the loop thread. 0 and *ret
 * NULL: the pool is empty; its ready callback enqueues us again. */
static int get_key(Sync *s, const char *what, EVP_PKEY **ret)
{
        int r = s->keys ? key_pool_take(s->keys, s->key_type, ret) : -EMEDIUMTYPE;

        if (r == -EAGAIN) {
                log_debug("%s: waiting for a pre-generated %s key", what,
                          pki_key_type_to_string(s->key_type));
                s->budget = 0;
                *ret = NULL;
                return 0;
        }
        if (r == -EMEDIUMTYPE)
                r = pki_key_new(s->key_type, ret);
        return r < 0 ? log_error_errno(r, "%s: cannot get a private key", what) : 0;
}

/* ---- signers ---- */

/* `warning`: the old signer was unusable, not merely expiring. */
static int new_signer(Sync *s, Signer *sg, const KubeObject *old, bool warning, const char *why)
{
        _cleanup_(pki_pair_freep) PkiPair *ca = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        _cleanup_free_ char *crt = NULL;
        _cleanup_erase_ char *key = NULL;
        char cn[128];
        int r;

        if (!take_budget(s))
                return 0;
        if ((r = get_key(s, sg->spec->secret, &k)) < 0 || !k)
                return r;
        /* Signer names carry the creation time, as upstream's (and render's) do. */
        (void) snprintf(cn, sizeof cn, "openshift-etcd_%s@%llu", sg->spec->secret,
                        (unsigned long long) (s->ctx->now / USEC_PER_SEC));
        if ((r = pki_ca_new_with_key(cn, PKI_SIGNER_VALIDITY, k, s->ctx->now, &ca)) < 0 ||
            (r = pki_pair_to_pem(ca, &crt, &key)) < 0)
                return log_error_errno(r, "%s: cannot create a signer", sg->spec->secret);
        log_info("%s: %s, %s %s", sg->spec->secret, why, old ? "rotating to" : "creating", cn);
        plan_event(s->p, warning, old ? "SignerRotated" : "SignerCreated", "%s: %s, new signer %s",
                   sg->spec->secret, why, cn);
        write_object(s, &KUBE_SECRETS, old, sg->spec->secret, "kubernetes.io/tls", tls_data(crt, key), crt,
                     META_CERT);
        return 0;
}

/* A certificate Secret that is kept but lacks its annotations (one render or an older
 * operator wrote) gets them, its data unchanged. */
static void annotate_kept(Sync *s, const KubeObject *sec, const char *crt)
{
        if (!sec || cert_annotations_current(sec->json, crt))
                return;
        cJSON *d = cJSON_Duplicate(json_get_object(sec->json, "data"), true);
        log_info("%s: adding the certificate annotations", sec->name);
        write_object(s, &KUBE_SECRETS, sec, sec->name, NULL, d, crt, META_CERT);
}

/* Whether every master runs a revision whose etcd-all-bundles holds the
 * signer; computed once per sync, and only when a leaf asks. */
static bool rolled_out(Sync *s, Signer *sg)
{
        const KubeObject *cr = op_etcd_cr(s->ctx);
        const KubeObject *const *nodes = s->nodes;

        if (sg->rolled_out >= 0)
                return sg->rolled_out;
        sg->rolled_out = false;
        for (size_t i = 0; nodes && i < s->n_nodes; i++) {
                const char *node = nodes[i] ? nodes[i]->name : NULL;
                uint64_t rev = 0;
                cJSON *ns;
                JSON_ARRAY_FOREACH (ns, cr ? json_get_array(cr->json, "status.nodeStatuses") : NULL)
                        if (streq_ptr(json_get_string(ns, "nodeName"), node))
                                (void) json_get_uint64(ns, "currentRevision", &rev);
                char name[64];
                (void) snprintf(name, sizeof name, "etcd-all-bundles-%llu", (unsigned long long) rev);
                const KubeObject *cm = rev ? op_get(s->ctx, W_ETCD_CONFIGMAPS, NS_ETCD, name) : NULL;
                const char *b = object_data_string(cm, sg->spec->all_bundles_key);
                if (!b || pki_bundle_contains(b, sg->cert_pem) != 1)
                        return false;
        }
        return (sg->rolled_out = true);
}

static int sync_signer(Sync *s, Signer *sg)
{
        const KubeObject *sec = op_get(s->ctx, W_ETCD_SECRETS, NS_ETCD, sg->spec->secret);
        const KubeObject *cm = op_get(s->ctx, W_ETCD_CONFIGMAPS, NS_ETCD, sg->spec->bundle);
        const char *published = object_data_string(cm, "ca-bundle.crt");
        _cleanup_free_ char *reason = NULL, *crt = NULL;
        _cleanup_erase_ char *key = NULL;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *info = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        int status, r;

        if (!sec)
                return new_signer(s, sg, NULL, false, "missing");
        if (secret_pems(sec, &crt, &key) < 0)
                return new_signer(s, sg, sec, true, "tls.crt or tls.key is missing or not base64");
        PkiCheck check = {.refresh = PKI_SIGNER_REFRESH_WINDOW};
        if ((status = pki_cert_check_memo(s->memo, crt, key, &check, s->ctx->now, &reason)) < 0)
                return status;
        if (pki_cert_from_pem(crt, &x) >= 0 && (r = pki_cert_get_info(x, &info)) < 0)
                return r;
        if (info)
                sg->cert_pem = TAKE_PTR(crt);

        /* The bundle keeps every signer that is still valid, so old and new coexist. */
        const char *parts[] = {strempty(published), strempty(sg->cert_pem), NULL};
        r = pki_bundle_merge(parts, s->ctx->now, &sg->bundle, NULL);
        if (r == -EBADMSG || r == -E2BIG) {
                log_warning("%s: the published bundle cannot be read, rebuilding it", sg->spec->bundle);
                r = pki_bundle_merge(parts + 1, s->ctx->now, &sg->bundle, NULL);
        }
        if (r < 0)
                return r;
        /* A signer that expires leaves the bundle at once, not at the next resync: the members
         * stop trusting it on the next revision, which the rollout of its successor waits for. */
        usec_t expiry = 0;
        if (sg->bundle && pki_bundle_first_expiry(sg->bundle, &expiry) >= 0 && expiry > s->ctx->now &&
            expiry - s->ctx->now < CERT_SIGNER_RESYNC)
                plan_requeue_after(s->p, expiry - s->ctx->now + USEC_PER_SEC);
        if (sg->bundle && !*sg->bundle)
                sg->bundle = mfree(sg->bundle); /* nothing to trust yet: never publish an empty bundle */
        else if (!streq_ptr(published, sg->bundle) ||
                 (cm && !cert_metadata_current(cm->json, sg->spec->bundle))) {
                _cleanup_(cJSON_Deletep) cJSON *d = cJSON_CreateObject();
                if (!d || !cJSON_AddStringToObject(d, "ca-bundle.crt", sg->bundle))
                        return -ENOMEM;
                log_info("%s: publishing %s", sg->spec->bundle,
                         !published                          ? "the bundle"
                         : !streq_ptr(published, sg->bundle) ? "a changed bundle"
                                                             : "the bundle's owner and description");
                write_object(s, &KUBE_CONFIGMAPS, cm, sg->spec->bundle, NULL, TAKE_PTR(d), NULL,
                             META_BUNDLE);
        }
        bool in_published = sg->cert_pem && published && pki_bundle_contains(published, sg->cert_pem) == 1;

        if (status == PKI_VALID && info && info->is_ca) {
                if ((r = pki_pair_from_pem(sg->cert_pem, key, &sg->pair)) < 0)
                        return r;
                annotate_kept(s, sec, sg->cert_pem);
                sg->ready = in_published;
                if (!sg->ready)
                        s->settled = false;
                return 0;
        }
        s->settled = false;
        /* Phase 1 of a rotation: the old signer must be trusted by the published
         * bundle first, or the leaves it signed would lose trust with it. */
        if (status == PKI_EXPIRING && info && info->is_ca && !in_published) {
                log_info("%s: %s; publishing it in %s before rotating it", sg->spec->secret, reason,
                         sg->spec->bundle);
                return 0;
        }
        _cleanup_free_ char *why =
                info && !info->is_ca
                        ? strdup("not a CA certificate")
                        : strdup_printf("%s: %s", pki_status_to_string(status), strempty(reason));
        return why ? new_signer(s, sg, sec, status != PKI_EXPIRING || !info || !info->is_ca, why) : -ENOMEM;
}

/* ---- leaves ---- */

typedef struct Leaf {
        const CertProfile *spec;
        const char *node; /* NULL for client certificates */
        char name[256];
        const char *cn;                           /* as issued now (render/certs.h) */
        const char *dns[CERT_NODE_DNS_NAMES + 1]; /* expected SANs (render/certs.h) */
        const char *ips[MAX_NODE_IPS + 3];
} Leaf;

static void leaf_init(Leaf *l, const CertProfile *spec, const KubeObject *node, size_t *ret_n_ips)
{
        const char *node_ips[MAX_NODE_IPS];
        size_t n = 0;
        cJSON *a;

        *l = (Leaf){.spec = spec, .node = node ? node->name : NULL};
        if (cert_profile_secret(spec, l->node, l->name, sizeof l->name) < 0)
                l->name[0] = 0; /* a node name too long for a Secret: nothing matches */
        if (!node) {
                l->cn = cert_profile_cn(spec, NULL, NULL);
                return; /* client certificates carry no SANs (l->dns/ips stay empty lists) */
        }
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                const char *ip = json_get_string(a, "address");
                IpAddr parsed;
                if (streq_ptr(json_get_string(a, "type"), "InternalIP") && ip && n < MAX_NODE_IPS &&
                    ip_parse(ip, &parsed) >= 0)
                        node_ips[n++] = ip;
        }
        cert_node_sans(node_ips, n, l->dns, l->ips);
        l->cn = cert_profile_cn(spec, l->dns, l->ips);
        *ret_n_ips = n;
}

/* Subject and usages as issued; *ret_current: issued by the current signer
 * (name and key identifier: pki_cert_check() has verified the signature
 * against the bundle already, so this only tells old and new apart). */
static int check_subject(const char *crt, const Leaf *l, const Signer *sg, bool *ret_current,
                         char **ret_reason)
{
        _cleanup_(X509_freep) X509 *x = NULL;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = NULL;
        uint32_t eku =
                l->spec->usage == PKI_PROFILE_CLIENT ? XKU_SSL_CLIENT : XKU_SSL_SERVER | XKU_SSL_CLIENT;
        int r;

        if ((r = pki_cert_from_pem(crt, &x)) < 0 || (r = pki_cert_get_info(x, &i)) < 0)
                return r;
        *ret_current = X509_check_issued(sg->pair->cert, x) == X509_V_OK;
        if (cert_subject_ok(l->spec, l->node, l->node ? l->dns : NULL, l->node ? l->ips : NULL,
                            i->subject_cn, i->subject_orgs) &&
            i->ext_key_usage != UINT32_MAX && (i->ext_key_usage & eku) == eku)
                return 0;
        *ret_reason =
                strdup_printf("wrong subject or usage: %s, want %s%s%s%s%sCN=%s", i->subject,
                              l->spec->org ? "O=" : "", strempty(l->spec->org), l->spec->org2 ? "+O=" : "",
                              strempty(l->spec->org2), l->spec->org ? "," : "", strempty(l->cn));
        return *ret_reason ? 1 : -ENOMEM;
}

/* What to do with a leaf. LEAF_KEEP_FOR_NOW: still good, but due (expiring,
 * or signed by the previous signer) while the current signer has not rolled
 * out to every node. A leaf issued by it now would not be trusted by the
 * nodes still running the old bundle; leaves made with the signer expire
 * with it, so this is the common case of rotation. */
typedef enum LeafVerdict {
        LEAF_KEEP = 0,
        LEAF_ISSUE = 1,        /* (re)issue, with *ret_reason */
        LEAF_KEEP_FOR_NOW = 2, /* with *ret_reason */
} LeafVerdict;

/* A LeafVerdict, or < 0. */
static int judge_leaf(Sync *s, Signer *sg, const Leaf *l, const KubeObject *sec, char **ret_reason)
{
        _cleanup_free_ char *crt = NULL, *reason = NULL;
        _cleanup_erase_ char *key = NULL;
        int r;

        if (!sec)
                return (*ret_reason = strdup("missing")) ? LEAF_ISSUE : -ENOMEM;
        if (secret_pems(sec, &crt, &key) < 0)
                return (*ret_reason = strdup("tls.crt or tls.key is missing or not base64")) ? LEAF_ISSUE
                                                                                             : -ENOMEM;
        PkiCheck c = {
                .ca_pem = sg->bundle, .dns = l->dns, .ips = l->ips, .refresh = PKI_LEAF_REFRESH_WINDOW};
        if ((r = pki_cert_check_memo(s->memo, crt, key, &c, s->ctx->now, &reason)) < 0)
                return r;
        if (r != PKI_VALID) {
                *ret_reason = strdup_printf("%s: %s", pki_status_to_string(r), strempty(reason));
                return !*ret_reason                              ? -ENOMEM
                       : r == PKI_EXPIRING && !rolled_out(s, sg) ? LEAF_KEEP_FOR_NOW
                                                                 : LEAF_ISSUE;
        }
        bool current = false;
        if ((r = check_subject(crt, l, sg, &current, ret_reason)) != 0 || current)
                return r; /* check_subject: 1 is LEAF_ISSUE */
        bool done = rolled_out(s, sg);
        *ret_reason = strdup_printf("signed by a previous signer; %s %s rolled out to every node",
                                    sg->spec->secret, done ? "has" : "has not yet");
        return !*ret_reason ? -ENOMEM : done ? LEAF_ISSUE : LEAF_KEEP_FOR_NOW;
}

static int issue_leaf(Sync *s, Signer *sg, const Leaf *l, const KubeObject *old, const char *why)
{
        _cleanup_(pki_pair_freep) PkiPair *pair = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        _cleanup_free_ char *crt = NULL;
        _cleanup_erase_ char *key = NULL;
        int r;

        if ((r = get_key(s, l->name, &k)) < 0 || !k)
                return r;
        PkiCertRequest req = {.profile = l->spec->usage,
                              .cn = l->cn,
                              .org = l->spec->org,
                              .org2 = l->spec->org2,
                              .dns = l->node ? l->dns : NULL,
                              .ips = l->node ? l->ips : NULL,
                              .validity = PKI_LEAF_VALIDITY,
                              .key_type = s->key_type,
                              .key = k};
        if ((r = pki_cert_issue(sg->pair, &req, s->ctx->now, &pair)) < 0 ||
            (r = pki_pair_to_pem(pair, &crt, &key)) < 0)
                return log_error_errno(r, "%s: cannot issue a certificate", l->name);
        log_info("%s: %s, issuing a new certificate from %s", l->name, why, sg->spec->secret);
        plan_event(s->p, false, old ? "CertificateRegenerated" : "CertificateCreated", "%s: %s", l->name,
                   why);
        write_object(s, &KUBE_SECRETS, old, l->name, "kubernetes.io/tls", tls_data(crt, key), crt,
                     META_CERT);
        return 0;
}

static int add_to_aggregate(Sync *s, const Leaf *l, const KubeObject *sec)
{
        static const char *const keys[][2] = {{"tls.crt", ".crt"}, {"tls.key", ".key"}};

        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                char name[300];
                const char *v = object_data_string(sec, keys[k][0]);
                (void) snprintf(name, sizeof name, "%s%s", l->name, keys[k][1]);
                if (!v || !cJSON_AddStringToObject(s->all_certs, name, v))
                        return v ? -ENOMEM : -ENODATA;
        }
        return 0;
}

static int sync_leaf(Sync *s, const CertProfile *spec, const KubeObject *node)
{
        Signer *sg = &s->signers[spec->signer];
        const KubeObject *sec;
        _cleanup_free_ char *why = NULL;
        size_t n_ips = 0;
        Leaf l;
        int r;

        leaf_init(&l, spec, node, &n_ips);
        sec = op_get(s->ctx, W_ETCD_SECRETS, NS_ETCD, l.name);
        if (node && n_ips == 0) {
                /* No InternalIP yet: nothing to issue for; keep what exists. */
                log_debug("%s: node %s has no InternalIP yet", l.name, node->name);
                r = sec ? add_to_aggregate(s, &l, sec) : 0;
                return r == -ENODATA ? 0 : r;
        }
        if (!sg->ready) {
                s->settled = false;
                return 0;
        }
        r = judge_leaf(s, sg, &l, sec, &why);
        if (r < 0)
                return r;
        if (r == LEAF_KEEP_FOR_NOW)
                log_debug("%s: %s; kept until %s has rolled out", l.name, why, sg->spec->secret);
        if (r != LEAF_ISSUE) {
                _cleanup_free_ char *crt = NULL;
                _cleanup_erase_ char *key = NULL;
                if (secret_pems(sec, &crt, &key) >= 0)
                        annotate_kept(s, sec, crt);
                return node ? add_to_aggregate(s, &l, sec) : 0;
        }
        if (!take_budget(s)) {
                log_debug("%s: %s; waiting for the next sync", l.name, why);
                return 0;
        }
        return issue_leaf(s, sg, &l, sec, why);
}

/* ---- aggregates ---- */

static int sync_aggregates(Sync *s, size_t n_nodes)
{
        const KubeObject *old;
        int r;

        if (s->signers[0].bundle && s->signers[1].bundle) {
                _cleanup_(cJSON_Deletep) cJSON *d = cJSON_CreateObject();
                for (size_t i = 0; d && i < ELEMENTSOF(s->signers); i++)
                        if (!cJSON_AddStringToObject(d, s->signers[i].spec->all_bundles_key,
                                                     s->signers[i].bundle))
                                return -ENOMEM;
                if (!d)
                        return -ENOMEM;
                old = op_get(s->ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ALL_BUNDLES);
                if (differs(old, NULL, d) || !cert_metadata_current(old->json, NULL)) {
                        log_info("etcd-all-bundles: publishing the CA bundles for the next revision");
                        write_object(s, &KUBE_CONFIGMAPS, old, CM_ETCD_ALL_BUNDLES, NULL, TAKE_PTR(d), NULL,
                                     META_AGGREGATE);
                }
        }
        /* Without any master (not listed yet) there is nothing to aggregate. */
        if (!s->settled || n_nodes == 0)
                return 0;
        old = op_get(s->ctx, W_ETCD_SECRETS, NS_ETCD, SECRET_ETCD_ALL_CERTS);
        if (differs(old, "Opaque", s->all_certs) || !cert_metadata_current(old->json, NULL)) {
                log_info("etcd-all-certs: publishing the node certificates for the next revision");
                cJSON *d = cJSON_Duplicate(s->all_certs, true);
                r = d ? 0 : -ENOMEM;
                write_object(s, &KUBE_SECRETS, old, SECRET_ETCD_ALL_CERTS, "Opaque", d, NULL,
                             META_AGGREGATE);
                return r;
        }
        return 0;
}

static int sync_cert_signer(const SyncContext *ctx, Plan *p)
{
        const OperatorState *st = op_state(ctx);
        _cleanup_(sync_done) Sync s = {.ctx = ctx,
                                       .p = p,
                                       .key_type = st ? st->cert_key_type : PKI_KEY_RSA_2048,
                                       .keys = st ? st->keys : NULL,
                                       .memo = st ? st->check_memo : NULL,
                                       .budget = CERTS_PER_SYNC,
                                       .settled = true,
                                       .all_certs = cJSON_CreateObject()};
        int r;

        if (!s.all_certs)
                return -ENOMEM;
        if ((r = op_list_etcd_nodes(ctx, &s.nodes, &s.n_nodes)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(s.signers); i++) {
                s.signers[i] = (Signer){.spec = &signer_specs[i], .rolled_out = -1};
                if ((r = sync_signer(&s, &s.signers[i])) < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(cert_client_profiles); i++)
                if ((r = sync_leaf(&s, &cert_client_profiles[i], NULL)) < 0)
                        return r;
        for (size_t n = 0; n < s.n_nodes; n++)
                for (size_t i = 0; i < ELEMENTSOF(cert_node_profiles); i++)
                        if ((r = sync_leaf(&s, &cert_node_profiles[i], s.nodes[n])) < 0)
                                return r;
        return sync_aggregates(&s, s.n_nodes);
}

int cert_signer_expiration_days(InformerFactory *f, const char *name, usec_t now, double *ret)
{
        Informer *inf;
        const char *b64;
        _cleanup_free_ char *crt = NULL;
        int r;

        assert_return(f && name && ret, -EINVAL);
        inf = informer_factory_find(f, &KUBE_SECRETS, NS_ETCD, NULL, NULL);
        b64 = object_data_string(inf ? informer_get(inf, NS_ETCD, name) : NULL, "tls.crt");
        if (!b64)
                return -ENOENT;
        if ((r = base64_decode(b64, &crt, NULL)) < 0)
                return r;
        return pki_cert_expiration_days(crt, now, ret);
}

static const WatchSpec *const watches[] = {OP_WATCH_ETCD_NODES, OP_WATCH(W_INFRASTRUCTURES),
                                           OP_WATCH(W_ETCD_SECRETS), OP_WATCH(W_ETCD_CONFIGMAPS),
                                           OP_WATCH(W_ETCD_CR)};

const ControllerSpec controller_cert_signer = {
        .name = "EtcdCertSignerController",
        .degraded_condition = "EtcdCertSignerControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = CERT_SIGNER_RESYNC,
        .sync = sync_cert_signer,
};
