/* The etcd settings every member we render shares, the bootstrap member and
 * the masters alike: TLS suites and minimum version, heartbeat and election
 * timings for the control plane's hardware speed, the default backend
 * quota. Defined once so the bootstrap pod and the masters' pods cannot
 * drift apart. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The Intermediate TLS security profile's suites (render/tlsprofile.c), which
 * the bootstrap member runs with: TLS 1.2 suites only, as TLS 1.3 suites are
 * not configurable in Go. test-render checks that the two agree. */
#define ETCD_CIPHER_SUITES                                                               \
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," \
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384," \
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
#define ETCD_TLS_MIN_VERSION     "TLS1.2"
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
