/* The maintenance log: a ring of the last ETCD_MAINT_LOG_MAX records. */
#include <errno.h>
#include <stdlib.h>

#include "maintlog.h"

struct EtcdMaintLog {
        EtcdMaintRecord records[ETCD_MAINT_LOG_MAX];
        size_t first, n;
};

EtcdMaintLog *etcd_maint_log_new(void)
{
        return calloc(1, sizeof(EtcdMaintLog));
}

EtcdMaintLog *etcd_maint_log_free(EtcdMaintLog *l)
{
        free(l);
        return NULL;
}

void etcd_maint_log_add(EtcdMaintLog *l, const EtcdMaintRecord *r)
{
        if (!l || !r)
                return;
        if (l->n == ETCD_MAINT_LOG_MAX) {
                l->records[l->first] = *r;
                l->first = (l->first + 1) % ETCD_MAINT_LOG_MAX;
                return;
        }
        l->records[(l->first + l->n) % ETCD_MAINT_LOG_MAX] = *r;
        l->n++;
}

size_t etcd_maint_log_size(const EtcdMaintLog *l)
{
        return l ? l->n : 0;
}

const EtcdMaintRecord *etcd_maint_log_at(const EtcdMaintLog *l, size_t i)
{
        if (!l || i >= l->n)
                return NULL;
        return &l->records[(l->first + i) % ETCD_MAINT_LOG_MAX];
}

const EtcdMaintRecord *etcd_maint_log_last(const EtcdMaintLog *l, EtcdMaintKind kind, uint64_t member_id,
                                           bool ok)
{
        for (size_t i = etcd_maint_log_size(l); i > 0; i--) {
                const EtcdMaintRecord *r = etcd_maint_log_at(l, i - 1);
                if (r->kind == kind && (member_id == 0 || r->member_id == member_id) &&
                    (!ok || r->error == 0))
                        return r;
        }
        return NULL;
}

unsigned etcd_maint_log_failures_in_row(const EtcdMaintLog *l, EtcdMaintKind kind)
{
        unsigned n = 0;
        for (size_t i = etcd_maint_log_size(l); i > 0; i--) {
                const EtcdMaintRecord *r = etcd_maint_log_at(l, i - 1);
                if (r->kind != kind)
                        continue;
                if (r->error == 0)
                        break;
                n++;
        }
        return n;
}

const char *etcd_maint_kind_to_string(EtcdMaintKind k)
{
        static const char *const names[_ETCD_MAINT_KIND_MAX] = {
                [ETCD_MAINT_DEFRAG] = "defragment",   [ETCD_MAINT_COMPACT] = "compact",
                [ETCD_MAINT_DISARM] = "disarm",       [ETCD_MAINT_MOVE_LEADER] = "move-leader",
                [ETCD_MAINT_DOWNGRADE] = "downgrade",
        };
        return k >= 0 && k < _ETCD_MAINT_KIND_MAX ? names[k] : NULL;
}
