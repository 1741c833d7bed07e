/* Condition list-maps. */
#include "conditions.h"
#include "base/json.h"

cJSON *conditions_find(const cJSON *conditions, const char *type)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, conditions)
                if (streq_ptr(json_get_string(c, "type"), type))
                        return c;
        return NULL;
}

bool conditions_is(const cJSON *conditions, const char *type, const char *status)
{
        return streq_ptr(json_get_string(conditions_find(conditions, type), "status"), status);
}

static int set_field(cJSON *o, const char *key, const char *value, bool *changed)
{
        if (streq_ptr(json_get_string(o, key), value))
                return 0;
        *changed = true;
        if (!value) {
                cJSON_DeleteItemFromObjectCaseSensitive(o, key);
                return 0;
        }
        return json_set_string(o, key, value);
}

int conditions_set(cJSON *conditions, const Condition *c, usec_t now_realtime)
{
        char ts[40];
        bool changed = false;
        int r;

        assert_return(cJSON_IsArray(conditions) && c && c->type && c->status, -EINVAL);
        if (!format_rfc3339(ts, sizeof ts, now_realtime))
                return -EINVAL;
        cJSON *e = conditions_find(conditions, c->type);
        if (!e) {
                e = cJSON_CreateObject();
                if (!e || !cJSON_AddItemToArray(conditions, e))
                        return -ENOMEM;
                changed = true;
                if (json_set_string(e, "type", c->type) < 0)
                        return -ENOMEM;
        }
        if (!streq_ptr(json_get_string(e, "status"), c->status) ||
            !json_get_string(e, "lastTransitionTime")) {
                r = set_field(e, "lastTransitionTime", ts, &changed);
                if (r < 0)
                        return r;
        }
        if ((r = set_field(e, "status", c->status, &changed)) < 0 ||
            (r = set_field(e, "reason", c->reason, &changed)) < 0 ||
            (r = set_field(e, "message", c->message, &changed)) < 0)
                return r;
        return changed;
}
