/* The etcd-facing logic of the node commands, as pure functions:
 * discover-etcd-initial-cluster's decision table and initial-cluster string,
 * the data-dir layout it inspects and archives, and revision.json (written by
 * `rev`, read by discover for the local cluster ID).
 *
 * Data dir: "present" means <data-dir>/member exists (etcd's own tree;
 * revision.json lives beside it, so a data dir holding only revision.json is
 * empty). Archiving renames <data-dir>/member to
 * <data-dir>/member-removed-archive-<YYYY-MM-DD-HHMMSS> (UTC), as upstream
 * does: <data-dir> itself is a hostPath mount that cannot be renamed. Nothing
 * is ever deleted.
 *
 * revision.json: {"clusterId":"<decimal>","raftIndex":{"<endpoint>":N},
 * "maxRaftIndex":N,"created":"<RFC 3339>"}. Cluster IDs are random 64-bit
 * values, so clusterId is always a decimal string (a JSON number would lose
 * bits in any double-based reader); raft indexes are numbers up to 2^53 and
 * decimal strings above. The reader accepts numbers and strings for every
 * field, exactly (upstream's Go writer emits clusterId as a bare number). */
#pragma once

#include "base/timeutil.h"
#include "etcd/types.h"

typedef enum NodeCmdDiscoverAction {
        NODECMD_DISCOVER_PRINT,   /* print initial_cluster (may be "") and exit 0 */
        NODECMD_DISCOVER_WAIT,    /* not possible yet: ask again after the interval */
        NODECMD_DISCOVER_FAIL,    /* exit 1: a person has to look */
        NODECMD_DISCOVER_ARCHIVE, /* move <data-dir>/member aside, then decide again */
        _NODECMD_DISCOVER_ACTION_MAX,
        _NODECMD_DISCOVER_ACTION_INVALID = -EINVAL,
} NodeCmdDiscoverAction;

const char *nodecmd_discover_action_to_string(NodeCmdDiscoverAction a);

typedef struct NodeCmdDiscoverInput {
        const EtcdMemberList *members; /* NULL: no endpoint answered */
        const char *target_peer_url;   /* "https://HOST:2380" */
        const char *target_name;
        bool data_present;
        uint64_t local_cluster_id; /* from revision.json; 0 = unknown */
} NodeCmdDiscoverInput;

typedef struct NodeCmdDiscoverResult {
        NodeCmdDiscoverAction action;
        char *initial_cluster; /* PRINT: "name=url,..." or "" */
        char *reason;          /* one line for the log */
} NodeCmdDiscoverResult;

/* The decision table (see discover.c's header for the why of each row). */
int nodecmd_discover_decide(const NodeCmdDiscoverInput *in, NodeCmdDiscoverResult *ret);
void nodecmd_discover_result_done(NodeCmdDiscoverResult *r);

/* "name=peerURL,..." for every peer URL of every started member, then
 * target_name=URL for each peer URL of `self` when it has not started. */
int nodecmd_initial_cluster(const EtcdMemberList *l, const EtcdMember *self, const char *target_name,
                            char **ret);

/* Whether <data-dir>/member exists (-errno when that cannot be told). */
int nodecmd_data_dir_present(const char *data_dir, bool *ret);
/* <data-dir>/member-removed-archive-YYYY-MM-DD-HHMMSS for `realtime`. */
char *nodecmd_archive_path(const char *data_dir, usec_t realtime);
/* Renames <data-dir>/member to a new archive path (never replacing anything:
 * a suffix -1, -2, ... when the second is taken). */
int nodecmd_data_dir_archive(const char *data_dir, usec_t realtime, char **ret_path);

typedef struct NodeCmdRevisionEndpoint {
        char *endpoint;
        uint64_t raft_index;
} NodeCmdRevisionEndpoint;

typedef struct NodeCmdRevision {
        uint64_t cluster_id;
        NodeCmdRevisionEndpoint *endpoints;
        size_t n_endpoints;
        uint64_t max_raft_index;
        /* Ours, beside upstream's keys: the highest MVCC revision (the
         * resourceVersion clients see) any endpoint reported; 0 = unknown. */
        uint64_t max_revision;
        usec_t created; /* CLOCK_REALTIME; 0 when absent or unparsable */
} NodeCmdRevision;

int nodecmd_revision_add(NodeCmdRevision *r, const char *endpoint, uint64_t raft_index);
void nodecmd_revision_done(NodeCmdRevision *r);
int nodecmd_revision_encode(const NodeCmdRevision *r, char **ret);
/* -EBADMSG when it is not a revision.json, -ENOENT when clusterId is absent. */
int nodecmd_revision_decode(const char *text, size_t len, NodeCmdRevision *ret);
/* <data-dir>/revision.json */
char *nodecmd_revision_path(const char *data_dir);
/* The clusterId of <data-dir>/revision.json: -ENOENT when there is none. */
int nodecmd_revision_read_cluster_id(const char *data_dir, uint64_t *ret);
