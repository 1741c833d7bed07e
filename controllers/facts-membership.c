/* The facts of etcd membership (facts.h): peer URLs as canonical IPs, which member
 * runs on which master (and which master moved or waits to join), the leader's
 * successor, and a member whose data is damaged. */
#include "facts.h"

#include <arpa/inet.h>
#include <inttypes.h>

#include "base/json.h"

int url_host_ip(const char *url, IpAddr *ret)
{
        const char *p = url ? strstr(url, "://") : NULL;
        const char *end;
        char host[INET6_ADDRSTRLEN];

        assert_return(ret, -EINVAL);
        if (!p)
                return -EINVAL;
        p += 3;
        if (*p == '[') {
                p++;
                end = strchr(p, ']');
        } else
                end = p + strcspn(p, ":/");
        if (!end || end == p || (size_t) (end - p) >= sizeof host)
                return -EINVAL;
        memcpy(host, p, end - p);
        host[end - p] = 0;
        return ip_parse(host, ret);
}

int etcd_peer_url_for_ip(const char *ip, char *buf, size_t n)
{
        char host[INET6_ADDRSTRLEN + 2];
        IpAddr a;

        assert_return(buf, -EINVAL);
        if (!ip || ip_parse(ip, &a) < 0)
                return -EINVAL;
        if (snprintf(buf, n, "https://%s:%d", ip_url_host(&a, host, sizeof host), ETCD_PEER_PORT) >= (int) n)
                return -ENOBUFS;
        return 0;
}

bool etcd_member_has_ip(const EtcdMemberState *m, const IpAddr *a)
{
        for (size_t k = 0; m && m->member && k < m->member->n_peer_urls; k++) {
                IpAddr h;
                if (url_host_ip(m->member->peer_urls[k], &h) >= 0 && ip_equal(&h, a))
                        return true;
        }
        return false;
}

const EtcdMemberState *member_of_node(const EtcdViewSnapshot *s, const KubeObject *node)
{
        const EtcdMemberState *by_name = etcd_view_find_by_name(s, node->name);
        cJSON *a;

        if (by_name)
                return by_name;
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                IpAddr ip;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP") ||
                    ip_parse(strempty(json_get_string(a, "address")), &ip) < 0)
                        continue;
                for (size_t i = 0; s && i < s->n_members; i++)
                        if (etcd_member_has_ip(&s->states[i], &ip))
                                return &s->states[i];
        }
        return NULL;
}

const char *etcd_member_label(const EtcdMemberState *m, char hex[static 17])
{
        return m->name ? m->name : etcd_id_to_hex(m->id, hex);
}

const EtcdMemberState *leader_handover_target(const EtcdViewSnapshot *s,
                                              bool (*skip)(const EtcdMemberState *m))
{
        const EtcdMemberState *best = NULL;
        for (size_t i = 0; s && i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m->id == s->leader || m->is_learner || !m->started || !m->healthy || !m->has_status ||
                    (skip && skip(m)))
                        continue;
                if (!best || m->status.raft_applied_index > best->status.raft_applied_index)
                        best = m;
        }
        return best;
}

/* What etcd (and bbolt under it) write when the data on disk is damaged. */
static const char *const damaged_data_messages[] = {
        "failed to open database",
        "invalid database",
        "checksum error",
        "crc mismatch",
        "unexpected fault address",
        "assertion failed: Page expected",
        "failed to recover v3 backend",
        "database file size changed",
};

#define DAMAGED_MIN_EXITS 3

bool member_data_damaged(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m,
                         char *why, size_t n)
{
        cJSON *cs;
        for (size_t i = 0; s && i < s->n_alarms; i++)
                if (s->alarms[i].member_id == m->id && streq_ptr(s->alarms[i].alarm, "CORRUPT")) {
                        (void) snprintf(why, n, "it raised the CORRUPT alarm");
                        return true;
                }
        const KubeObject *pod = m->name ? etcd_pod_of_node(ctx, m->name) : NULL;
        JSON_ARRAY_FOREACH (cs, pod ? json_get_array(pod->json, "status.containerStatuses") : NULL) {
                int64_t restarts = 0;
                if (!streq_ptr(json_get_string(cs, "name"), "etcd"))
                        continue;
                /* Running now: the last exit is history. A member that rejoined empty runs in
                 * the same pod, which keeps its predecessor's restarts and last exit; a damaged
                 * one spends its time down, in CrashLoopBackOff. */
                if (json_get_object(cs, "state.running"))
                        return false;
                const char *msg = json_get_string(cs, "lastState.terminated.message");
                if (json_get_int64(cs, "restartCount", &restarts) < 0 || restarts < DAMAGED_MIN_EXITS ||
                    !msg)
                        return false;
                for (size_t k = 0; k < ELEMENTSOF(damaged_data_messages); k++)
                        if (strstr(msg, damaged_data_messages[k])) {
                                (void) snprintf(why, n,
                                                "its etcd exited %" PRId64 " times, last saying \"%s\"",
                                                restarts, damaged_data_messages[k]);
                                return true;
                        }
                return false;
        }
        return false;
}

