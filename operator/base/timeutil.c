/* Time: monotonic and wall clocks, RFC 3339 formatting and parsing. */
#include <ctype.h>

#include "timeutil.h"

usec_t now_usec(clockid_t clock)
{
        struct timespec ts;
        (void) clock_gettime(clock, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

char *format_rfc3339(char *buf, size_t n, usec_t realtime)
{
        time_t t = (time_t) (realtime / USEC_PER_SEC);
        struct tm tm;
        (void) gmtime_r(&t, &tm);
        if (strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return NULL;
        return buf;
}

char *format_rfc3339_micro(char *buf, size_t n, usec_t realtime)
{
        time_t t = (time_t) (realtime / USEC_PER_SEC);
        struct tm tm;
        char base[32];
        (void) gmtime_r(&t, &tm);
        if (strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return NULL;
        if (snprintf(buf, n, "%s.%06uZ", base, (unsigned) (realtime % USEC_PER_SEC)) >= (int) n)
                return NULL;
        return buf;
}

int parse_rfc3339(const char *s, usec_t *ret)
{
        struct tm tm = {};
        unsigned frac = 0, digits = 0;
        long offset = 0;

        assert_return(s && ret, -EINVAL);
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                for (p++; isdigit((unsigned char) *p); p++)
                        if (digits < 6) {
                                frac = frac * 10 + (unsigned) (*p - '0');
                                digits++;
                        }
                if (digits == 0)
                        return -EINVAL;
                for (; digits < 6; digits++)
                        frac *= 10;
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                int hh = 0, mm = 0;
                if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
                        return -EINVAL;
                offset = (hh * 3600L + mm * 60L) * (*p == '-' ? -1 : 1);
                p += 6;
        } else
                return -EINVAL;
        if (*p)
                return -EINVAL;
        time_t t = timegm(&tm);
        if (t == (time_t) -1 || t - offset < 0)
                return -ERANGE;
        *ret = (usec_t) (t - offset) * USEC_PER_SEC + frac;
        return 0;
}

int parse_duration(const char *s, usec_t *ret)
{
        static const struct {
                const char *suffix;
                usec_t mult;
        } units[] = {
                {"ms", USEC_PER_MSEC},    {"us", 1},           {"h", 3600 * USEC_PER_SEC},
                {"m", 60 * USEC_PER_SEC}, {"s", USEC_PER_SEC},
        };
        usec_t total = 0;
        char *end = NULL;

        assert_return(s && ret, -EINVAL);
        if (!*s)
                return -EINVAL;
        while (*s) {
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                errno = 0;
                unsigned long long v = strtoull(s, &end, 10);
                if (errno == ERANGE || v > 1000000000ULL)
                        return -ERANGE;
                if (!*end) {
                        if (total != 0)
                                return -EINVAL; /* "1m30" is ambiguous */
                        *ret = (usec_t) v * USEC_PER_SEC;
                        return 0;
                }
                size_t k = 0;
                for (; k < ELEMENTSOF(units); k++)
                        if (startswith(end, units[k].suffix))
                                break;
                if (k == ELEMENTSOF(units))
                        return -EINVAL;
                total += (usec_t) v * units[k].mult;
                s = end + strlen(units[k].suffix);
        }
        *ret = total;
        return 0;
}
