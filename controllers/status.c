/* StatusController: publishes clusteroperators.config.openshift.io/etcd, the
 * union of the conditions every controller writes on etcds/cluster, as
 * library-go's StatusSyncer does: Degraded if any *Degraded is True for
 * longer than its inertia (10 minutes for every `.*Degraded$` condition,
 * as upstream sets it, so a node reboot during an upgrade does not flap the
 * ClusterOperator; unsupportedConfigOverrides `degradedInertia: <duration>`
 * overrides it), Progressing if any
 * *Progressing is True, Available only if every *Available is True,
 * Upgradeable unless some *Upgradeable is False. A union with no source
 * condition is Unknown/NoData (Upgradeable: True). Bad unions take the
 * reason of the first offending type and list "Type: message" lines;
 * good ones say AsExpected. Also versions, as library-go's static pod
 * operators publish them, so that a cluster-version operator sees an install
 * or upgrade complete: `raw-internal` (the operator's release version)
 * always; `operator` and `etcd` (OPERATOR_IMAGE_VERSION, OPERAND_IMAGE_VERSION)
 * only once every master runs the latest revision and every member is
 * healthy, and kept as published while a later rollout runs. And
 * relatedObjects.
 *
 * The ClusterOperator is created when missing; its status is written on
 * the next sync. Sources are read sorted by type and the output has a fixed
 * shape, so a second sync over its own result plans nothing. */
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define CO_NAME           "etcd"
#define INERTIA_DEFAULT   (2 * 60 * USEC_PER_SEC)  /* a source that is not `.*Degraded$` */
#define INERTIA_DEGRADED  (10 * 60 * USEC_PER_SEC) /* upstream: every `.*Degraded$` */
#define UNION_MESSAGE_MAX (16 * 1024)

typedef struct Source {
        const char *type, *status, *reason, *message;
        usec_t since; /* lastTransitionTime, 0 when absent or malformed */
} Source;

typedef struct Inertia {
        bool overridden;
        usec_t value;
} Inertia;

static usec_t inertia_of(const Inertia *in, const char *type)
{
        size_t n = strlen(type), k = strlen("Degraded");
        if (in->overridden)
                return in->value;
        return n >= k && streq(type + n - k, "Degraded") ? INERTIA_DEGRADED : INERTIA_DEFAULT;
}

static int source_cmp(const void *a, const void *b)
{
        return strcmp(((const Source *) a)->type, ((const Source *) b)->type);
}

/* The conditions of etcds/cluster, sorted by type; *ret is NULL when there are none. */
static int sources_collect(const KubeObject *cr, Source **ret, size_t *ret_n)
{
        cJSON *conds = cr ? json_get_array(cr->json, "status.conditions") : NULL;
        size_t n = 0, cap = (size_t) cJSON_GetArraySize(conds);
        cJSON *c;

        _cleanup_free_ Source *v = cap ? calloc(cap, sizeof *v) : NULL;
        if (cap && !v)
                return -ENOMEM;
        if (!v) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        JSON_ARRAY_FOREACH (c, conds) {
                const char *type = json_get_string(c, "type"),
                           *ltt = json_get_string(c, "lastTransitionTime");
                if (!type)
                        continue;
                v[n] = (Source){.type = type,
                                .status = strempty(json_get_string(c, "status")),
                                .reason = json_get_string(c, "reason"),
                                .message = json_get_string(c, "message")};
                if (ltt && parse_rfc3339(ltt, &v[n].since) < 0)
                        v[n].since = 0;
                n++;
        }
        if (n > 1)
                qsort(v, n, sizeof *v, source_cmp);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && streq(s + a - b, suffix);
}

/* "Type: line" for every line of the message, as library-go's unionMessage. */
static void message_add(Buf *b, const Source *s)
{
        const char *m = s->message;
        if (!m || !*m)
                return;
        while (m) {
                const char *nl = strchr(m, '\n');
                size_t len = nl ? (size_t) (nl - m) : strlen(m);
                if ((b->len > 0 && buf_append(b, "\n", 1) < 0) ||
                    buf_append(b, s->type, strlen(s->type)) < 0 || buf_append(b, ": ", 2) < 0 ||
                    buf_append(b, m, len) < 0)
                        return; /* over the bound: the message is cut, never unbounded */
                m = nl ? nl + 1 : NULL;
        }
}

typedef struct Union {
        const char *type;
        const char *good;  /* the status of a healthy source: "False" for Degraded/Progressing */
        bool use_inertia;  /* Degraded only */
        bool none_is_good; /* Upgradeable: no source means True */
} Union;

/* Sets one union condition in `conds`. `requeue` gets the time until the
 * earliest source still within its inertia would count. */
