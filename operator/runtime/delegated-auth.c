/* Delegated authentication and authorization of /metrics (delegated-auth.h). */
#include <openssl/evp.h>
#include <strings.h>

#include "base/json.h"
#include "base/log.h"
#include "delegated-auth.h"

#define ANSWER_TTL  (10 * USEC_PER_SEC) /* library-go's delegating authenticator and authorizer */
#define FAILURE_TTL (1 * USEC_PER_SEC)

typedef struct Entry {
        DelegatedAuth *owner;
        bool used;
        unsigned char hash[32];  /* SHA-256 of the token */
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

static int token_hash(const char *token, unsigned char ret[32])
{
        unsigned len = 0;
        return EVP_Digest(token, strlen(token), ret, &len, EVP_sha256(), NULL) == 1 && len == 32 ? 0 : -EIO;
}

_printf_(4, 5) static void finish(Entry *e, HttpAuthVerdict v, usec_t ttl, const char *fmt, ...)
{
        va_list ap;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        e->verdict = v;
        e->answered = now;
        e->expires = now + ttl;
        va_start(ap, fmt);
        (void) vsnprintf(e->reason, sizeof e->reason, fmt, ap);
        va_end(ap);
        if (v != HTTP_AUTH_ALLOW)
                log_debug("/metrics: %s", e->reason);
        if (e->owner->settled)
                e->owner->settled(e->owner->userdata);
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

/* The SubjectAccessReview for `user` (a TokenReview's status.user): get on the path. */
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

static void on_token_review(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Entry *e = userdata;
        DelegatedAuth *a = e->owner;

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
        (void) snprintf(e->user, sizeof e->user, "%s", strempty(json_get_string(user, "username")));
        _cleanup_(cJSON_Deletep) cJSON *sar = access_review(user, a->path);
        if (!sar) {
                finish(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL, "out of memory");
                return;
        }
        int r = kube_call(c, "POST", a->access_reviews, sar, NULL, on_access_review, e, &e->call);
        if (r < 0) {
                e->call = NULL;
                finish(e, HTTP_AUTH_UNAVAILABLE, FAILURE_TTL,
                       "cannot ask kube-apiserver whether %s may read %s: %s", e->user, a->path,
                       strerror(-r));
                return;
        }
        a->stats.access_reviews++;
}

/* The entry of this token, or a slot for it: a free one, else the oldest answer. NULL while
 * every slot waits for a review. */
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

HttpAuthVerdict delegated_auth_check(void *userdata, const char *authorization, const char **ret_reason)
{
        DelegatedAuth *a = userdata;
        unsigned char hash[32];
        bool found;
        const char *token = NULL;

        if (authorization && strncasecmp(authorization, "Bearer ", 7) == 0)
                token = authorization + 7 + strspn(authorization + 7, " ");
        if (!token || !*token) {
                *ret_reason =
                        "no bearer token: scrape with a ServiceAccount's token (Authorization: Bearer ...)";
                return HTTP_AUTH_UNAUTHORIZED;
        }
        if (token_hash(token, hash) < 0) {
                *ret_reason = "cannot hash the bearer token";
                return HTTP_AUTH_UNAVAILABLE;
        }
        Entry *e = slot_for(a, hash, &found);
        if (!e) {
                *ret_reason = "too many bearer tokens under review at once: try again";
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
                e->verdict = HTTP_AUTH_UNAVAILABLE;
                e->answered = now_usec(CLOCK_MONOTONIC);
                e->expires = e->answered + FAILURE_TTL;
                (void) snprintf(e->reason, sizeof e->reason, "cannot review the bearer token: %s",
                                strerror(-r));
                *ret_reason = e->reason;
                return HTTP_AUTH_UNAVAILABLE;
        }
        a->stats.token_reviews++;
        return HTTP_AUTH_PENDING;
}
