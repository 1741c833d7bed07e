/* A backup's checksum file (operator/dr/backup-manifest.c, review M1): the
 * bytes `s3 get-backup` and `s3 gc` read from a bucket others may write, and
 * cluster-restore from a backup directory, in an exact-size copy. The answer
 * is 0, -EINVAL or -E2BIG with `why` a string; what parses formats back to a
 * text that parses to the same thing, and its MAC check never crashes. */
#include <stdint.h>

#include "base/macro.h"
#include "dr/backup-manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *copy = malloc(MAX(size, (size_t) 1)), *again = NULL;
        BackupManifest m = {}, back = {};
        char why[96];

        if (!copy)
                return 0;
        memcpy(copy, data, size);
        memset(why, 'x', sizeof why);
        int r = backup_manifest_parse(copy, size, &m, why, sizeof why);
        if (r != 0 && r != -EINVAL && r != -E2BIG && r != -ENOMEM)
                abort();
        if (r != 0) {
                if (r != -ENOMEM && !memchr(why, 0, sizeof why))
                        abort();
                return 0;
        }
        r = backup_manifest_verify(&m, "0123456789abcdef0123456789abcdef");
        if (r != 0 && r != -ENOKEY && r != -EBADMSG)
                abort();
        if (backup_manifest_format(&m, &again) < 0)
                return 0;
        if (backup_manifest_parse(again, strlen(again), &back, why, sizeof why) != 0 ||
            memcmp(&m, &back, sizeof m) != 0)
                abort();
        return 0;
}
