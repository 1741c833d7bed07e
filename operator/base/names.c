/* RFC 1123 labels and subdomains (names.h). */
#include <ctype.h>

#include "names.h"

bool dns1123_label_is_valid(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 63 || !isalnum((unsigned char) s[0]) || !isalnum((unsigned char) s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(islower((unsigned char) s[i]) || isdigit((unsigned char) s[i]) || s[i] == '-'))
                        return false;
        return true;
}

bool dns1123_subdomain_is_valid(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        char label[64];
        if (n == 0 || n > 253)
                return false;
        for (const char *p = s;;) {
                const char *dot = strchr(p, '.');
                size_t l = dot ? (size_t) (dot - p) : strlen(p);
                if (l == 0 || l >= sizeof label)
                        return false;
                memcpy(label, p, l);
                label[l] = 0;
                if (!dns1123_label_is_valid(label))
                        return false;
                if (!dot)
                        return true;
                p = dot + 1;
        }
}
