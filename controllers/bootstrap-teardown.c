/* BootstrapTeardownController: the end of the bootstrap. It reports
 * EtcdRunningInCluster once enough healthy members run on the masters, and
 * removes the bootstrap member only when every gate holds, in the order of
 * the contract: the masters are voting members and published in
 * etcd-endpoints; every kube-apiserver runs a revision whose etcd-servers
 * list every voting master; bootstrap is complete (kube-system/bootstrap
 * says so, or the bootstrap-finished event exists); and removing the member
 * keeps quorum with every remaining voter healthy. Then
 * EtcdBootstrapMemberRemoved. (The bootstrap annotation goes afterwards, in
 * EtcdEndpointsController.) */
#include "base/json.h"
#include "base/yaml.h"
#include "common.h"
#include "controllers.h"

#define BOOTSTRAP_ANNOTATION "alpha.installer.openshift.io/etcd-bootstrap"

static const char *bootstrap_ip(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, "etcd-endpoints");
        cJSON *ann = cm ? json_get_object(cm->json, "metadata.annotations") : NULL;
        cJSON *v = ann ? cJSON_GetObjectItemCaseSensitive(ann, BOOTSTRAP_ANNOTATION) : NULL;
        return json_string(v);
}

/* The member the installer started on the bootstrap host. */
static const EtcdMember *find_bootstrap(const EtcdViewSnapshot *s, const char *ip)
{
        for (size_t i = 0; i < s->members->n_members; i++) {
                const EtcdMember *m = &s->members->members[i];
                if (streq_ptr(m->name, "etcd-bootstrap"))
                        return m;
                for (size_t k = 0; ip && k < m->n_peer_urls; k++) {
                        char url[128];
                        (void) snprintf(url, sizeof url,
                                        strchr(ip, ':') ? "https://[%s]:2380" : "https://%s:2380", ip);
                        if (streq(m->peer_urls[k], url))
                                return m;
                }
        }
        return NULL;
}

bool bootstrap_is_complete(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "bootstrap");
        if (cm && streq_ptr(json_get_string(cm->json, "data.status"), "complete"))
                return true;
        /* The seed's other signal: an event named bootstrap-finished in kube-system. */
        _cleanup_free_ const KubeObject **events = NULL;
        size_t n = 0;
        if (op_list(ctx, W_KUBE_SYSTEM_EVENTS, &events, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(json_get_string(events[i]->json, "reason"), "BootstrapFinished") ||
                    startswith(events[i]->name, "bootstrap-finished"))
                        return true;
        return false;
}

static bool unsafe_single_replica(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v = cr ? json_get(cr->json, "spec.unsupportedConfigOverrides."
                                           "useUnsupportedUnsafeNonHANonProductionUnstableEtcd")
                      : NULL;
        return cJSON_IsTrue(v) || streq_ptr(json_string(v), "true");
}

/* Every kube-apiserver node is at a revision whose etcd-servers include every voting master. */
static bool kube_apiservers_moved(const SyncContext *ctx, const EtcdViewSnapshot *s,
                                  const EtcdMember *bootstrap, char *why, size_t n)
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
                for (size_t i = 0; i < s->members->n_members; i++) {
                        const EtcdMember *m = &s->members->members[i];
                        if (m == bootstrap || m->is_learner || m->n_client_urls == 0)
                                continue;
                        bool listed = false;
                        cJSON *srv;
                        JSON_ARRAY_FOREACH (srv, servers)
                                listed |= streq_ptr(json_string(srv), m->client_urls[0]);
                        if (!listed) {
                                (void) snprintf(why, n, "kube-apiserver revision %lld does not list %s yet",
                                                (long long) rev, m->client_urls[0]);
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

        if (!s || s->error < 0 || !s->members) {
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        const EtcdMember *bootstrap = find_bootstrap(s, bootstrap_ip(ctx));
        size_t needed = unsafe_single_replica(ctx) ? 2 : 4; /* the bootstrap member plus the masters */

        if (!bootstrap) {
                plan_condition(p, "EtcdRunningInCluster", "True", "EnoughEtcdMembers",
                               "the bootstrap member is gone and etcd runs on the masters");
                plan_condition(p, "EtcdBootstrapMemberRemoved", "True", "BootstrapAlreadyRemoved",
                               "no bootstrap member in the cluster");
                return 0;
        }

        /* Every member but the bootstrap one must be a healthy, started voter. */
        size_t good = 0;
        bool others_ok = true;
        for (size_t i = 0; i < s->members->n_members; i++) {
                const EtcdMember *m = &s->members->members[i];
                bool ok = !m->is_learner && s->states[i].started && s->states[i].healthy;
                if (m != bootstrap && !ok)
                        others_ok = false;
                good += ok || m == bootstrap;
        }
        if (s->members->n_members < needed || !others_ok) {
                plan_condition(p, "EtcdRunningInCluster", "False", "NotEnoughEtcdMembers",
                               "%zu of %zu etcd members (with the bootstrap member) are healthy voters",
                               good, needed);
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "BootstrapMemberPresent",
                               "waiting for enough etcd members on the masters");
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        plan_condition(p, "EtcdRunningInCluster", "True", "EnoughEtcdMembers",
                       "%zu etcd members run on the masters", s->members->n_members - 1);

        if (!kube_apiservers_moved(ctx, s, bootstrap, why, sizeof why)) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "WaitingForKubeAPIServer", "%s",
                               why);
                plan_requeue_after(p, 5 * USEC_PER_SEC);
                return 0;
        }
        if (!bootstrap_is_complete(ctx)) {
                plan_condition(p, "EtcdBootstrapMemberRemoved", "False", "WaitingForBootstrapComplete",
                               "kube-system/bootstrap does not say complete yet");
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
        plan_etcd_remove(p, "etcd-bootstrap", bootstrap->id);
        return 0;
}

static const WatchSpec watches[] = {WATCH_ETCD_CONFIGMAPS,    WATCH_KUBE_SYSTEM_CONFIGMAPS,
                                    WATCH_KUBE_SYSTEM_EVENTS, WATCH_KUBEAPISERVERS,
                                    WATCH_KAS_CONFIGMAPS,     WATCH_ETCD_CR};

const ControllerSpec controller_bootstrap_teardown = {
        .name = "BootstrapTeardownController",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * USEC_PER_SEC,
        .sync = sync_teardown,
};
