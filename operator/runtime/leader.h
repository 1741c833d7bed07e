/* Leader election on a coordination.k8s.io/v1 Lease, client-go's algorithm
 * (k8s.io/client-go/tools/leaderelection): expiry is judged by the local
 * time the record last changed, never by the holder's clock. Defaults are
 * library-go's 137 s / 107 s / 26 s. Losing the lease calls on_stopped; the
 * operator exits then, as upstream does. */
#pragma once

#include "kube/client.h"

typedef struct LeaderElector LeaderElector;
typedef void (*LeaderFunc)(LeaderElector *le, void *userdata);

typedef struct LeaderConfig {
        const char *namespace;
        const char *name;
        const char *identity;  /* default: <hostname>_<random uuid> */
        usec_t lease_duration; /* 137 s */
        usec_t renew_deadline; /* 107 s */
        usec_t retry_period;   /* 26 s */
} LeaderConfig;

/* -EINVAL unless lease_duration > renew_deadline > 1.2 * retry_period. An attempt (a read
 * and a write of the lease) unanswered for leader_attempt_timeout() is abandoned and a
 * fresh one starts at once: the renew deadline leaves room for about three. */
int leader_elector_new(KubeClient *c, const LeaderConfig *cfg, LeaderFunc on_started, LeaderFunc on_stopped,
                       void *userdata, LeaderElector **ret);
LeaderElector *leader_elector_free(LeaderElector *le);
/* A third of the renew deadline, at least 1 s. */
usec_t leader_attempt_timeout(usec_t renew_deadline);
DEFINE_TRIVIAL_CLEANUP_FUNC(LeaderElector *, leader_elector_free);

int leader_elector_start(LeaderElector *le);
bool leader_elector_is_leader(LeaderElector *le);
const char *leader_elector_get_identity(LeaderElector *le);
/* Gives the lease up (holderIdentity "", leaseDurationSeconds 1) if we hold
 * it, then calls `done` (also when there was nothing to release). */
int leader_elector_release(LeaderElector *le, LeaderFunc done);
