/* Plan building. */
#include <stdarg.h>

#include "base/json.h"
#include "etcd/types.h"
#include "plan.h"

static void intent_done(Intent *i)
{
        cJSON_Delete(i->object);
        free(i->namespace);
        free(i->name);
        free(i->precondition_uid);
        free(i->cond_type);
        free(i->cond_status);
        free(i->cond_reason);
        free(i->cond_message);
        free(i->reason);
        free(i->message);
        free(i->peer_url);
        free(i->endpoint);
        free(i->alarm);
        free(i->action);
        free(i->version);
        free(i->detail);
}

void plan_done(Plan *p)
{
        for (size_t k = 0; k < p->n; k++)
                intent_done(&p->intents[k]);
        p->intents = mfree(p->intents);
        p->n = p->cap = 0;
        p->waiting_reason = mfree(p->waiting_reason);
        p->waiting = mfree(p->waiting);
}

void plan_drop_writes(Plan *p)
{
        size_t w = 0;
        for (size_t k = 0; k < p->n; k++) {
                if (p->intents[k].type == INTENT_CONDITION || p->intents[k].type == INTENT_EVENT)
                        p->intents[w++] = p->intents[k];
                else
                        intent_done(&p->intents[k]);
        }
        p->n = w;
}

static Intent *push(Plan *p, IntentType t)
{
        if (p->error < 0)
                return NULL;
        if (p->n == p->cap) {
                size_t cap = MAX(p->cap * 2, (size_t) 8);
                Intent *n = reallocarray(p->intents, cap, sizeof *n);
                if (!n) {
                        p->error = -ENOMEM;
                        return NULL;
                }
                p->intents = n;
                p->cap = cap;
        }
        Intent *i = &p->intents[p->n++];
        *i = (Intent){.type = t};
        return i;
}

static void fail(Plan *p, Intent *i, int e)
{
        intent_done(i);
        p->n--;
        if (p->error >= 0)
                p->error = e;
}

static bool dup_str(char **dst, const char *s)
{
        *dst = s ? strdup(s) : NULL;
        return !s || *dst;
}

static void object_intent(Plan *p, IntentType t, const KubeResource *res, const cJSON *obj)
{
        Intent *i = push(p, t);
        if (!i)
                return;
        const char *name = json_get_string(obj, "metadata.name");
        const char *ns = json_get_string(obj, "metadata.namespace");
        if (!res || !name || (res->namespaced && !ns)) {
                fail(p, i, -EINVAL);
                return;
        }
        i->res = res;
        i->object = cJSON_Duplicate(obj, true);
        if (!i->object || !dup_str(&i->name, name) || !dup_str(&i->namespace, res->namespaced ? ns : NULL))
                fail(p, i, -ENOMEM);
}

void plan_apply(Plan *p, const KubeResource *res, const cJSON *obj)
{
        object_intent(p, INTENT_APPLY, res, obj);
}

void plan_create(Plan *p, const KubeResource *res, const cJSON *obj)
{
        object_intent(p, INTENT_CREATE, res, obj);
}

void plan_update(Plan *p, const KubeResource *res, const cJSON *obj)
{
        object_intent(p, INTENT_UPDATE, res, obj);
}

void plan_update_status(Plan *p, const KubeResource *res, const cJSON *obj)
{
        object_intent(p, INTENT_UPDATE_STATUS, res, obj);
}

void plan_patch(Plan *p, const KubeResource *res, const char *ns, const char *name, KubePatchType type,
                const cJSON *patch)
{
        Intent *i = push(p, INTENT_PATCH);
        if (!i)
                return;
        if (!res || !name || !patch) {
                fail(p, i, -EINVAL);
                return;
        }
        i->res = res;
        i->patch_type = type;
        i->object = cJSON_Duplicate(patch, true);
        if (!i->object || !dup_str(&i->name, name) || !dup_str(&i->namespace, ns))
                fail(p, i, -ENOMEM);
}

void plan_delete(Plan *p, const KubeResource *res, const char *ns, const char *name, const char *uid)
{
        Intent *i = push(p, INTENT_DELETE);
        if (!i)
                return;
        if (!res || !name) {
                fail(p, i, -EINVAL);
                return;
        }
        i->res = res;
        if (!dup_str(&i->name, name) || !dup_str(&i->namespace, ns) || !dup_str(&i->precondition_uid, uid))
                fail(p, i, -ENOMEM);
}

