/* Snapshot names and garbage collection (snapshots.h). */
#include "snapshots.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

#define HOUR (3600)
#define DAY  (24 * HOUR)
#define WEEK (7 * DAY)

char *s3_snapshot_name(uint64_t last_revision, time_t created, char *buf, size_t n)
{
        (void) snprintf(buf, n, "Full-%08" PRIu64 "-%08" PRIu64 "-%lld", (uint64_t) 0, last_revision,
                        (long long) created);
        return buf;
}

static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
        uint64_t v = 0;
        if (len == 0 || len > 19)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return 0;
}

int s3_snapshot_parse(const char *key, S3Snapshot *ret)
{
        const char *name = strrchr(key, '/') ? strrchr(key, '/') + 1 : key;
        S3Snapshot s = {};
        uint64_t created = 0;

        if (startswith(name, "Full-"))
                s.kind = S3_SNAPSHOT_FULL;
        else if (startswith(name, "Incr-"))
                s.kind = S3_SNAPSHOT_INCR;
        else
                return -EINVAL;
        const char *p = name + 5, *dash = strchr(p, '-');
        if (!dash || parse_u64(p, (size_t) (dash - p), &s.start) < 0)
                return -EINVAL;
        p = dash + 1;
        if (!(dash = strchr(p, '-')) || parse_u64(p, (size_t) (dash - p), &s.last) < 0)
                return -EINVAL;
        p = dash + 1;
        size_t digits = strspn(p, "0123456789");
        if (parse_u64(p, digits, &created) < 0 || created > (uint64_t) INT64_MAX / 2)
                return -EINVAL;
        p += digits;
        if (startswith(p, ".gz")) {
                s.gz = true;
                p += 3;
        }
        if (startswith(p, ".final")) {
                s.final = true;
                p += 6;
        }
        if (*p)
                return -EINVAL;
        s.created = (time_t) created;
        *ret = s;
        return 0;
}

/* Whole hours, days or weeks from t to eod, as a count of windows. */
static long long windows(time_t eod, time_t t, long long width)
{
        return (long long) (eod - t) / width;
}

static void plan_exponential(const S3Snapshot *v, size_t n, time_t now, bool *del)
{
        time_t eod = now - now % DAY + DAY - 1;
        bool week_shifted = false;

        /* From the second newest back; each is compared with its newer neighbour (kept or not). */
        for (size_t i = n - 1; i > 0; i--) {
                const S3Snapshot *newer = &v[i], *s = &v[i - 1];
                long long age = (long long) (eod - s->created), threshold;
                if (age < DAY) {
                        /* today: all of the current hour, then the newest of each hour */
                        threshold = (s->created / HOUR) % 24 == (now / HOUR) % 24 ? 0 : 1;
                } else if (age < 8LL * DAY) {
                        threshold = 24;
                } else if (age < 5LL * WEEK) {
                        if (!week_shifted) { /* the week windows end the day before */
                                eod -= DAY;
                                week_shifted = true;
                        }
                        threshold = 24 * 7;
                } else {
                        del[i - 1] = true;
                        continue;
                }
                long long hours = windows(eod, s->created, HOUR) - windows(eod, newer->created, HOUR),
                          days = windows(eod, s->created, DAY) - windows(eod, newer->created, DAY),
                          weeks = windows(eod, s->created, WEEK) - windows(eod, newer->created, WEEK);
                bool keep = threshold == 0 || hours / threshold != 0 || days * 24 / threshold != 0 ||
                            weeks * 24 * 7 / threshold != 0;
                del[i - 1] = !keep;
        }
}

void s3_gc_plan(const S3Snapshot *v, size_t n, S3GcPolicy policy, unsigned max_backups, time_t now,
                bool *ret_delete)
{
        for (size_t i = 0; i < n; i++)
                ret_delete[i] = false;
        if (n < 2)
                return;
        if (policy == S3_GC_EXPONENTIAL) {
                plan_exponential(v, n, now, ret_delete);
                return;
        }
        size_t keep = MAX((size_t) max_backups, (size_t) 1);
        for (size_t i = 0; i + keep < n; i++)
                ret_delete[i] = true;
}
