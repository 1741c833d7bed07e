/* UnsupportedConfigOverridesController: while etcds/cluster
 * spec.unsupportedConfigOverrides sets anything, condition
 * UnsupportedConfigOverridesUpgradeable is False (reason
 * UnsupportedConfigOverridesSet, "setting: [a b.c]" listing the overridden
 * leaves, sorted), so clusteroperators/etcd says Upgradeable=False and the
 * cluster-version operator refuses a minor upgrade until they are removed; True
 * (NoUnsupportedConfigOverrides) otherwise. As library-go's controller of that
 * name, with one difference: an override object with no keys (`{}`) sets
 * nothing and blocks nothing. Arrays count by index ("a.0.b"). */
#include <stdlib.h>

#include "base/buf.h"
#include "base/json.h"
#include "controllers.h"
#include "facts.h"

#define CONDITION       "UnsupportedConfigOverridesUpgradeable"
#define MESSAGE_MAX     4096
#define MAX_PATHS       256 /* beyond that, counted, not listed */
#define OVERRIDES_FIELD "spec.unsupportedConfigOverrides"
#define CLEAR_OVERRIDES \
        "oc patch etcd cluster --type=merge -p '{\"spec\":{\"unsupportedConfigOverrides\":null}}'"

typedef struct Paths {
        char *v[MAX_PATHS];
        size_t n, dropped;
} Paths;

static void paths_done(Paths *ps)
{
        for (size_t i = 0; i < ps->n; i++)
                free(ps->v[i]);
        ps->n = 0;
}

static int paths_add(Paths *ps, const char *path)
{
        if (ps->n == MAX_PATHS) {
                ps->dropped++;
                return 0;
        }
        ps->v[ps->n] = strdup(path);
        if (!ps->v[ps->n])
                return -ENOMEM;
        ps->n++;
        return 0;
}

/* The leaves under `node`, each as its dotted path from the overrides' root. */
static int collect(const cJSON *node, const char *prefix, Paths *ps)
{
        const cJSON *child;
        size_t index = 0;

        if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
                return paths_add(ps, prefix);
        cJSON_ArrayForEach(child, node)
        {
                _cleanup_free_ char *path = NULL;
                if (cJSON_IsArray(node))
                        path = strdup_printf("%s%s%zu", prefix, *prefix ? "." : "", index++);
                else
                        path = strdup_printf("%s%s%s", prefix, *prefix ? "." : "", strempty(child->string));
                if (!path)
                        return -ENOMEM;
                int r = collect(child, path, ps);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int path_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int sync_config_overrides(const SyncContext *ctx, Plan *p)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        const cJSON *o = cr ? json_get(cr->json, OVERRIDES_FIELD) : NULL;
        Paths ps = {};
        Buf msg = BUF_INIT(MESSAGE_MAX);
        int r = 0;

        if (!cr)
                return 0; /* nothing to report on: the status controller makes etcds/cluster */
        if (o && !cJSON_IsNull(o) && (!cJSON_IsObject(o) || o->child)) {
                if ((r = collect(o, "", &ps)) < 0)
                        goto out;
                /* A scalar where an object belongs still overrides: name the field itself. */
                if (ps.n == 1 && !ps.v[0][0]) {
                        free(ps.v[0]);
                        if (!(ps.v[0] = strdup(OVERRIDES_FIELD))) {
                                r = -ENOMEM;
                                goto out;
                        }
                }
        }
        if (ps.n == 0) {
                plan_condition(p, CONDITION, "True", "NoUnsupportedConfigOverrides", "%s", "");
                goto out;
        }
        qsort(ps.v, ps.n, sizeof ps.v[0], path_cmp);
        size_t listed = 0;
        /* Bounded: a message cut short still lists what fits and counts the rest. */
        for (; listed < ps.n; listed++)
                if ((listed > 0 && buf_append(&msg, " ", 1) < 0) ||
                    buf_append(&msg, ps.v[listed], strlen(ps.v[listed])) < 0)
                        break;
        size_t more = ps.n - listed + ps.dropped;
        char tail[48] = "";
        if (more > 0)
                (void) snprintf(tail, sizeof tail, " and %zu more", more);
        plan_condition(p, CONDITION, "False", "UnsupportedConfigOverridesSet",
                       "setting: [%s]%s. Upgrades are refused while %s is set; once nothing needs it, "
                       "remove it: %s",
                       strempty(msg.data), tail, OVERRIDES_FIELD, CLEAR_OVERRIDES);
out:
        paths_done(&ps);
        buf_free(&msg);
        return r;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR)};

const ControllerSpec controller_config_overrides = {
        .name = "UnsupportedConfigOverridesController",
        .degraded_condition = "UnsupportedConfigOverridesControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .sync = sync_config_overrides,
};