void plan_condition(Plan *p, const char *type, const char *status, const char *reason, const char *fmt, ...)
{
        Intent *i = push(p, INTENT_CONDITION);
        va_list ap;

        if (!i)
                return;
        if (!type || !status || !reason) {
                fail(p, i, -EINVAL);
                return;
        }
        if (fmt) {
                va_start(ap, fmt);
                if (vasprintf(&i->cond_message, fmt, ap) < 0)
                        i->cond_message = NULL;
                va_end(ap);
        }
        if ((fmt && !i->cond_message) || !dup_str(&i->cond_type, type) ||
            !dup_str(&i->cond_status, status) || !dup_str(&i->cond_reason, reason))
                fail(p, i, -ENOMEM);
}

void plan_event(Plan *p, bool warning, const char *reason, const char *fmt, ...)
{
        Intent *i = push(p, INTENT_EVENT);
        va_list ap;

        if (!i)
                return;
        if (!reason || !fmt) {
                fail(p, i, -EINVAL);
                return;
        }
        i->warning = warning;
        va_start(ap, fmt);
        if (vasprintf(&i->message, fmt, ap) < 0)
                i->message = NULL;
        va_end(ap);
        if (!i->message || !dup_str(&i->reason, reason))
                fail(p, i, -ENOMEM);
}

void plan_waiting(Plan *p, const char *reason, const char *fmt, ...)
{
        va_list ap;

        if (!p || p->waiting)
                return;
        if (!reason || !fmt) {
                if (p->error >= 0)
                        p->error = -EINVAL;
                return;
        }
        va_start(ap, fmt);
        if (vasprintf(&p->waiting, fmt, ap) < 0)
                p->waiting = NULL;
        va_end(ap);
        if (!p->waiting || !(p->waiting_reason = strdup(reason))) {
                p->waiting = mfree(p->waiting);
                if (p->error >= 0)
                        p->error = -ENOMEM;
        }
}

bool intent_is_etcd_membership(const Intent *i)
{
        return i->type == INTENT_ETCD_ADD_LEARNER || i->type == INTENT_ETCD_PROMOTE ||
               i->type == INTENT_ETCD_REMOVE || i->type == INTENT_ETCD_UPDATE_PEER;
}

bool intent_is_etcd(const Intent *i)
{
        return intent_is_etcd_membership(i) || i->type == INTENT_ETCD_DEFRAGMENT ||
               i->type == INTENT_ETCD_COMPACT || i->type == INTENT_ETCD_DISARM ||
               i->type == INTENT_ETCD_MOVE_LEADER || i->type == INTENT_ETCD_DOWNGRADE;
}

static Intent *etcd_intent(Plan *p, IntentType t, const char *name)
{
        for (size_t k = 0; k < p->n; k++)
                if (intent_is_etcd(&p->intents[k])) {
                        if (p->error >= 0)
                                p->error = -EBUSY; /* one change to etcd at a time */
                        return NULL;
                }
        Intent *i = push(p, t);
        if (i && !dup_str(&i->name, name ? name : "(unnamed)")) {
                fail(p, i, -ENOMEM);
                return NULL;
        }
        return i;
}

void plan_etcd_add_learner(Plan *p, const char *name, const char *peer_url)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_ADD_LEARNER, name);
        if (i && (!peer_url || !dup_str(&i->peer_url, peer_url)))
                fail(p, i, peer_url ? -ENOMEM : -EINVAL);
}

void plan_etcd_promote(Plan *p, const char *name, uint64_t id)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_PROMOTE, name);
        if (i)
                i->member_id = id;
}

void plan_etcd_remove(Plan *p, const char *name, uint64_t id)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_REMOVE, name);
        if (i)
                i->member_id = id;
}

void plan_etcd_update_peer(Plan *p, const char *name, uint64_t id, const char *peer_url)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_UPDATE_PEER, name);
        if (!i)
                return;
        i->member_id = id;
        if (!peer_url || !dup_str(&i->peer_url, peer_url))
                fail(p, i, peer_url ? -ENOMEM : -EINVAL);
}

void plan_etcd_defragment(Plan *p, const char *name, uint64_t id, const char *endpoint, const char *detail)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_DEFRAGMENT, name);
        if (!i)
                return;
        i->member_id = id;
        if (!endpoint || !dup_str(&i->endpoint, endpoint) || (detail && !dup_str(&i->detail, detail)))
                fail(p, i, endpoint ? -ENOMEM : -EINVAL);
}

void plan_etcd_compact(Plan *p, uint64_t revision)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_COMPACT, "cluster");
        if (i)
                i->revision = revision;
}

void plan_etcd_disarm(Plan *p, const char *name, uint64_t id, const char *alarm)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_DISARM, name);
        if (!i)
                return;
        i->member_id = id;
        if (!alarm || !dup_str(&i->alarm, alarm))
                fail(p, i, alarm ? -ENOMEM : -EINVAL);
}

