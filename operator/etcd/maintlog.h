/* The maintenance log: what the operator did to etcd beyond membership
 * (defragment, compact, disarm an alarm, hand over leadership) and how it
 * ended, newest last. The runtime's executor writes it; the controllers that
 * plan maintenance read it, so a sync stays a pure function of the caches,
 * the etcd view and this record. It lives in memory: after a restart the
 * members' own figures (fragmentation, alarms) say what is still to do; the
 * log keeps a running operator from repeating what it has just done while
 * those figures lag, and counts failures in a row. Bounded (the oldest
 * records go first). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/timeutil.h"

typedef enum EtcdMaintKind {
        ETCD_MAINT_DEFRAG,
        ETCD_MAINT_COMPACT,
        ETCD_MAINT_DISARM,
        ETCD_MAINT_MOVE_LEADER,
        ETCD_MAINT_DOWNGRADE,
        _ETCD_MAINT_KIND_MAX,
        _ETCD_MAINT_KIND_INVALID = -EINVAL,
} EtcdMaintKind;

typedef struct EtcdMaintRecord {
        EtcdMaintKind kind;
        uint64_t member_id;       /* DEFRAG, DISARM: the member; MOVE_LEADER: the new leader; COMPACT: 0 */
        uint64_t from_id;         /* MOVE_LEADER: the leader asked to hand over */
        uint64_t revision;        /* COMPACT */
        usec_t started, finished; /* CLOCK_REALTIME */
        int error;                /* 0, or what the call ended with */
} EtcdMaintRecord;

#define ETCD_MAINT_LOG_MAX 64

typedef struct EtcdMaintLog EtcdMaintLog;

EtcdMaintLog *etcd_maint_log_new(void);
EtcdMaintLog *etcd_maint_log_free(EtcdMaintLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdMaintLog *, etcd_maint_log_free);

void etcd_maint_log_add(EtcdMaintLog *l, const EtcdMaintRecord *r);
/* The newest record of `kind` (for `member_id`, 0 = any member) that ended
 * as asked (`ok`: without error; otherwise either way); NULL when none. */
const EtcdMaintRecord *etcd_maint_log_last(const EtcdMaintLog *l, EtcdMaintKind kind, uint64_t member_id,
                                           bool ok);
/* Records of `kind` that failed since the last one that did not, of any member. */
unsigned etcd_maint_log_failures_in_row(const EtcdMaintLog *l, EtcdMaintKind kind);
size_t etcd_maint_log_size(const EtcdMaintLog *l);
/* The i-th record, oldest first; NULL past the newest. */
const EtcdMaintRecord *etcd_maint_log_at(const EtcdMaintLog *l, size_t i);

const char *etcd_maint_kind_to_string(EtcdMaintKind k);
