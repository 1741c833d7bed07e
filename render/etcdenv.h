/* The etcd settings every member we render shares, the bootstrap member and
 * the masters alike: heartbeat and election
 * timings for the control plane's hardware speed, the default backend
 * quota. Defined once so the bootstrap pod and the masters' pods cannot
 * drift apart. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define ETCD_DEFAULT_QUOTA_GIB   8
#define ETCD_DEFAULT_QUOTA_BYTES "8589934592"

/* Milliseconds, as etcd's flags want them: 100/1000 ("Standard"), or
 * 500/2500 for controlPlaneHardwareSpeed "Slower". */
static inline const char *etcd_heartbeat_ms(bool slower)
{
        return slower ? "500" : "100";
}

static inline const char *etcd_election_timeout_ms(bool slower)
{
        return slower ? "2500" : "1000";
}
