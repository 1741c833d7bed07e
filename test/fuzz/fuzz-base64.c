/* base64 as Secret values and kubeconfig *-data fields carry it: decoding
 * any text (an exact-size copy, so a read past its end is an ASan report),
 * and the round trips decode(encode(x)) == x for the decoded bytes and for
 * the raw input. */
#include <stdint.h>

#include "base/base64.h"
#include "base/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const char *bytes, size_t n)
{
        _cleanup_free_ char *enc = base64_encode(bytes, n), *dec = NULL;
        size_t len = 0;

        if (!enc)
                return;
        if (base64_decode(enc, &dec, &len) < 0 || len != n || memcmp(dec, bytes, n) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *s = strndup((const char *) data, size), *out = NULL;
        size_t len = 0;

        if (!s)
                return 0;
        if (base64_decode(s, &out, &len) >= 0) {
                if (len > size / 4 * 3 + 3)
                        abort();
                round_trip(out, len);
        }
        round_trip((const char *) data, size);
        return 0;
}
