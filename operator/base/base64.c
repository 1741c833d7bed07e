/* Base64 both ways. */
#include "base64.h"

/* The 64 digits, then the padding at index 64. */
static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

static int value_of(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *in, char **ret, size_t *ret_len)
{
        assert_return(in && ret, -EINVAL);
        size_t n = strlen(in);
        _cleanup_free_ char *out = malloc(n / 4 * 3 + 4);
        unsigned acc = 0, bits = 0, pad = 0;
        size_t len = 0;

        if (!out)
                return -ENOMEM;
        for (const char *p = in; *p; p++) {
                if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
                        continue;
                if (*p == '=') {
                        pad++;
                        continue;
                }
                int v = value_of(*p);
                if (v < 0 || pad > 0)
                        return -EINVAL;
                acc = (acc << 6) | (unsigned) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[len++] = (char) ((acc >> bits) & 0xff);
                }
        }
        /* Leftover bits must be zero padding of a proper final quantum. */
        if (pad > 2 || bits >= 6 || (acc & ((1u << bits) - 1)) != 0)
                return -EINVAL;
        out[len] = 0;
        *ret = TAKE_PTR(out);
        if (ret_len)
                *ret_len = len;
        return 0;
}

char *base64_encode(const void *data, size_t len)
{
        const unsigned char *d = data;
        char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                unsigned v = (unsigned) d[i] << 16;
                if (i + 1 < len)
                        v |= (unsigned) d[i + 1] << 8;
                if (i + 2 < len)
                        v |= d[i + 2];
                *o++ = alphabet[(v >> 18) & 63];
                *o++ = alphabet[(v >> 12) & 63];
                *o++ = alphabet[i + 1 < len ? (v >> 6) & 63 : 64];
                *o++ = alphabet[i + 2 < len ? v & 63 : 64];
        }
        *o = 0;
        return out;
}
