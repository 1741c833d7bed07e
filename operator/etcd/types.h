/* What etcd's gateway tells us, as plain structs, and the parsers that build
 * them from gateway JSON (pure functions, unit-tested on recorded bodies).
 * IDs, revisions and sizes are uint64 parsed from JSON strings; absent
 * fields are zero, as the gateway omits zero values. */
#pragma once

#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/macro.h"

/* Errors with their own meaning for callers; everything else is a plain errno. */
#define ETCD_ERR_NO_LEADER          (-ENOLINK)     /* "etcdserver: no leader" */
#define ETCD_ERR_NO_QUORUM          (-ETIME)       /* request timed out / deadline exceeded in raft */
#define ETCD_ERR_UNHEALTHY          (-EAGAIN)      /* "unhealthy cluster": a voter is unreachable */
#define ETCD_ERR_NOT_ENOUGH_STARTED (-EINPROGRESS) /* an added voter has not started */
#define ETCD_ERR_TOO_MANY_LEARNERS  (-EMLINK)
#define ETCD_ERR_LEARNER_NOT_READY  (-EBUSY)    /* promote before the learner caught up */
#define ETCD_ERR_NOT_LEARNER        (-EALREADY) /* promote of a voter */
#define ETCD_ERR_MEMBER_NOT_FOUND   (-ENOENT)
#define ETCD_ERR_NOSPACE            (-ENOSPC)
#define ETCD_ERR_LEARNER            (-EREMOTE) /* the RPC is not supported on a learner */
#define ETCD_ERR_REMOVED            (-EIDRM)   /* request to a removed member */
#define ETCD_ERR_PEER_URL_EXISTS    (-EADDRINUSE)
#define ETCD_ERR_COMPACTED          (-ESTALE)
#define ETCD_ERR_FUTURE_REV         (-ERANGE)
#define ETCD_ERR_NOT_LEADER         (-EXDEV)        /* leadership transfer sent to a follower */
#define ETCD_ERR_BAD_URL            (-EDESTADDRREQ) /* peer URL rejected (by us or by etcd) */
/* The view's verdict, no answer of etcd's: members report different cluster IDs (split brain),
 * so no member list can be trusted to act on. */
#define ETCD_ERR_SPLIT_BRAIN (-ENOTUNIQ)
/* The member's HTTP listener answered but its gateway could not reach the
 * member's own gRPC server (gRPC Unavailable, "Error while dialing"): the
 * member is stopping or starting, and nothing was processed. */
#define ETCD_ERR_STOPPING (-ESHUTDOWN)

/* Human text for the errors above (falls back to strerror). */
const char *etcd_strerror(int error);

/* Maps an HTTP status and gateway error body (3.4/3.5 {"error","message","code"},
 * 3.6 {"code","message"}, streaming {"error":{...}}) to one error. `ret_message`
 * (optional) gets etcd's message, borrowed from `body`. */
int etcd_parse_error(long http_status, const cJSON *body, const char **ret_message);

typedef struct EtcdMember {
        uint64_t id;
        char *name; /* NULL until the member has started */
        char **peer_urls;
        size_t n_peer_urls;
        char **client_urls;
        size_t n_client_urls;
        bool is_learner;
} EtcdMember;

typedef struct EtcdMemberList {
        uint64_t cluster_id;
        uint64_t responder_id;
        EtcdMember *members;
        size_t n_members;
} EtcdMemberList;

EtcdMemberList *etcd_member_list_free(EtcdMemberList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdMemberList *, etcd_member_list_free);
EtcdMemberList *etcd_member_list_dup(const EtcdMemberList *l);
/* Parses member list/add/remove/promote/update responses (their `members`). */
int etcd_parse_member_list(const cJSON *body, EtcdMemberList **ret);
/* The `member` of a member/add response (id and peer URLs). */
int etcd_parse_added_member(const cJSON *body, uint64_t *ret_id);
const EtcdMember *etcd_member_list_find(const EtcdMemberList *l, uint64_t id);
const EtcdMember *etcd_member_list_find_by_name(const EtcdMemberList *l, const char *name);
const EtcdMember *etcd_member_list_find_by_peer_url(const EtcdMemberList *l, const char *url);
/* Started = has a name and client URLs (the gateway omits both until then). */
bool etcd_member_is_started(const EtcdMember *m);

typedef struct EtcdStatus {
        uint64_t cluster_id;
        uint64_t member_id;
        uint64_t leader; /* 0 = none */
        uint64_t revision;
        uint64_t raft_index;
        uint64_t raft_term;
        uint64_t raft_applied_index;
        uint64_t db_size;
        uint64_t db_size_in_use;
        bool is_learner;
        char version[32];
        /* etcd 3.6 and later (empty, false before): the storage schema version, and the
         * cluster's downgrade when one is enabled (`etcdctl downgrade enable`). */
        char storage_version[32];
        bool downgrade_enabled;
        char downgrade_target[32];
        char **errors;
        size_t n_errors;
} EtcdStatus;

void etcd_status_done(EtcdStatus *s);
int etcd_parse_status(const cJSON *body, EtcdStatus *ret);
int etcd_status_copy(const EtcdStatus *src, EtcdStatus *dst);

typedef struct EtcdAlarm {
        uint64_t member_id;
        char alarm[16]; /* "NOSPACE", "CORRUPT" */
} EtcdAlarm;

/* `ret` is malloc'ed (free()); *ret_n may be 0. */
int etcd_parse_alarms(const cJSON *body, EtcdAlarm **ret, size_t *ret_n);

/* Peer and client URLs we accept before any member add or update: http or
 * https, an IP literal or DNS name, an explicit port, nothing else (a bad URL
 * in member/update crashes a 3.4 cluster for good). */
bool etcd_url_is_valid(const char *url);

/* "%016" PRIx64, as etcdctl and etcd's logs print member IDs. */
char *etcd_id_to_hex(uint64_t id, char buf[static 17]);
