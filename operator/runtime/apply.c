/* The APPLY merge (apply.h), the one copy the runtime and the test fixture share. */
#include "apply.h"
#include "base/json.h"

cJSON *apply_merge(const cJSON *current, const cJSON *desired)
{
        _cleanup_(cJSON_Deletep) cJSON *m = cJSON_Duplicate(current, true);
        cJSON *f;

        if (!m)
                return NULL;
        JSON_ARRAY_FOREACH (f, desired) {
                if (streq(f->string, "metadata") || streq(f->string, "status"))
                        continue;
                cJSON *copy = cJSON_Duplicate(f, true);
                if (!copy)
                        return NULL;
                if (cJSON_GetObjectItemCaseSensitive(m, f->string))
                        (void) cJSON_ReplaceItemInObjectCaseSensitive(m, f->string, copy);
                else
                        cJSON_AddItemToObject(m, f->string, copy);
        }
        static const char *const maps[] = {"labels", "annotations"};
        for (size_t k = 0; k < ELEMENTSOF(maps); k++) {
                cJSON *want = json_get_object(desired, "metadata")
                                      ? cJSON_GetObjectItemCaseSensitive(
                                                json_get_object(desired, "metadata"), maps[k])
                                      : NULL;
                if (!cJSON_IsObject(want))
                        continue;
                cJSON *md = json_ensure_object(m, "metadata");
                cJSON *have = md ? json_ensure_object(md, maps[k]) : NULL;
                if (!have)
                        return NULL;
                JSON_ARRAY_FOREACH (f, want) {
                        cJSON *copy = cJSON_Duplicate(f, true);
                        if (!copy)
                                return NULL;
                        if (cJSON_GetObjectItemCaseSensitive(have, f->string))
                                (void) cJSON_ReplaceItemInObjectCaseSensitive(have, f->string, copy);
                        else
                                cJSON_AddItemToObject(have, f->string, copy);
                }
        }
        cJSON *owners = json_get_array(desired, "metadata.ownerReferences");
        if (owners) {
                cJSON *md = json_ensure_object(m, "metadata");
                cJSON *copy = cJSON_Duplicate(owners, true);
                if (!md || !copy)
                        return NULL;
                cJSON_DeleteItemFromObjectCaseSensitive(md, "ownerReferences");
                cJSON_AddItemToObject(md, "ownerReferences", copy);
        }
        return TAKE_PTR(m);
}
