/* RFC 3339 times as S3 listings (LastModified), the API (conditions,
 * timestamps) and revision.json carry them, and Go durations (flags). The
 * input is copied to a buffer of its exact size, so a read past its NUL is
 * an ASan report. A time that parses must format and parse back to itself. */
#include <stdint.h>

#include "base/macro.h"
#include "base/timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *s = strndup((const char *) data, size);
        char buf[64];
        usec_t t = 0, again = 0;

        if (!s)
                return 0;
        if (parse_rfc3339(s, &t) >= 0) {
                if (!format_rfc3339_micro(buf, sizeof buf, t) || parse_rfc3339(buf, &again) < 0 ||
                    again != t)
                        abort();
        }
        (void) parse_duration(s, &t);
        return 0;
}
