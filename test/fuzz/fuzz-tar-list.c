/* The tarball's member list as `tar --list --verbose --quoting-style=c`
 * prints it (cluster-restore's step 1, operator/dr/restore-tar.c): any
 * text, in an exact-size copy, with a `why` buffer of a size the input
 * chooses. The answer is 0 or -EINVAL, and `why` always a string. */
#include <stdint.h>

#include "base/macro.h"
#include "dr/restore-tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        size_t n = 1 + data[0] % 200;
        _cleanup_free_ char *listing = strndup((const char *) data + 1, size - 1), *why = malloc(n);

        if (!listing || !why)
                return 0;
        memset(why, 'x', n);
        why[n - 1] = 0;
        int r = restore_tar_listing_check(listing, why, n);
        if ((r != 0 && r != -EINVAL) || !memchr(why, 0, n))
                abort();
        return 0;
}
