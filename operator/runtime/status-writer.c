/* The status writer: at the end of each plan, the conditions it asked for
 * and the controller's Degraded condition (and status.observedGeneration,
 * the spec's generation the sync saw) go onto the operator's status object
 * in one update, compared first with the informer's copy so that a sync
 * that changes nothing sends nothing. */
#include "base/json.h"
#include "base/log.h"
#include "runtime/conditions.h"
#include "runtime/runtime-internal.h"

static int apply_conditions(Controller *c, cJSON *status_obj)
{
        usec_t now = now_usec(CLOCK_REALTIME);
        bool changed = false;
        int r;

        cJSON *status = json_ensure_object(status_obj, "status");
        cJSON *conds = status ? cJSON_GetObjectItemCaseSensitive(status, "conditions") : NULL;
        if (!status)
                return -ENOMEM;
        if (!cJSON_IsArray(conds)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
                conds = cJSON_AddArrayToObject(status, "conditions");
                if (!conds)
                        return -ENOMEM;
        }
        /* The spec's generation this sync acted on: every controller's sync of a new spec writes
         * it once, as library-go's operators publish status.observedGeneration. */
        int64_t generation = 0, observed = 0;
        if (json_get_int64(status_obj, "metadata.generation", &generation) >= 0 && generation > 0 &&
            (json_get_int64(status, "observedGeneration", &observed) < 0 || observed != generation)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "observedGeneration");
                if (!cJSON_AddNumberToObject(status, "observedGeneration", (double) generation))
                        return -ENOMEM;
                changed = true;
        }
        bool own_degraded = false;
        for (size_t k = 0; k < c->plan.n; k++) {
                const Intent *i = &c->plan.intents[k];
                if (i->type != INTENT_CONDITION)
                        continue;
                /* A controller that judges its own Degraded (failures in a row) says so
                 * itself; a failed sync still overrides it below. */
                if (streq(i->cond_type, c->spec->degraded_condition)) {
                        own_degraded = true;
                        if (c->first_error < 0)
                                continue;
                }
                Condition cd = {i->cond_type, i->cond_status, i->cond_reason, i->cond_message};
                r = conditions_set(conds, &cd, now);
                if (r < 0)
                        return r;
                changed |= r > 0;
        }
        _cleanup_free_ char *msg = c->first_error < 0
                                           ? strdup_printf("%s: %s", strempty(c->first_error_what),
                                                           strempty(c->first_error_message))
                                           : NULL;
        if (own_degraded && c->first_error >= 0)
                return changed;
        Condition d = {c->spec->degraded_condition, c->first_error < 0 ? "True" : "False",
                       c->first_error < 0 ? "SyncError" : "AsExpected", msg};
        r = conditions_set(conds, &d, now);
        if (r < 0)
                return r;
        return changed || r > 0;
}

static void on_status_written(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;

        (void) kc;
        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        if (resp->error == 0 && resp->body) {
                uint64_t rv = 0;
                if (json_get_uint64(resp->body, "metadata.resourceVersion", &rv) >= 0 &&
                    rv > c->rt->status_rv_written)
                        c->rt->status_rv_written = rv;
        }
        /* A conflict, or a write that may have landed: compare with the object as the server
         * has it now (written again only if it still differs). */
        if ((resp->error == -ESTALE || runtime_outcome_unknown(resp->error)) &&
            ++c->conflicts < MAX_STATUS_CONFLICTS) {
                if (resp->error != -ESTALE)
                        log_info("writing conditions: %s: the write may have been carried out; reading "
                                 "the object back",
                                 kube_strerror(resp->error));
                runtime_write_conditions(c, true);
                return;
        }
        if (resp->error < 0) {
                c->stats.failures++;
                if (c->first_error >= 0)
                        c->first_error = resp->error;
                log_warning_errno(resp->error, "writing conditions failed");
        }
        runtime_finish_key(c);
}

static void on_status_get(KubeClient *kc, const KubeResponse *resp, void *userdata)
{
        Controller *c = userdata;
        int r;

        if (resp->error == -ECANCELED)
                return; /* the runtime is being freed: `c` may be gone */
        log_set_controller(c->spec->name);
        if (resp->error < 0) {
                /* Without the operator object there is nowhere to report; the key retries. */
                if (c->first_error >= 0)
                        runtime_note_failure(c, resp->error, NULL,
                                             resp->status && resp->status->message
                                                     ? resp->status->message
                                                     : kube_strerror(resp->error));
                runtime_finish_key(c);
                return;
        }
        /* The server has the object at least this new: a cached copy older than that must not be
         * compared against later (after a write whose answer was lost, it would not show the write
         * and the same conditions would go out again). */
        uint64_t rv = 0;
        if (json_get_uint64(resp->body, "metadata.resourceVersion", &rv) >= 0 &&
            rv > c->rt->status_rv_written)
                c->rt->status_rv_written = rv;
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(resp->body, true);
        r = obj ? apply_conditions(c, obj) : -ENOMEM;
        if (r <= 0) {
                if (r < 0)
                        runtime_note_failure(c, r, NULL, NULL);
                runtime_finish_key(c);
                return;
        }
        r = kube_update_status(kc, c->rt->cfg.status_res, obj, on_status_written, c);
        if (r < 0) {
                runtime_note_failure(c, r, NULL, NULL);
                runtime_finish_key(c);
        }
}

/* The cached operator object, when it is at least as new as our own newest
 * conditions write: comparing against an older copy could find "nothing to
 * change" where our previous write is still to be undone. */
static const KubeObject *status_cached(Runtime *rt)
{
        if (!rt->status_informer || !informer_has_synced(rt->status_informer))
                return NULL;
        const KubeObject *o = informer_get(rt->status_informer, NULL, rt->cfg.status_name);
        return o && o->resource_version >= rt->status_rv_written ? o : NULL;
}

/* Compares the plan's conditions with the cached object and writes only a
 * change, with the cached resourceVersion; a conflict (or no usable cache)
 * reads the object live first. Every controller syncs on every etcd view
 * refresh, so a live GET per sync was a dozen requests a second at rest. */
void runtime_write_conditions(Controller *c, bool live)
{
        Runtime *rt = c->rt;
        if (!rt->cfg.status_res || !rt->cfg.status_name) {
                runtime_finish_key(c);
                return;
        }
        const KubeObject *cached = live ? NULL : status_cached(rt);
        if (cached) {
                _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(cached->json, true);
                int r = obj ? apply_conditions(c, obj) : -ENOMEM;
                if (r == 0) {
                        runtime_finish_key(c);
                        return;
                }
                if (r > 0)
                        r = kube_update_status(rt->client, rt->cfg.status_res, obj, on_status_written, c);
                if (r < 0) {
                        runtime_note_failure(c, r, NULL, NULL);
                        runtime_finish_key(c);
                }
                return;
        }
        int r = kube_get(rt->client, rt->cfg.status_res, NULL, rt->cfg.status_name, on_status_get, c);
        if (r < 0) {
                runtime_note_failure(c, r, NULL, NULL);
                runtime_finish_key(c);
        }
}
