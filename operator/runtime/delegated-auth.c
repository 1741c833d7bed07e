/* Delegated authentication and authorization of /metrics (delegated-auth.h). */
#include <openssl/evp.h>
#include <strings.h>

#include "base/json.h"
#include "base/log.h"
#include "delegated-auth.h"

#define ANSWER_TTL  (10 * USEC_PER_SEC) /* library-go's delegating authenticator and authorizer */
#define FAILURE_TTL (1 * USEC_PER_SEC)

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free);

typedef struct Entry {
        DelegatedAuth *owner;
        bool used;
        unsigned char hash[32];  /* credential_hash() of the token or certificate identity */
        HttpAuthVerdict verdict; /* PENDING while a review runs */
        usec_t expires, answered;
        KubeCall *call;
        char user[128];
        char reason[256];
} Entry;

struct DelegatedAuth {
        KubeClient *client;
        char *path;
        char *token_reviews, *access_reviews; /* their collections' paths */
        void (*settled)(void *userdata);
        void *userdata;
        DelegatedAuthStats stats;
        char refusal[384]; /* the last 401's text for a certificate that did not verify */
        Entry entries[DELEGATED_AUTH_MAX];
};

DelegatedAuth *delegated_auth_new(KubeClient *client, const char *path, void (*settled)(void *userdata),
                                  void *userdata)
{
        assert_return(client && path, NULL);
        DelegatedAuth *a = calloc(1, sizeof *a);
        if (!a)
                return NULL;
        a->path = strdup(path);
        a->token_reviews = kube_resource_path(&KUBE_TOKENREVIEWS, NULL, NULL, NULL);
        a->access_reviews = kube_resource_path(&KUBE_SUBJECTACCESSREVIEWS, NULL, NULL, NULL);
        if (!a->path || !a->token_reviews || !a->access_reviews)
                return delegated_auth_free(a);
        a->client = client;
        a->settled = settled;
        a->userdata = userdata;
        for (size_t i = 0; i < DELEGATED_AUTH_MAX; i++)
                a->entries[i].owner = a;
        return a;
}

DelegatedAuth *delegated_auth_free(DelegatedAuth *a)
{
        if (!a)
                return NULL;
        for (size_t i = 0; i < DELEGATED_AUTH_MAX; i++)
                if (a->entries[i].call)
                        kube_call_cancel(a->entries[i].call);
        free(a->path);
        free(a->token_reviews);
        free(a->access_reviews);
        return mfree(a);
}

void delegated_auth_get_stats(DelegatedAuth *a, DelegatedAuthStats *ret)
{
        *ret = a ? a->stats : (DelegatedAuthStats){};
}

/* SHA-256 of one kind of credential: 't' a bearer token, 'c' a certificate's user and groups.
 * The kind keeps a token that spells a certificate's identity from taking that answer. */
static int credential_hash(char kind, const void *data, size_t size, unsigned char ret[32])
{
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        unsigned len = 0;

        if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
            EVP_DigestUpdate(ctx, &kind, 1) != 1 || EVP_DigestUpdate(ctx, data, size) != 1 ||
            EVP_DigestFinal_ex(ctx, ret, &len) != 1 || len != 32)
                return -EIO;
        return 0;
}

_printf_(4, 0) static void vset_verdict(Entry *e, HttpAuthVerdict v, usec_t ttl, const char *fmt, va_list ap)
{
        usec_t now = now_usec(CLOCK_MONOTONIC);

        e->verdict = v;
        e->answered = now;
        e->expires = now + ttl;
        (void) vsnprintf(e->reason, sizeof e->reason, fmt, ap);
        if (v != HTTP_AUTH_ALLOW)
                log_debug("/metrics: %s", e->reason);
}

/* A review's answer: the requests held for it are asked again. */
_printf_(4, 5) static void finish(Entry *e, HttpAuthVerdict v, usec_t ttl, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vset_verdict(e, v, ttl, fmt, ap);
        va_end(ap);
        if (e->owner->settled)
                e->owner->settled(e->owner->userdata);
}

/* A review that could not even be sent, from inside delegated_auth_check() (which must not
 * call `settled`): answered at once, 503, for FAILURE_TTL. */
_printf_(2, 3) static HttpAuthVerdict fail_now(Entry *e, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vset_verdict(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL, fmt, ap);
        va_end(ap);
        return HTTP_AUTH_UNAVAILABLE;
}

static const char *resp_error(const KubeResponse *resp)
{
        return resp->status && resp->status->message ? resp->status->message : kube_strerror(resp->error);
}

