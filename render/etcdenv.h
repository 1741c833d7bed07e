/* The etcd settings every member we render shares, the bootstrap member and
 * the masters alike: heartbeat and election
 * timings for the control plane's hardware speed, the default backend
 * quota. Defined once so the bootstrap pod and the masters' pods cannot
 * drift apart. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/utsname.h>

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

/* ETCD_UNSUPPORTED_ARCH as upstream sets it (its getUnsupportedArch, from the operator's own
 * architecture): the architecture's name on arm64 and s390x, which etcd 3.5 counts as
 * unsupported and refuses to run on without it; NULL elsewhere. `machine` is uname's
 * (x86_64, aarch64, s390x); NULL: this host's. */
static inline const char *etcd_unsupported_arch(const char *machine)
{
        struct utsname u;
        if (!machine)
                machine = uname(&u) == 0 ? u.machine : "";
        if (strcmp(machine, "aarch64") == 0 || strcmp(machine, "arm64") == 0)
                return "arm64";
        if (strcmp(machine, "s390x") == 0)
                return "s390x";
        return NULL;
}
