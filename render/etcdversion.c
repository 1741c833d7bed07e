#include "etcdversion.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "3.N" or "3.N.P" with decimal N and P, nothing else: N, or -1. */
static int parse_3x(const char *s)
{
        char *end = NULL;

        if (!s || strncmp(s, "3.", 2) != 0 || s[2] < '0' || s[2] > '9')
                return -1;
        long minor = strtol(s + 2, &end, 10);
        if (minor > 99)
                return -1;
        if (*end == '\0')
                return (int) minor;
        if (*end != '.' || end[1] < '0' || end[1] > '9')
                return -1;
        (void) strtol(end + 1, &end, 10);
        return *end == '\0' ? (int) minor : -1;
}

int etcd_minor_parse(const char *s, EtcdMinor *ret)
{
        int minor = parse_3x(s);
        if (minor < 0)
                return -EINVAL;
        if (minor != ETCD_MINOR_3_5 && minor != ETCD_MINOR_3_6)
                return -EOPNOTSUPP;
        *ret = (EtcdMinor) minor;
        return 0;
}

int etcd_minor_parse_why(const char *s, EtcdMinor *ret, char *why, size_t n)
{
        int r = etcd_minor_parse(s, ret);
        if (r == -EINVAL)
                (void) snprintf(why, n,
                                "\"%s\" is no etcd release: give the release the etcd image carries, "
                                "3.5 or 3.6 (or its patch release, as 3.6.16)",
                                s ? s : "");
        else if (r < 0)
                (void) snprintf(why, n,
                                "etcd %s is not a release this operator renders for: give 3.5 or 3.6, "
                                "with an etcd image of that release",
                                s);
        return r;
}

const char *etcd_minor_name(EtcdMinor m)
{
        return m == ETCD_MINOR_3_6 ? "3.6" : "3.5";
}

int etcd_version_minor(const char *version)
{
        return parse_3x(version);
}

const char *etcd_env_name(EtcdMinor m, const char *setting)
{
        static const char *const renamed[][3] = {
                {"MAX_LEARNERS", "ETCD_EXPERIMENTAL_MAX_LEARNERS", "ETCD_MAX_LEARNERS"},
                {"WATCH_PROGRESS_NOTIFY_INTERVAL", "ETCD_EXPERIMENTAL_WATCH_PROGRESS_NOTIFY_INTERVAL",
                 "ETCD_WATCH_PROGRESS_NOTIFY_INTERVAL"},
                {"WARNING_APPLY_DURATION", "ETCD_EXPERIMENTAL_WARNING_APPLY_DURATION",
                 "ETCD_WARNING_APPLY_DURATION"},
        };
        for (size_t i = 0; setting && i < sizeof renamed / sizeof renamed[0]; i++)
                if (strcmp(renamed[i][0], setting) == 0)
                        return renamed[i][m == ETCD_MINOR_3_6 ? 2 : 1];
        return NULL;
}

const char *etcd_corrupt_check_flag(EtcdMinor m)
{
        return m == ETCD_MINOR_3_6 ? "--feature-gates=InitialCorruptCheck=true"
                                   : "--experimental-initial-corrupt-check=true";
}

const char *etcd_snapshot_count_flag(EtcdMinor m)
{
        return m == ETCD_MINOR_3_6 ? "" : "--snapshot-count=10000";
}

const char *etcd_proxy_tls_min_flag(EtcdMinor m)
{
        return m == ETCD_MINOR_3_6 ? "--tls-min-version=\"$ETCD_TLS_MIN_VERSION\"" : "";
}