static void on_access_review(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Entry *e = userdata;

        (void) c;
        e->call = NULL;
        if (resp->error == -ECANCELED)
                return;
        if (resp->error < 0) {
                finish(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL,
                       "cannot ask kube-apiserver whether %s may read %s: %s", e->user, e->owner->path,
                       resp_error(resp));
                return;
        }
        if (json_get_bool(resp->body, "status.allowed", false)) {
                finish(e, HTTP_AUTH_ALLOW, ANSWER_TTL, "%s", "");
                return;
        }
        const char *why = json_get_string(resp->body, "status.reason");
        finish(e, HTTP_AUTH_FORBIDDEN, ANSWER_TTL,
               "forbidden: user \"%s\" cannot get path \"%s\"%s%s (grant it with a ClusterRole: "
               "nonResourceURLs [\"%s\"], verbs [\"get\"])",
               e->user, e->owner->path, why && *why ? ": " : "", strempty(why), e->owner->path);
}

/* The SubjectAccessReview for `user` (as a TokenReview's status.user): get on the path. */
static cJSON *access_review(const cJSON *user, const char *path)
{
        _cleanup_(cJSON_Deletep) cJSON *sar = cJSON_CreateObject();
        cJSON *spec, *attrs, *v;

        if (!sar || !cJSON_AddStringToObject(sar, "apiVersion", "authorization.k8s.io/v1") ||
            !cJSON_AddStringToObject(sar, "kind", "SubjectAccessReview") ||
            !(spec = cJSON_AddObjectToObject(sar, "spec")) ||
            !cJSON_AddStringToObject(spec, "user", strempty(json_get_string(user, "username"))))
                return NULL;
        if (json_get_string(user, "uid") &&
            !cJSON_AddStringToObject(spec, "uid", json_get_string(user, "uid")))
                return NULL;
        if ((v = json_get_array(user, "groups")) &&
            !cJSON_AddItemToObject(spec, "groups", cJSON_Duplicate(v, true)))
                return NULL;
        if ((v = json_get(user, "extra")) && cJSON_IsObject(v) &&
            !cJSON_AddItemToObject(spec, "extra", cJSON_Duplicate(v, true)))
                return NULL;
        if (!(attrs = cJSON_AddObjectToObject(spec, "nonResourceAttributes")) ||
            !cJSON_AddStringToObject(attrs, "path", path) || !cJSON_AddStringToObject(attrs, "verb", "get"))
                return NULL;
        return TAKE_PTR(sar);
}

/* Sends the SubjectAccessReview of `user` for the entry; < 0 when it could not be sent. */
static int start_access_review(Entry *e, const cJSON *user)
{
        DelegatedAuth *a = e->owner;

        (void) snprintf(e->user, sizeof e->user, "%s", strempty(json_get_string(user, "username")));
        _cleanup_(cJSON_Deletep) cJSON *sar = access_review(user, a->path);
        if (!sar)
                return -ENOMEM;
        int r = kube_call(a->client, "POST", a->access_reviews, sar, NULL, on_access_review, e, &e->call);
        if (r < 0) {
                e->call = NULL;
                return r;
        }
        a->stats.access_reviews++;
        return 0;
}

static void on_token_review(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Entry *e = userdata;

        (void) c;
        e->call = NULL;
        if (resp->error == -ECANCELED)
                return;
        if (resp->error < 0) {
                finish(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL, "cannot review the bearer token: %s",
                       resp_error(resp));
                return;
        }
        if (!json_get_bool(resp->body, "status.authenticated", false)) {
                const char *why = json_get_string(resp->body, "status.error");
                finish(e, HTTP_AUTH_UNAUTHORIZED, ANSWER_TTL,
                       "the bearer token is not valid in this cluster%s%s: scrape with a ServiceAccount's "
                       "token",
                       why && *why ? ": " : "", strempty(why));
                return;
        }
        const cJSON *user = json_get(resp->body, "status.user");
        int r = start_access_review(e, user);
        if (r < 0)
                finish(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL,
                       "cannot ask kube-apiserver whether %s may read %s: %s", e->user, e->owner->path,
                       strerror(-r));
}

/* The entry of this credential, or a slot for it: a free one, else the oldest answer. NULL
 * while every slot waits for a review. */
static Entry *slot_for(DelegatedAuth *a, const unsigned char hash[32], bool *ret_found)
{
        Entry *free_slot = NULL, *oldest = NULL;

        *ret_found = false;
        for (size_t i = 0; i < DELEGATED_AUTH_MAX; i++) {
                Entry *e = &a->entries[i];
                if (!e->used) {
                        free_slot = free_slot ? free_slot : e;
                        continue;
                }
                if (memcmp(e->hash, hash, 32) == 0) {
                        *ret_found = true;
                        return e;
                }
                if (e->verdict != HTTP_AUTH_PENDING && (!oldest || e->answered < oldest->answered))
                        oldest = e;
        }
        return free_slot ? free_slot : oldest;
}

/* The answer known for this credential (PENDING while its review runs); or, with *ret_new set,
 * none yet: *ret_new is its entry, now PENDING, whose review the caller starts. */
