/* EtcdCertCleanerController (upstream's name): deletes the per-node
 * certificate Secrets (etcd-peer-<node>, etcd-serving-<node>,
 * etcd-serving-metrics-<node>) of a master that is gone, so that control
 * plane churn (replaced masters) does not leave key material behind. A
 * Secret goes only when all of these hold:
 *  - the bootstrap is over, and the etcd member list is known;
 *  - it is ours: type kubernetes.io/tls, openshift.io/owning-component etcd;
 *  - no master Node has its node name;
 *  - no etcd member is named after that node, and none has a peer URL on an
 *    address the certificate names (auth.openshift.io/certificate-hostnames):
 *    an etcd that may still run with it keeps it.
 * One deletion per sync, under the uid seen, each with an event. The
 * aggregate etcd-all-certs is the EtcdCertSignerController's, which lists
 * only the masters that exist; deleting a Secret here changes no revision. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "render/certs.h"

/* The node a per-node certificate Secret is for (points into `name`), NULL when it is none.
 * The longest prefix wins: etcd-serving-metrics-<node> is no serving certificate of a node
 * named metrics-<node>. */
static const char *node_of_secret(const char *name)
{
        size_t best = 0;
        for (size_t i = 0; i < ELEMENTSOF(cert_node_profiles); i++) {
                const char *prefix = cert_node_profiles[i].secret;
                if (startswith(name, prefix) && strlen(prefix) > best)
                        best = strlen(prefix);
        }
        return best && name[best] ? name + best : NULL;
}

/* A member may still use this certificate: named after the node, or with a peer URL on one
 * of the addresses it names. */
static bool certificate_in_use(const EtcdViewSnapshot *s, const KubeObject *secret, const char *node)
{
        const char *hosts = kube_object_annotation(secret, CERT_ANN_HOSTNAMES);
        if (etcd_view_find_by_name(s, node))
                return true;
        for (const char *h = hosts; h && *h;) {
                size_t n = strcspn(h, ",");
                char buf[64];
                IpAddr ip;
                if (n < sizeof buf) {
                        memcpy(buf, h, n);
                        buf[n] = 0;
                        for (size_t i = 0; ip_parse(buf, &ip) >= 0 && i < s->n_members; i++)
                                if (etcd_member_has_ip(&s->states[i], &ip))
                                        return true;
                }
                h += n + (h[n] == ',');
        }
        return false;
}

static int sync_cert_cleaner(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        _cleanup_free_ const KubeObject **secrets = NULL;
        size_t n = 0;

        if (!s || s->error < 0 || !s->members || bootstrap_phase(ctx, s) != BOOTSTRAP_OVER)
                return 0; /* the etcd view wakes this controller again */
        if (op_list(ctx, W_ETCD_SECRETS, &secrets, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                const KubeObject *sec = secrets[i];
                const char *node = node_of_secret(sec->name);
                if (!node || !streq_ptr(json_get_string(sec->json, "type"), "kubernetes.io/tls") ||
                    !streq_ptr(kube_object_annotation(sec, CERT_ANN_COMPONENT), CERT_OWNING_COMPONENT) ||
                    op_get_etcd_node(ctx, node))
                        continue;
                if (certificate_in_use(s, sec, node)) {
                        plan_waiting(p, "CertCleanerWaiting",
                                     "secret %s/%s kept: node %s is gone, but an etcd member may still use "
                                     "the certificate",
                                     NS_ETCD, sec->name, node);
                        continue;
                }
                plan_event(p, false, "CertificateRemoved",
                           "deleting secret %s/%s: node %s is gone and no etcd member uses the certificate",
                           NS_ETCD, sec->name, node);
                plan_delete(p, &KUBE_SECRETS, NS_ETCD, sec->name, kube_object_uid(sec));
                return 0;
        }
        return 0;
}

static const WatchSpec *const watches[] = {
        OP_WATCH(W_ETCD_SECRETS),           OP_WATCH_ETCD_NODES,
        OP_WATCH(W_INFRASTRUCTURES),        OP_WATCH(W_ETCD_CONFIGMAPS),
        OP_WATCH(W_KUBE_SYSTEM_CONFIGMAPS), OP_WATCH(W_KUBE_SYSTEM_EVENTS)};

const ControllerSpec controller_cert_cleaner = {
        .name = "EtcdCertCleanerController",
        .degraded_condition = "EtcdCertCleanerControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 10 * 60 * USEC_PER_SEC,
        .sync = sync_cert_cleaner,
};
