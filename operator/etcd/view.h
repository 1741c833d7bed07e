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

/* One record per member: what the member list said (`member`, borrowed from
 * the snapshot's list) and what the member itself answered. Queries and
 * controllers read these records only, so the two sources cannot disagree. */
typedef struct EtcdMemberState {
        uint64_t id;
        const EtcdMember *member; /* peer and client URLs */
        const char *name;         /* NULL while unstarted */
        const char *client_url;   /* first client URL, NULL while unstarted */
        bool started;
        /* The member list said learner and the member did not say otherwise: a
         * status answer newer than the list that reports a voter means the
         * promotion happened in between, and for quorum a voter is the safe guess. */
        bool is_learner;
        bool healthy;    /* /health said true */
        int error;       /* why not healthy: transport error, -EAGAIN (health false), ... */
        bool has_status; /* status answered */
        EtcdStatus status;
} EtcdMemberState;

/* An endpoint the client is given (etcd-endpoints, the node addresses) that is no client
 * URL of a started member in the round's list: asked for its status too, so that a member
 * answering for another cluster is seen whichever side the list came from. */
typedef struct EtcdEndpointState {
        char *url;
        bool has_status;
        int error; /* why no status */
        uint64_t cluster_id, member_id;
} EtcdEndpointState;

typedef struct EtcdViewSnapshot {
        unsigned n_ref;
        usec_t started_at; /* CLOCK_MONOTONIC when the round began (its member list is newer) */
        usec_t taken_at;   /* CLOCK_MONOTONIC at the end of the round */
        int error;         /* < 0: the member list itself failed (no endpoint answered) */
        uint64_t cluster_id;
        uint64_t leader; /* 0 if no member reported one */
        EtcdMemberList *members;
        EtcdMemberState *states; /* one per member, in the list's order */
        size_t n_members;        /* 0 when the list failed */
        EtcdAlarm *alarms;
        size_t n_alarms;
        int alarms_error; /* alarm list needs quorum in 3.4; it may fail alone. The list is the latest
                           * answer, fetched beside the rounds (-ENODATA: none yet; < 0 with a list:
                           * the list is from an earlier answer) */
        EtcdEndpointState *strays;
        size_t n_strays;
        /* The list's cluster ID, its members' and the strays' are not all one (see
         * etcd_view_detect_split_brain). */
        bool split_brain;
        char *split_brain_detail;
        /* CLOCK_MONOTONIC end of the latest round, this one or an earlier one, in which a
         * quorum of voters was healthy; before the first such round, when the view started
         * (an operator that starts mid-election gives it the same grace as one that saw the
         * quorum; 0 only in snapshots made by hand). Left out of the digest. */
        usec_t quorate_at;
} EtcdViewSnapshot;

EtcdViewSnapshot *etcd_view_snapshot_ref(const EtcdViewSnapshot *s);
EtcdViewSnapshot *etcd_view_snapshot_unref(EtcdViewSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdViewSnapshot *, etcd_view_snapshot_unref);

/* Pure queries on a snapshot (also used by controller tests on fixtures).
 * Their quorum arithmetic is quorum.h's, the one place it lives. */
size_t etcd_view_count_voters(const EtcdViewSnapshot *s);
size_t etcd_view_count_healthy_voters(const EtcdViewSnapshot *s);
/* Started voters that answered this round: /health true or false, or their status. A
 * member without a leader answers /health false, after up to 2-3 s of a quorum read that
 * may outlast the round's timeout, while its status answers at once: up and reachable. */
size_t etcd_view_count_reachable_voters(const EtcdViewSnapshot *s);
/* Voters needed for quorum: voters / 2 + 1 (1 for an empty list). */
size_t etcd_view_quorum(const EtcdViewSnapshot *s);
/* Healthy voters beyond quorum: how many more may fail before quorum is
 * lost; negative when it already is. */
int etcd_view_fault_tolerance(const EtcdViewSnapshot *s);
/* At least 3 healthy voters and one to spare beyond quorum: a rollout that
 * restarts every member in turn keeps quorum even if one more fails. */
bool etcd_view_is_fault_tolerant(const EtcdViewSnapshot *s);
const EtcdMemberState *etcd_view_find(const EtcdViewSnapshot *s, uint64_t id);
/* Every member started and healthy (learners included), no split brain and no
 * NOSPACE alarm. A member's `healthy` says it serves quorum reads, a NOSPACE
 * alarm aside (so the maintenance that clears one can tell who is up). */
bool etcd_view_all_healthy(const EtcdViewSnapshot *s);
/* The latest alarm list has this alarm ("NOSPACE", "CORRUPT") on any member. */
bool etcd_view_has_alarm(const EtcdViewSnapshot *s, const char *alarm);

/* Defragmentation is due (upstream's rule): a started voter whose status says
 * its db file is at least 100 MiB and at least 45 % of it (rounded) not in use. */
#define ETCD_DEFRAG_MIN_DB_SIZE            (100ULL * 1024 * 1024)
#define ETCD_DEFRAG_MIN_FRAGMENTED_PERCENT 45u
unsigned etcd_member_fragmented_percent(const EtcdMemberState *m);
bool etcd_member_needs_defrag(const EtcdMemberState *m);
/* Learners plus members that were added but never started. */
size_t etcd_view_count_pending(const EtcdViewSnapshot *s);
const EtcdMemberState *etcd_view_find_by_name(const EtcdViewSnapshot *s, const char *name);
/* Would removing `id` keep quorum with every remaining voter healthy? */
bool etcd_view_removal_keeps_quorum(const EtcdViewSnapshot *s, uint64_t id);

/* What a caller knows beyond etcd, for the restart question. */
typedef struct EtcdQuorumHints {
        uint64_t leaving; /* a member that may be removed any moment: neither voter nor up (0: none) */
        /* Whether a member is up by the caller's account (e.g. its pod is
         * ready; the view may lag behind a restart the kubelet reports). A
         * voter counts as up only if etcd and this agree. NULL: etcd's word. */
        bool (*up)(const EtcdMemberState *m, void *userdata);
        void *userdata;
} EtcdQuorumHints;

/* May member `id` restart (go down for a while) without losing quorum? Yes
 * when it is no member, has not started, or is down by every account (etcd
 * says unhealthy and `hints->up` says down);
 * otherwise the other voters that are up must reach quorum on their own. A
 * started learner counts as a voter here: it may have been promoted since
 * the view was taken. `ret_up`/`ret_voters`/`ret_quorum` (optional) get the
 * figures behind a "no". */
bool etcd_view_restart_keeps_quorum(const EtcdViewSnapshot *s, uint64_t id, const EtcdQuorumHints *hints,
                                    size_t *ret_up, size_t *ret_voters, size_t *ret_quorum);

/* Sets split_brain and split_brain_detail (done at the end of every round): the member
 * list's cluster ID and those the members' and the strays' status answers report are not
 * all one. The detail names each ID with the members (and stray endpoints) reporting it,
 * so both sides are named. */
void etcd_view_detect_split_brain(EtcdViewSnapshot *s);

/* A digest of what controllers decide from: whether the list failed, the
 * cluster ID, split brain, the leader, each member's ID, name, URLs, started,
 * learner and healthy flags, version and whether defragmentation is due, and
 * the alarms. Raft indexes, db sizes and timings are left out, so a quiet
 * cluster digests the same round after round and wakes no controller. */
uint64_t etcd_view_digest(const EtcdViewSnapshot *s);

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
