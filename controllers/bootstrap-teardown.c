/* BootstrapTeardownController: the end of the bootstrap. It reports
 * EtcdRunningInCluster once enough healthy members run on the masters (as
 * many as the scaling strategy asks: three, two with delayed HA, one on a
 * single-replica or unsafe non-HA cluster), and
 * removes the bootstrap member only when every gate holds, in the order of
 * the contract: the masters are voting members and published in
 * etcd-endpoints; every kube-apiserver runs a revision whose etcd-servers
 * list every voting master; bootstrap is complete (kube-system/bootstrap
 * says so, or the Event named bootstrap-finished exists); no node is being rolled
 * out to a new etcd revision (its member restarts any moment); and removing
 * the member keeps quorum with every remaining voter healthy. Then
 * EtcdBootstrapMemberRemoved. (The bootstrap annotation goes afterwards, in
 * EtcdEndpointsController.) */
#include "base/json.h"
#include "base/yaml.h"
#include "controllers.h"
#include "facts.h"

/* Every kube-apiserver node is at a revision whose etcd-servers include every voting master. */
static bool kube_apiservers_moved(const SyncContext *ctx, const EtcdViewSnapshot *s,
                                  const EtcdMemberState *bootstrap, char *why, size_t n)
{
        const KubeObject *kas = op_get(ctx, W_KUBEAPISERVERS, NULL, "cluster");
        cJSON *ns;
        if (!kas) {
                (void) snprintf(why, n, "kubeapiservers/cluster does not exist yet");
                return false;
        }
        cJSON *statuses = json_get_array(kas->json, "status.nodeStatuses");
        if (cJSON_GetArraySize(statuses) == 0) {
                (void) snprintf(why, n, "no kube-apiserver reports a revision yet");
                return false;
        }
        JSON_ARRAY_FOREACH (ns, statuses) {
                int64_t rev = 0;
                char name[64];
                if (json_get_int64(ns, "currentRevision", &rev) < 0 || rev <= 0) {
                        (void) snprintf(why, n, "kube-apiserver on %s has no current revision",
                                        strempty(json_get_string(ns, "nodeName")));
                        return false;
                }
                (void) snprintf(name, sizeof name, "config-%lld", (long long) rev);
                const KubeObject *cm = op_get(ctx, W_KAS_CONFIGMAPS, NS_KAS, name);
                /* The key has a dot in it, so no dotted path lookup here. */
                cJSON *data = cm ? json_get_object(cm->json, "data") : NULL;
                cJSON *v = data ? cJSON_GetObjectItemCaseSensitive(data, "config.yaml") : NULL;
                const char *text = json_string(v);
                _cleanup_(cJSON_Deletep) cJSON *cfg = NULL;
                if (!text || yaml_parse(text, strlen(text), &cfg, NULL) < 0) {
                        (void) snprintf(why, n, "kube-apiserver revision %lld has no readable config",
                                        (long long) rev);
                        return false;
                }
                cJSON *servers = json_get_array(cfg, "apiServerArguments.etcd-servers");
                for (size_t i = 0; i < s->n_members; i++) {
                        const EtcdMemberState *m = &s->states[i];
                        if (m == bootstrap || m->is_learner || !m->client_url)
                                continue;
                        bool listed = false;
                        cJSON *srv;
                        JSON_ARRAY_FOREACH (srv, servers)
                                listed |= streq_ptr(json_string(srv), m->client_url);
                        if (!listed) {
                                (void) snprintf(why, n, "kube-apiserver revision %lld does not list %s yet",
                                                (long long) rev, m->client_url);
                                return false;
                        }
                }
        }
        return true;
}

static int sync_teardown(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        char why[256];

        if (topology_holds_back(ctx, p))
                return 0;

        if (!s || s->error < 0 || !s->members) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        const EtcdMemberState *bootstrap = bootstrap_member(ctx, s);
        ScalingStrategy strategy = scaling_strategy(ctx);
        size_t needed = scaling_members_before_teardown(strategy); /* the bootstrap member and the masters */

        if (!bootstrap) {
                /* Upstream's reasons once the bootstrap member is gone. */
                plan_condition(p, "EtcdRunningInCluster", "True", "BootstrapAlreadyRemoved",
                               "the bootstrap member is gone and etcd runs on the masters");
                plan_condition(p, "EtcdBootstrapMemberRemoved", "True", "BootstrapMemberRemoved",
                               "etcd bootstrap member is removed");
                return 0;
        }

        /* Every member but the bootstrap one must be a healthy, started voter. */
        size_t good = 0;
        bool others_ok = true;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                bool ok = !m->is_learner && m->started && m->healthy;
                if (m != bootstrap && !ok)
                        others_ok = false;
                good += ok || m == bootstrap;
        }
        if (s->n_members < needed || !others_ok) {
                plan_condition(p, "EtcdRunningInCluster", "False", "NotEnoughEtcdMembers",
                               "%zu of %zu etcd members (with the bootstrap member) are healthy voters (%s)",
                               good, needed, scaling_strategy_to_string(strategy));
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "BootstrapMemberPresent",
                               "waiting for enough etcd members on the masters");
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        plan_condition(p, "EtcdRunningInCluster", "True", "EnoughEtcdMembers",
                       "%zu etcd members run on the masters", s->n_members - 1);

        if (!kube_apiservers_moved(ctx, s, bootstrap, why, sizeof why)) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "WaitingForKubeAPIServer", "%s",
                               why);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (!bootstrap_reported_complete(ctx)) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "WaitingForBootstrapComplete",
                               "kube-system/bootstrap does not say complete yet");
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        /* A node being rolled out restarts its etcd at any moment: a voter down just as the
         * bootstrap member goes would be one fewer than the health seen here. (Between two
         * nodes of a rollout no restart is pending, and the removal takes a fraction of the
         * time the next installer needs to stop a member.) */
        int64_t target = 0;
        const char *rolling = etcd_node_rolling_out(op_etcd_cr(ctx), &target);
        if (rolling) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "WaitingForRollout",
                               "node %s is being rolled out to etcd revision %" PRId64
                               " (its etcd restarts any moment)",
                               rolling, target);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (!etcd_view_removal_keeps_quorum(s, bootstrap->id)) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "UnsafeToRemove",
                               "removing the bootstrap member now would not leave every voter healthy");
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "RemovingBootstrapMember",
                       "removing the bootstrap member");
        plan_etcd_remove(p, bootstrap->name ? bootstrap->name : BOOTSTRAP_MEMBER_NAME, bootstrap->id);
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_ETCD_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_EVENTS),
        OP_WATCH(W_KUBEAPISERVERS),  OP_WATCH(W_KAS_CONFIGMAPS),         OP_WATCH(W_ETCD_CR),
        OP_WATCH_ETCD_NODES,         OP_WATCH(W_INFRASTRUCTURES),        OP_WATCH(W_NAMESPACES)};

const ControllerSpec controller_bootstrap_teardown = {
        .name = "BootstrapTeardownController",
        .degraded_condition = "BootstrapTeardownDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * USEC_PER_SEC,
        .sync = sync_teardown,
};
