/* The etcd release an etcd image carries, and what differs between the minors we render
 * for. The release payload declares it beside the image (the operator's env
 * ETCD_IMAGE_VERSION, render's --etcd-image-version): etcd 3.6 renamed the settings that
 * were experimental in 3.5, and 3.5 refuses 3.6's --feature-gates. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum EtcdMinor {
        ETCD_MINOR_3_5 = 5,
        ETCD_MINOR_3_6 = 6,
} EtcdMinor;

/* What an image carries when nothing says otherwise: etcd 3.5, as our etcd image and
 * every payload before ETCD_IMAGE_VERSION. */
#define ETCD_MINOR_DEFAULT ETCD_MINOR_3_5

/* "3.5", "3.6", or one of their patch releases ("3.6.16"). -EINVAL for text that is no
 * version, -EOPNOTSUPP for a release we do not render for (3.4, 3.7); *ret untouched then. */
int etcd_minor_parse(const char *s, EtcdMinor *ret);
/* etcd_minor_parse with the reason for a person when it fails, into why[n]: what is wrong
 * with `s` and what to give instead. */
int etcd_minor_parse_why(const char *s, EtcdMinor *ret, char *why, size_t n);
/* "3.5" or "3.6". */
const char *etcd_minor_name(EtcdMinor m);

/* The minor of an etcd version text as members and /version report it ("3.6.16",
 * "3.6.0"): 3.x -> x, -1 when it is no 3.x version. Unlike etcd_minor_parse, any minor. */
int etcd_version_minor(const char *version);

/* Settings 3.6 renamed: etcd's name for `setting` (one of "MAX_LEARNERS",
 * "WATCH_PROGRESS_NOTIFY_INTERVAL", "WARNING_APPLY_DURATION") as an ETCD_* variable:
 * ETCD_EXPERIMENTAL_<setting> on 3.5, ETCD_<setting> on 3.6. NULL for another setting. */
const char *etcd_env_name(EtcdMinor m, const char *setting);
/* The flag that turns on the corruption check at start: 3.5's experimental flag, 3.6's
 * feature gate (as upstream's pod since its move to 3.6). */
const char *etcd_corrupt_check_flag(EtcdMinor m);
/* Upstream's --snapshot-count=10000 on 3.5; "" on 3.6, where 10000 is the default and the
 * flag is deprecated. */
const char *etcd_snapshot_count_flag(EtcdMinor m);
/* The grpc-proxy's TLS floor, from the container's $ETCD_TLS_MIN_VERSION: a flag 3.6 has
 * and 3.5 does not (there: "", and the proxy stays at TLS 1.2). */
const char *etcd_proxy_tls_min_flag(EtcdMinor m);
