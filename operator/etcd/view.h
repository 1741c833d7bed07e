/* The etcd view: a poller that keeps a consistent picture of the cluster
 * (members, per-member health and status, alarms) so no controller ever
 * waits on etcd inside its sync. Each round lists members through any
 * endpoint, then asks every started member for /health and status in
 * parallel, then lists alarms; the finished round replaces the snapshot at
 * once and listeners are told. A round also starts right after any change
 * the operator makes (etcd_view_refresh). Members that report different
 * cluster IDs are flagged as split brain. */
#pragma once

#include "client.h"

typedef struct EtcdView EtcdView;

typedef struct EtcdMemberState {
        uint64_t id;
        const char *name;       /* NULL while unstarted */
        const char *client_url; /* first client URL, NULL while unstarted */
        bool started;
        bool is_learner;
        bool healthy;    /* /health said true */
        int error;       /* why not healthy: transport error, -EAGAIN (health false), ... */
        bool has_status; /* status answered */
        EtcdStatus status;
} EtcdMemberState;

typedef struct EtcdViewSnapshot {
        unsigned n_ref;
        usec_t started_at; /* CLOCK_MONOTONIC when the round began (its member list is newer) */
        usec_t taken_at;   /* CLOCK_MONOTONIC at the end of the round */
        int error;         /* < 0: the member list itself failed (no endpoint answered) */
        uint64_t cluster_id;
        uint64_t leader; /* 0 if no member reported one */
        EtcdMemberList *members;
        EtcdMemberState *states; /* one per members->members[i], same order */
        EtcdAlarm *alarms;
        size_t n_alarms;
        int alarms_error; /* alarm list needs quorum in 3.4; it may fail alone. The list is the latest
                           * answer, fetched beside the rounds (-ENODATA: none yet; < 0 with a list:
                           * the list is from an earlier answer) */
        bool split_brain;
        char *split_brain_detail;
} EtcdViewSnapshot;

EtcdViewSnapshot *etcd_view_snapshot_ref(const EtcdViewSnapshot *s);
EtcdViewSnapshot *etcd_view_snapshot_unref(EtcdViewSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdViewSnapshot *, etcd_view_snapshot_unref);

/* Pure queries on a snapshot (also used by controller tests on fixtures). */
size_t etcd_view_count_voters(const EtcdViewSnapshot *s);
size_t etcd_view_count_healthy_voters(const EtcdViewSnapshot *s);
/* Every member started and healthy (learners included) and no split brain. */
bool etcd_view_all_healthy(const EtcdViewSnapshot *s);
/* Learners plus members that were added but never started. */
size_t etcd_view_count_pending(const EtcdViewSnapshot *s);
const EtcdMemberState *etcd_view_find_by_name(const EtcdViewSnapshot *s, const char *name);
/* Would removing `id` keep quorum with every remaining voter healthy? */
bool etcd_view_removal_keeps_quorum(const EtcdViewSnapshot *s, uint64_t id);

typedef void (*EtcdViewFunc)(EtcdView *v, const EtcdViewSnapshot *snap, void *userdata);

/* Free the client before the view: that completes the view's requests
 * (with -ECANCELED) while the view still exists. */
EtcdView *etcd_view_new(EtcdClient *c, usec_t period);
EtcdView *etcd_view_free(EtcdView *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdView *, etcd_view_free);
void etcd_view_set_listener(EtcdView *v, EtcdViewFunc f, void *userdata);
int etcd_view_start(EtcdView *v);
/* Starts a round now (or right after the one in flight). */
void etcd_view_refresh(EtcdView *v);
/* The last complete snapshot (borrowed), NULL before the first round ends. */
const EtcdViewSnapshot *etcd_view_get(EtcdView *v);