static int union_set(cJSON *conds, const Union *u, const Source *src, size_t n, const Inertia *in,
                     usec_t now, usec_t *requeue)
{
        const char *bad_status = streq(u->good, "True") ? "False" : "True";
        const Source *first_bad = NULL, *first_unknown = NULL;
        size_t interesting = 0;
        Buf all = BUF_INIT(UNION_MESSAGE_MAX), bad = BUF_INIT(UNION_MESSAGE_MAX);
        Condition c = {.type = u->type};
        int r;

        for (size_t i = 0; i < n; i++) {
                const Source *s = &src[i];
                if (!has_suffix(s->type, u->type))
                        continue;
                interesting++;
                message_add(&all, s);
                if (streq(s->status, u->good))
                        continue;
                if (!streq(s->status, bad_status)) {
                        /* Unknown: only Available turns Unknown on it, no union turns bad. */
                        if (!first_unknown)
                                first_unknown = s;
                        message_add(&bad, s);
                        continue;
                }
                usec_t inertia = u->use_inertia ? inertia_of(in, s->type) : 0;
                if (inertia > 0 && s->since > 0 && now < s->since + inertia) {
                        *requeue = MIN(*requeue, s->since + inertia - now);
                        continue; /* not yet: the union does not flap on a short blip */
                }
                if (!first_bad)
                        first_bad = s;
                message_add(&bad, s);
        }

        if (first_bad) {
                c.status = bad_status;
                c.reason = first_bad->type;
                c.message = bad.data;
        } else if (first_unknown && streq(u->good, "True") && !u->none_is_good) {
                c.status = "Unknown";
                c.reason = first_unknown->type;
                c.message = bad.data;
        } else if (interesting == 0 && !u->none_is_good) {
                c.status = "Unknown";
                c.reason = "NoData";
                c.message = "no operator condition reported this yet";
        } else {
                c.status = u->good;
                c.reason = "AsExpected";
                c.message = all.len > 0 ? all.data : "All is well";
        }
        r = conditions_set(conds, &c, now);
        buf_free(&all);
        buf_free(&bad);
        return r;
}

static const Union unions[] = {
        {"Degraded", "False", true, false},
        {"Progressing", "False", false, false},
        {"Available", "True", false, false},
        {"Upgradeable", "True", false, true},
};

static int set_conditions(cJSON *conds, const KubeObject *cr, usec_t now, usec_t *requeue)
{
        _cleanup_free_ Source *src = NULL;
        size_t n = 0;
        Inertia in = {};
        int r;

        const char *state = cr ? json_get_string(cr->json, "spec.managementState") : NULL;
        if (streq_ptr(state, "Unmanaged") || streq_ptr(state, "Removed")) {
                for (size_t i = 0; i < ELEMENTSOF(unions); i++) {
                        Condition c = {unions[i].type, "Unknown", state,
                                       "the etcd operator is not managing etcd (managementState)"};
                        if ((r = conditions_set(conds, &c, now)) < 0)
                                return r;
                }
                return 0;
        }
        const char *o =
                cr ? json_get_string(cr->json, "spec.unsupportedConfigOverrides.degradedInertia") : NULL;
        if (o && parse_duration(o, &in.value) >= 0)
                in.overridden = true;
        r = sources_collect(cr, &src, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(unions); i++)
                if ((r = union_set(conds, &unions[i], src, n, &in, now, requeue)) < 0)
                        return r;
        return 0;
}

/* The etcd version when every member that answered status reports the same one. */
static const char *etcd_version(const EtcdViewSnapshot *s)
{
        const char *v = NULL;
        if (!s || s->error < 0 || !s->members)
                return NULL;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *st = &s->states[i];
                if (!st->has_status || !st->status.version[0])
                        continue;
                if (v && !streq(v, st->status.version))
                        return NULL;
                v = st->status.version;
        }
        return v;
}

static int add_version(cJSON *versions, const char *name, const char *version)
{
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(versions, e)) {
                cJSON_Delete(e);
                return -ENOMEM;
        }
        if (!cJSON_AddStringToObject(e, "name", name) || !cJSON_AddStringToObject(e, "version", version))
                return -ENOMEM;
        return 0;
}

/* The rollout is done: every master node at status.latestAvailableRevision,
 * and every member started, healthy and reporting the same etcd version. */
static bool rollout_done(const SyncContext *ctx)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);

        if (!etcd_revision_stable(op_etcd_cr(ctx), NULL, 0) || !etcd_version(s))
                return false;
        for (size_t i = 0; i < s->n_members; i++)
                if (!s->states[i].started || !s->states[i].healthy || s->states[i].is_learner)
                        return false;
        return true;
}