void plan_etcd_move_leader(Plan *p, const char *name, uint64_t target, uint64_t leader,
                           const char *leader_endpoint)
{
        Intent *i = etcd_intent(p, INTENT_ETCD_MOVE_LEADER, name);
        if (!i)
                return;
        i->member_id = target;
        i->from_id = leader;
        if (!leader_endpoint || !dup_str(&i->endpoint, leader_endpoint))
                fail(p, i, leader_endpoint ? -ENOMEM : -EINVAL);
}

void plan_etcd_downgrade(Plan *p, const char *action, const char *version)
{
        bool ok = action && (streq(action, "CANCEL") || (streq(action, "ENABLE") && version));
        Intent *i = etcd_intent(p, INTENT_ETCD_DOWNGRADE, "cluster");
        if (i && (!ok || !dup_str(&i->action, action) || (version && !dup_str(&i->version, version))))
                fail(p, i, ok ? -ENOMEM : -EINVAL);
}

void plan_requeue_after(Plan *p, usec_t delay)
{
        if (p->requeue_after == 0 || delay < p->requeue_after)
                p->requeue_after = delay;
}

const char *intent_type_to_string(IntentType t)
{
        static const char *const names[_INTENT_TYPE_MAX] = {
                [INTENT_APPLY] = "apply",
                [INTENT_CREATE] = "create",
                [INTENT_UPDATE] = "update",
                [INTENT_UPDATE_STATUS] = "update-status",
                [INTENT_PATCH] = "patch",
                [INTENT_DELETE] = "delete",
                [INTENT_CONDITION] = "condition",
                [INTENT_EVENT] = "event",
                [INTENT_ETCD_ADD_LEARNER] = "etcd-add-learner",
                [INTENT_ETCD_PROMOTE] = "etcd-promote",
                [INTENT_ETCD_REMOVE] = "etcd-remove",
                [INTENT_ETCD_UPDATE_PEER] = "etcd-update-peer",
                [INTENT_ETCD_DEFRAGMENT] = "etcd-defragment",
                [INTENT_ETCD_COMPACT] = "etcd-compact",
                [INTENT_ETCD_DISARM] = "etcd-disarm",
                [INTENT_ETCD_MOVE_LEADER] = "etcd-move-leader",
                [INTENT_ETCD_DOWNGRADE] = "etcd-downgrade",
        };
        return t >= 0 && t < _INTENT_TYPE_MAX ? names[t] : "invalid";
}

char *intent_describe(const Intent *i)
{
        switch (i->type) {
        case INTENT_CONDITION:
                return strdup_printf("condition %s=%s %s", i->cond_type, i->cond_status, i->cond_reason);
        case INTENT_EVENT:
                return strdup_printf("event %s %s: %s", i->warning ? "Warning" : "Normal", i->reason,
                                     i->message);
        case INTENT_ETCD_ADD_LEARNER:
                return strdup_printf("etcd add learner %s (%s)", i->name, i->peer_url);
        case INTENT_ETCD_PROMOTE:
        case INTENT_ETCD_REMOVE: {
                char hex[17];
                return strdup_printf("%s %s (%s)",
                                     i->type == INTENT_ETCD_PROMOTE ? "etcd promote" : "etcd remove",
                                     i->name, etcd_id_to_hex(i->member_id, hex));
        }
        case INTENT_ETCD_UPDATE_PEER: {
                char hex[17];
                return strdup_printf("etcd update member %s (%s) to peer URL %s", i->name,
                                     etcd_id_to_hex(i->member_id, hex), i->peer_url);
        }
        case INTENT_ETCD_DEFRAGMENT:
                return strdup_printf("etcd defragment %s (%s)", i->name, i->endpoint);
        case INTENT_ETCD_COMPACT:
                return strdup_printf("etcd compact to revision %llu", (unsigned long long) i->revision);
        case INTENT_ETCD_DISARM:
                return strdup_printf("etcd disarm %s of %s", i->alarm, i->name);
        case INTENT_ETCD_MOVE_LEADER:
                return strdup_printf("etcd move leader to %s (from %s)", i->name, i->endpoint);
        case INTENT_ETCD_DOWNGRADE:
                return streq_ptr(i->action, "CANCEL")
                               ? strdup("etcd downgrade cancel")
                               : strdup_printf("etcd downgrade %s to %s", strempty(i->action),
                                               strempty(i->version));
        default:
                return strdup_printf("%s %s %s%s%s", intent_type_to_string(i->type), i->res->plural,
                                     strempty(i->namespace), i->namespace ? "/" : "", i->name);
        }
}
