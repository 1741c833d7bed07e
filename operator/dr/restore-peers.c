/* A restore's questions to the other members (dr/restore.h): before an
 * in-place restore, that the running cluster no longer has this member;
 * before a quorum restore, that this member has the highest raft index of
 * those that answer. The members are those the scripts name
 * (ALL_ETCD_ENDPOINTS plus this member's own client URL), asked with the
 * ETCDCTL_* certificates. */
#include <inttypes.h>

#include "base/log.h"
#include "base/strlist.h"
#include "etcd/client.h"
#include "etcd/sync.h"
#include "host/tls.h"
#include "restore.h"

/* The members this node can ask: ALL_ETCD_ENDPOINTS plus its own client URL,
 * with the ETCDCTL_* certificates, as the scripts set them. */
typedef struct Peers {
        HttpTls tls;
        StrList eps;
        Loop *loop;
        EtcdClient *c;
        char *self;
} Peers;

static void peers_done(Peers *p)
{
        p->c = etcd_client_free(p->c);
        p->loop = loop_unref(p->loop);
        strlist_done(&p->eps);
        host_tls_done(&p->tls);
        p->self = mfree(p->self);
}

/* -ENOENT (logged by the caller) when the scripts' variables are not set. */
static int peers_open(Peers *p, const RestoreInput *in)
{
        const char *all = in->all_endpoints, *host = in->this_url_host;
        _cleanup_free_ char *err = NULL;
        int r;

        if (!all || !*all || !host || !*host)
                return -ENOENT;
        p->self = strdup_printf("https://%s:2379", host);
        if (!p->self || strlist_add_csv(&p->eps, all) < 0)
                return -ENOMEM;
        r = host_tls_load(in->cacert, in->cert, in->key, &p->tls, &err);
        if (r < 0)
                return log_warning_errno(r, "cannot load the etcd client certificates: %s", strempty(err));
        p->loop = in->loop_new ? in->loop_new() : loop_new();
        p->c = p->loop ? etcd_client_new(p->loop, &p->tls) : NULL;
        if (!p->c || (!strlist_contains(&p->eps, p->self) && strlist_add_csv(&p->eps, p->self) < 0))
                return -ENOMEM;
        return 0;
}

/* ---- in place: only for a member the running cluster no longer has ---- */

/* An in-place restore makes a one-member cluster of this node's data dir.
 * Next to a cluster that still counts this member, that member could never
 * start again (upstream's docs have the admin remove it first, and nothing
 * checks). This asks every other member that serves a quorum read and
 * refuses while one lists this member. When none answers (the whole cluster
 * is down, as for a full restore), there is nothing to collide with. */
int restore_check_not_a_member(const Restore *rs)
{
        _cleanup_(peers_done) Peers p = {};
        _cleanup_free_ char *peer = etcd_peer_url(rs->in.peer_host, 2380);
        int r;

        if (!peer)
                return -ENOMEM;
        r = peers_open(&p, &rs->in);
        if (r == -ENOENT) {
                log_warning("ALL_ETCD_ENDPOINTS or ETCD_THIS_URL_HOST is not set (cluster-restore.sh sets "
                            "them): "
                            "cannot check that the running cluster no longer has this member");
                return 0;
        }
        if (r < 0)
                return rs->in.force ? 0 : r;
        for (size_t i = 0; i < p.eps.n; i++) {
                _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
                if (streq(p.eps.v[i], p.self))
                        continue;
                if (etcd_sync_current_member_list(p.c, p.eps.v[i], 3 * USEC_PER_SEC, &l) < 0) {
                        log_info("  %s: no answer with quorum", p.eps.v[i]);
                        continue;
                }
                const EtcdMember *m = etcd_member_list_find_by_peer_url(l, peer);
                if (!m)
                        m = etcd_member_list_find_by_name(l, rs->in.name);
                if (!m) {
                        log_info("  %s: the running cluster does not list this member (%s): it can be "
                                 "restored "
                                 "in place and added again",
                                 p.eps.v[i], peer);
                        return 0;
                }
                char hex[17];
                log_error(
                        "refusing: the cluster that %s serves still has this member (%s, ID %s). Remove it "
                        "first (etcd-member-remove.sh %s on a healthy master, restore-single-member.md); "
                        "or, to "
                        "restore the whole cluster, stop etcd on every other master (disable-etcd.sh). "
                        "Nothing was changed",
                        p.eps.v[i], rs->in.name, etcd_id_to_hex(m->id, hex), rs->in.name);
                return rs->in.force ? 0 : -EEXIST;
        }
        log_info("no other member answers with quorum: restoring in place as a new cluster");
        return 0;
}

/* ---- quorum restore: is this the member to restore from? ---- */

/* Upstream leaves it to the admin to pick the voting member with the highest
 * raft index. This asks every member it can reach and refuses when this
 * member is a learner or another reachable voter is further ahead. */
int restore_check_highest_raft_index(const Restore *rs)
{
        _cleanup_(peers_done) Peers p = {};
        uint64_t mine = 0, best = 0;
        const char *best_ep = NULL;
        bool self_answered = false, self_learner = false;
        int r;

        r = peers_open(&p, &rs->in);
        if (r == -ENOENT) {
                log_warning(
                        "ALL_ETCD_ENDPOINTS or ETCD_THIS_URL_HOST is not set (quorum-restore.sh sets them): "
                        "cannot check that this member has the highest raft index");
                return rs->in.force ? 0 : -EINVAL;
        }
        if (r < 0)
                return rs->in.force ? 0 : r;
        log_info("the members this node can reach:");
        for (size_t i = 0; i < p.eps.n; i++) {
                EtcdStatus st = {};
                bool is_self = streq(p.eps.v[i], p.self);
                r = etcd_sync_status(p.c, p.eps.v[i], 3 * USEC_PER_SEC, &st);
                if (r < 0) {
                        log_info("  %s%s: no answer (%s)", p.eps.v[i], is_self ? " (this member)" : "",
                                 etcd_strerror(r));
                        etcd_status_done(&st);
                        continue;
                }
                log_info("  %s%s: raft index %" PRIu64 "%s", p.eps.v[i], is_self ? " (this member)" : "",
                         st.raft_index, st.is_learner ? ", learner" : "");
                if (is_self) {
                        self_answered = true;
                        self_learner = st.is_learner;
                        mine = st.raft_index;
                } else if (!st.is_learner && st.raft_index > best) {
                        best = st.raft_index;
                        best_ep = p.eps.v[i];
                }
                etcd_status_done(&st);
        }
        if (!self_answered) {
                log_warning("this member (%s) does not answer: its raft index is unknown", p.self);
                if (!rs->in.force) {
                        log_error("refusing: start with the member whose etcd runs and has the highest raft "
                                  "index, "
                                  "or run with --force if this one is it; nothing was changed");
                        return -EHOSTDOWN;
                }
                return 0;
        }
        if (self_learner && !rs->in.force)
                return log_error_errno(-EINVAL,
                                       "refusing: this member is a learner (it may lack committed data); "
                                       "use a voting member; nothing was changed");
        if (best > mine && !rs->in.force)
                return log_error_errno(-EINVAL,
                                       "refusing: %s is further ahead (raft index %" PRIu64 " > %" PRIu64
                                       "); run quorum-restore.sh there, or --force to lose what it has "
                                       "beyond this member; nothing was changed",
                                       best_ep, best, mine);
        log_info("this member has the highest raft index of those that answer (%" PRIu64 ")", mine);
        return 0;
}