static cJSON *build_versions(const SyncContext *ctx, const cJSON *old_status)
{
        _cleanup_(cJSON_Deletep) cJSON *v = cJSON_CreateArray();
        const OperatorState *st = op_state(ctx);
        const char *release = st && st->operator_version ? st->operator_version : CEO_VERSION;
        const char *operator= NULL, *etcd = NULL;
        cJSON *e;

        if (rollout_done(ctx)) {
                operator= release;
                etcd = st && st->operand_version ? st->operand_version : etcd_version(op_etcd(ctx));
        } else {
                /* Installing or mid-rollout: what was published stays until this one is done. */
                JSON_ARRAY_FOREACH (e, json_get_array(old_status, "versions")) {
                        const char *name = json_get_string(e, "name");
                        if (streq_ptr(name, "operator"))
                                operator= json_get_string(e, "version");
                        else if (streq_ptr(name, "etcd"))
                                etcd = json_get_string(e, "version");
                }
        }
        if (!v || (operator&& add_version(v, "operator", operator) < 0) ||
            (etcd && add_version(v, "etcd", etcd) < 0) || add_version(v, "raw-internal", release) < 0)
                return NULL;
        return TAKE_PTR(v);
}

static cJSON *build_related_objects(void)
{
        static const struct {
                const char *group, *resource, *name;
        } related[] = {
                {"operator.openshift.io", "etcds", "cluster"},
                {"", "namespaces", NS_CONFIG},
                {"", "namespaces", NS_CONFIG_MANAGED},
                {"", "namespaces", NS_OPERATOR},
                {"", "namespaces", NS_ETCD},
        };
        _cleanup_(cJSON_Deletep) cJSON *a = cJSON_CreateArray();
        if (!a)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(related); i++) {
                cJSON *e = cJSON_CreateObject();
                if (!e || !cJSON_AddItemToArray(a, e)) {
                        cJSON_Delete(e);
                        return NULL;
                }
                if (!cJSON_AddStringToObject(e, "group", related[i].group) ||
                    !cJSON_AddStringToObject(e, "resource", related[i].resource) ||
                    !cJSON_AddStringToObject(e, "name", related[i].name))
                        return NULL;
        }
        return TAKE_PTR(a);
}

static int replace(cJSON *obj, const char *key, cJSON *item)
{
        if (!item)
                return -ENOMEM;
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
        if (!cJSON_AddItemToObject(obj, key, item)) {
                cJSON_Delete(item);
                return -ENOMEM;
        }
        return 0;
}

static int plan_create_co(Plan *p)
{
        _cleanup_(cJSON_Deletep) cJSON *co = kube_object_skeleton(&KUBE_CLUSTEROPERATORS, NULL, CO_NAME);
        if (!co || !cJSON_AddObjectToObject(co, "spec"))
                return -ENOMEM;
        log_info("creating clusteroperators/%s", CO_NAME);
        plan_create(p, &KUBE_CLUSTEROPERATORS, co);
        return 0;
}

static int sync_status(const SyncContext *ctx, Plan *p)
{
        const KubeObject *co = op_get(ctx, W_CLUSTEROPERATORS, NULL, CO_NAME);
        usec_t requeue = USEC_INFINITY;
        int r;

        if (!co)
                return plan_create_co(p);

        cJSON *old_status = json_get_object(co->json, "status");
        _cleanup_(cJSON_Deletep) cJSON *status =
                old_status ? cJSON_Duplicate(old_status, true) : cJSON_CreateObject();
        if (!status)
                return -ENOMEM;
        cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
        if (!cJSON_IsArray(conds)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
                conds = cJSON_AddArrayToObject(status, "conditions");
                if (!conds)
                        return -ENOMEM;
        }
        r = set_conditions(conds, op_etcd_cr(ctx), ctx->now, &requeue);
        if (r < 0)
                return r;
        if ((r = replace(status, "versions", build_versions(ctx, old_status))) < 0 ||
            (r = replace(status, "relatedObjects", build_related_objects())) < 0)
                return r;
        if (requeue != USEC_INFINITY)
                plan_requeue_after(p, requeue);
        if (old_status && cJSON_Compare(old_status, status, true))
                return 0;

        log_info("updating clusteroperators/%s: Degraded=%s Progressing=%s Available=%s Upgradeable=%s",
                 CO_NAME, strempty(json_get_string(conditions_find(conds, "Degraded"), "status")),
                 strempty(json_get_string(conditions_find(conds, "Progressing"), "status")),
                 strempty(json_get_string(conditions_find(conds, "Available"), "status")),
                 strempty(json_get_string(conditions_find(conds, "Upgradeable"), "status")));
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(co->json, true);
        if (!obj || replace(obj, "status", TAKE_PTR(status)) < 0)
                return -ENOMEM;
        plan_update_status(p, &KUBE_CLUSTEROPERATORS, obj);
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR), OP_WATCH(W_CLUSTEROPERATORS)};

const ControllerSpec controller_status = {
        .name = "ClusterOperatorStatus",
        .degraded_condition = "ClusterOperatorStatusDegraded",
        .reads_etcd_view = true,
        .reports_split_brain = true,
        .runs_unmanaged = true, /* it reports the state */
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 30 * USEC_PER_SEC,
        .sync = sync_status,
};