bool replace_damaged_members(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v =
                cr ? json_get(cr->json, "spec.unsupportedConfigOverrides." REPLACE_DAMAGED_OVERRIDE) : NULL;
        return cJSON_IsTrue(v) || streq_ptr(json_string(v), "true");
}

const KubeObject *node_of_member(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        if (!m || op_list_etcd_nodes(ctx, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (member_of_node(s, nodes[k]) == m)
                        return nodes[k];
        return NULL;
}

/* How many of the node's InternalIPs parse, and whether one of them is in the member's peer URLs. */
static size_t node_ips_against_member(const KubeObject *node, const EtcdMemberState *m, bool *ret_has)
{
        size_t n = 0;
        cJSON *a;
        *ret_has = false;
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                IpAddr ip;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP") ||
                    ip_parse(strempty(json_get_string(a, "address")), &ip) < 0)
                        continue;
                n++;
                *ret_has |= etcd_member_has_ip(m, &ip);
        }
        return n;
}

const KubeObject *moved_master_of_member(const SyncContext *ctx, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        const KubeObject *named = NULL;
        size_t n = 0;
        bool has;

        if (!m || !m->name || !m->member || m->member->n_peer_urls == 0 ||
            op_list_etcd_nodes(ctx, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++) {
                size_t ips = node_ips_against_member(nodes[k], m, &has);
                if (has)
                        return NULL; /* a master has the member's address: not moved */
                if (streq(nodes[k]->name, m->name) && ips > 0)
                        named = nodes[k];
        }
        return named;
}

const KubeObject *master_joining(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        if (op_list_etcd_nodes(ctx, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (!member_of_node(s, nodes[k]) &&
                    !machine_pending_deletion(machine_of_node(ctx, nodes[k]->name)))
                        return nodes[k];
        return NULL;
}

bool etcd_down_at_revision(const SyncContext *ctx, const KubeObject *node, const EtcdMemberState *m,
                           int64_t rev)
{
        const KubeObject *pod = node ? etcd_pod_of_node(ctx, node->name) : NULL;
        return pod && m && !m->healthy && !pod_is_ready(pod) &&
               revision_number(kube_object_label(pod, "revision"), 0) == rev;
}

const KubeObject *voter_down_at_revision(const SyncContext *ctx, const EtcdViewSnapshot *s, int64_t latest)
{
        const KubeObject *first = NULL;

        if (!s || latest <= 0 || etcd_view_count_healthy_voters(s) < etcd_view_quorum(s))
                return NULL;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m->is_learner || m->healthy)
                        continue;
                const KubeObject *node = node_of_member(ctx, s, m);
                if (!etcd_down_at_revision(ctx, node, m, latest))
                        return NULL;
                first = first ? first : node;
        }
        return first;
}

EtcdDowngrade etcd_downgrade_state(const EtcdViewSnapshot *s, EtcdMinor image, char *why, size_t n)
{
        int lowest = -1, target = -1;
        bool enabled = false, storage_newer = false;
        size_t answered = 0, used = 0;

        if (n)
                why[0] = 0;
        for (size_t i = 0; s && i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                int minor = m->has_status ? etcd_version_minor(m->status.version) : -1;
                if (minor < 0)
                        continue;
                answered++;
                if (lowest < 0 || minor < lowest)
                        lowest = minor;
                int storage = etcd_version_minor(m->status.storage_version);
                if (storage > (int) image)
                        storage_newer = true;
                if (m->status.downgrade_enabled) {
                        enabled = true;
                        target = etcd_version_minor(m->status.downgrade_target);
                }
                if (used < n) {
                        int k = snprintf(why + used, n - used, "%s%s %s%s%s", used ? ", " : "",
                                         m->name ? m->name : "(unstarted)", m->status.version,
                                         *m->status.storage_version ? " storage " : "",
                                         m->status.storage_version);
                        used = k < 0 ? n : MIN(n, used + (size_t) k);
                }
        }
        if (answered == 0)
                return ETCD_DOWNGRADE_UNKNOWN;
        if (enabled && target != (int) image)
                return ETCD_DOWNGRADE_STALE;
        if (lowest <= (int) image)
                return ETCD_DOWNGRADE_NONE;
        if (!enabled)
                return ETCD_DOWNGRADE_NEEDED;
        return storage_newer ? ETCD_DOWNGRADE_MIGRATING : ETCD_DOWNGRADE_READY;
}
