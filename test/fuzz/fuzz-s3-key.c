/* S3 object names (operator/s3/snapshots.c): one key a line, each parsed as
 * etcd-backup-restore names snapshots; the Full ones then go through both
 * garbage-collection policies with a clock the input chooses. A name we
 * print parses back to itself, and the newest snapshot is never deleted. */
#include <stdint.h>

#include "base/macro.h"
#include "s3/snapshots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_last(const void *a, const void *b)
{
        const S3Snapshot *x = a, *y = b;
        return x->last < y->last ? -1 : x->last > y->last;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        S3Snapshot v[64];
        bool del[64];
        size_t n = 0;
        int64_t now = 0;

        if (size < sizeof now)
                return 0;
        memcpy(&now, data, sizeof now);
        now = now % (int64_t) 4000000000000LL; /* within a time_t of any platform we build on */
        _cleanup_free_ char *text = strndup((const char *) data + sizeof now, size - sizeof now);
        if (!text)
                return 0;
        for (char *save = NULL, *key = strtok_r(text, "\n", &save); key && n < ELEMENTSOF(v);
             key = strtok_r(NULL, "\n", &save)) {
                S3Snapshot s;
                if (s3_snapshot_parse(key, &s) < 0)
                        continue;
                if (s.kind == S3_SNAPSHOT_FULL && s.start == 0 && !s.gz && !s.final) {
                        char name[64];
                        S3Snapshot again;
                        if (s3_snapshot_parse(s3_snapshot_name(s.last, s.created, name, sizeof name),
                                              &again) < 0 ||
                            again.last != s.last || again.created != s.created)
                                abort();
                }
                if (s.kind == S3_SNAPSHOT_FULL)
                        v[n++] = s;
        }
        qsort(v, n, sizeof *v, by_last);
        for (S3GcPolicy p = S3_GC_LIMIT_BASED; p <= S3_GC_EXPONENTIAL; p++) {
                s3_gc_plan(v, n, p, data[0] % 8, (time_t) now, del);
                if (n > 0 && del[n - 1])
                        abort();
        }
        return 0;
}