static HttpAuthVerdict known(DelegatedAuth *a, const unsigned char hash[32], Entry **ret_new,
                             const char **ret_reason)
{
        bool found;
        Entry *e = slot_for(a, hash, &found);

        *ret_new = NULL;
        if (!e) {
                *ret_reason = "too many credentials under review at once: try again";
                return HTTP_AUTH_UNAVAILABLE;
        }
        if (found && e->verdict == HTTP_AUTH_PENDING)
                return HTTP_AUTH_PENDING;
        if (found && now_usec(CLOCK_MONOTONIC) < e->expires) {
                a->stats.cache_hits++;
                *ret_reason = e->reason;
                return e->verdict;
        }
        *e = (Entry){.owner = a, .used = true, .verdict = HTTP_AUTH_PENDING};
        memcpy(e->hash, hash, 32);
        *ret_new = e;
        return HTTP_AUTH_PENDING;
}

/* A verified client certificate: the user Prometheus scrapes as is allowed here, as
 * library-go's hard-coded metrics authorizer allows it (no review: scraping works while
 * kube-apiserver is away); anyone else is asked of kube-apiserver. */
static HttpAuthVerdict check_certificate(DelegatedAuth *a, const HttpPeer *peer, const char **ret_reason)
{
        unsigned char id[sizeof peer->user + sizeof peer->groups], hash[32];
        size_t n = strlen(peer->user) + 1;
        Entry *e;

        if (streq(peer->user, DELEGATED_AUTH_PROMETHEUS_USER)) {
                a->stats.local_allows++;
                return HTTP_AUTH_ALLOW;
        }
        memcpy(id, peer->user, n);
        for (size_t i = 0; i < peer->n_groups; i++) {
                size_t g = strlen(peer->groups[i]) + 1;
                memcpy(id + n, peer->groups[i], g);
                n += g;
        }
        if (credential_hash('c', id, n, hash) < 0) {
                *ret_reason = "cannot hash the client certificate's identity";
                return HTTP_AUTH_UNAVAILABLE;
        }
        HttpAuthVerdict v = known(a, hash, &e, ret_reason);
        if (!e)
                return v;

        _cleanup_(cJSON_Deletep) cJSON *user = cJSON_CreateObject();
        cJSON *groups;
        bool ok = user && cJSON_AddStringToObject(user, "username", peer->user) &&
                  (groups = cJSON_AddArrayToObject(user, "groups"));
        for (size_t i = 0; ok && i < peer->n_groups; i++)
                ok = cJSON_AddItemToArray(groups, cJSON_CreateString(peer->groups[i]));
        int r = ok ? start_access_review(e, user) : -ENOMEM;
        if (r < 0) {
                v = fail_now(e, "cannot ask kube-apiserver whether %s may read %s: %s", peer->user, a->path,
                             strerror(-r));
                *ret_reason = e->reason;
                return v;
        }
        return HTTP_AUTH_PENDING;
}

HttpAuthVerdict delegated_auth_check(void *userdata, const HttpPeer *peer, const char *authorization,
                                     const char **ret_reason)
{
        DelegatedAuth *a = userdata;
        unsigned char hash[32];
        const char *token = NULL;
        Entry *e;

        /* kube-apiserver's order: a verified certificate first, then the bearer token. */
        if (peer && peer->verified)
                return check_certificate(a, peer, ret_reason);
        if (authorization && strncasecmp(authorization, "Bearer ", 7) == 0)
                token = authorization + 7 + strspn(authorization + 7, " ");
        if (!token || !*token) {
                if (peer && peer->presented) {
                        (void) snprintf(a->refusal, sizeof a->refusal,
                                        "%s; and no bearer token came with it", peer->error);
                        *ret_reason = a->refusal;
                } else
                        *ret_reason = "no client certificate and no bearer token: scrape with a certificate "
                                      "from kube-apiserver's client CA or a ServiceAccount's token "
                                      "(Authorization: Bearer ...)";
                return HTTP_AUTH_UNAUTHORIZED;
        }
        if (credential_hash('t', token, strlen(token), hash) < 0) {
                *ret_reason = "cannot hash the bearer token";
                return HTTP_AUTH_UNAVAILABLE;
        }
        HttpAuthVerdict v = known(a, hash, &e, ret_reason);
        if (!e)
                return v;

        _cleanup_(cJSON_Deletep) cJSON *tr = cJSON_CreateObject();
        cJSON *spec, *t;
        if (!tr || !cJSON_AddStringToObject(tr, "apiVersion", "authentication.k8s.io/v1") ||
            !cJSON_AddStringToObject(tr, "kind", "TokenReview") ||
            !(spec = cJSON_AddObjectToObject(tr, "spec")) ||
            !(t = cJSON_AddStringToObject(spec, "token", token))) {
                e->used = false;
                *ret_reason = "out of memory";
                return HTTP_AUTH_UNAVAILABLE;
        }
        int r = kube_call(a->client, "POST", a->token_reviews, tr, NULL, on_token_review, e, &e->call);
        explicit_bzero(t->valuestring, strlen(t->valuestring)); /* the request holds its own copy */
        if (r < 0) {
                e->call = NULL;
                v = fail_now(e, "cannot review the bearer token: %s", strerror(-r));
                *ret_reason = e->reason;
                return v;
        }
        a->stats.token_reviews++;
        return HTTP_AUTH_PENDING;
}
