/* The facts of static pod revisions (facts.h): which revision each node runs and
 * is being taken to, whether the rollout is over, and the copies a revision
 * snapshots (their names, and their values as the informer cache keeps them). */
#include "facts.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "base/json.h"

int64_t node_current_revision(const KubeObject *etcd_cr, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0;
                if (streq_ptr(json_get_string(e, "nodeName"), node) &&
                    json_get_int64(e, "currentRevision", &current) >= 0)
                        return current;
        }
        return 0;
}

int64_t node_rollout_target(const KubeObject *etcd_cr, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0, target = 0;
                if (!streq_ptr(json_get_string(e, "nodeName"), node))
                        continue;
                (void) json_get_int64(e, "currentRevision", &current);
                if (json_get_int64(e, "targetRevision", &target) < 0 || target <= current)
                        return 0;
                return target;
        }
        return 0;
}

const char *etcd_node_rolling_out(const KubeObject *etcd_cr, int64_t *ret_target)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0, target = 0;
                (void) json_get_int64(e, "currentRevision", &current);
                if (json_get_int64(e, "targetRevision", &target) < 0 || target <= current)
                        continue;
                if (ret_target)
                        *ret_target = target;
                return strempty(json_get_string(e, "nodeName"));
        }
        return NULL;
}

bool etcd_revision_stable(const KubeObject *etcd_cr, char *why, size_t n)
{
        int64_t latest = 0;
        size_t nodes = 0;
        cJSON *e;

        if (!etcd_cr || json_get_int64(etcd_cr->json, "status.latestAvailableRevision", &latest) < 0 ||
            latest <= 0) {
                if (why)
                        (void) snprintf(why, n, "no etcd revision is published yet");
                return false;
        }
        JSON_ARRAY_FOREACH (e, json_get_array(etcd_cr->json, "status.nodeStatuses")) {
                int64_t current = 0, target = 0;
                (void) json_get_int64(e, "currentRevision", &current);
                (void) json_get_int64(e, "targetRevision", &target);
                if (current != latest || target > current) {
                        if (why)
                                (void) snprintf(why, n, "node %s runs etcd revision %" PRId64 " of %" PRId64,
                                                strempty(json_get_string(e, "nodeName")), current, latest);
                        return false;
                }
                nodes++;
        }
        if (nodes == 0 && why)
                (void) snprintf(why, n, "no node reports an etcd revision yet");
        return nodes > 0;
}

const RevisionedObject revisioned_objects[N_REVISIONED_OBJECTS] = {
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_POD},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_ENDPOINTS},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_ALL_BUNDLES},
        {W_ETCD_SECRETS, &KUBE_SECRETS, "secret", SECRET_ETCD_ALL_CERTS},
};

int64_t revision_number(const char *s, char end)
{
        int64_t v = 0;
        if (!s || *s < '1' || *s > '9')
                return -1;
        for (; *s && *s != end; s++) {
                if (*s < '0' || *s > '9' || v > INT32_MAX / 10)
                        return -1;
                v = v * 10 + (*s - '0');
        }
        return end && !*s ? -1 : v;
}

int64_t revision_copy_number(const char *name, const char *base)
{
        if (!name || !startswith(name, base) || name[strlen(base)] != '-')
                return -1;
        return revision_number(name + strlen(base) + 1, 0);
}

const RevisionedObject *revision_copy_of(const KubeResource *res, const char *ns, const char *name)
{
        if (!streq_ptr(ns, NS_ETCD))
                return NULL;
        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++)
                if (revisioned_objects[i].res == res &&
                    revision_copy_number(name, revisioned_objects[i].name) > 0)
                        return &revisioned_objects[i];
        return NULL;
}

#define DIGEST_TEXT_LEN (sizeof CACHED_DIGEST_PREFIX - 1 + 2 * SHA256_DIGEST_LENGTH)

static bool value_read_from_copies(const RevisionedObject *r, const char *key)
{
        return streq(r->name, CM_ETCD_ALL_BUNDLES) ||
               (streq(r->name, SECRET_ETCD_ALL_CERTS) && endswith(key, ".crt"));
}

static int digest_text(const char *value, char out[static DIGEST_TEXT_LEN + 1])
{
        unsigned char md[SHA256_DIGEST_LENGTH];
        char *p = stpcpy(out, CACHED_DIGEST_PREFIX);

        if (!EVP_Digest(value, strlen(value), md, NULL, EVP_sha256(), NULL))
                return -ENOMEM;
        for (size_t i = 0; i < sizeof md; i++)
                p += sprintf(p, "%02x", md[i]);
        return 0;
}

int revision_copy_trim(const RevisionedObject *r, cJSON *copy, cJSON *dropped)
{
        static const char *const maps[] = {"data", "binaryData"};
        char digest[DIGEST_TEXT_LEN + 1];

        for (size_t m = 0; m < ELEMENTSOF(maps); m++) {
                cJSON *map = json_get_object(copy, maps[m]), *v, *next;
                for (v = map ? map->child : NULL; v; v = next) {
                        next = v->next;
                        if (!cJSON_IsString(v) || strlen(v->valuestring) <= DIGEST_TEXT_LEN ||
                            value_read_from_copies(r, v->string))
                                continue;
                        int e = digest_text(v->valuestring, digest);
                        cJSON *full = e < 0 ? NULL : cJSON_CreateString(digest);
                        if (!full)
                                return -ENOMEM;
                        /* Swap the texts: the value stays in place holding the digest, and the
                         * full text goes to `dropped` (both allocated by cJSON, freed by it). */
                        char *t = v->valuestring;
                        v->valuestring = full->valuestring;
                        full->valuestring = t;
                        cJSON_AddItemToArray(dropped, full);
                }
        }
        return 0;
}

bool revision_copy_map_matches(const cJSON *cached, const cJSON *source)
{
        char digest[DIGEST_TEXT_LEN + 1];
        const cJSON *v;
        size_t n_cached = 0, n_source = 0;

        for (v = cached ? cached->child : NULL; v; v = v->next)
                n_cached++;
        for (v = source ? source->child : NULL; v; v = v->next)
                n_source++;
        if (n_cached != n_source)
                return false;
        for (v = source ? source->child : NULL; v; v = v->next) {
                const char *have = json_string(cJSON_GetObjectItemCaseSensitive(cached, v->string));
                if (!have || !cJSON_IsString(v))
                        return false;
                if (streq(have, v->valuestring))
                        continue;
                if (strlen(v->valuestring) <= DIGEST_TEXT_LEN || !startswith(have, CACHED_DIGEST_PREFIX) ||
                    digest_text(v->valuestring, digest) < 0 || !streq(have, digest))
                        return false;
        }
        return true;
}
