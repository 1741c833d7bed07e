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

/* Exactly n decimal digits at s (never past a NUL, which is no digit). */
static int parse_digits(const char *s, size_t n, int *ret)
{
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char) s[i]))
                        return -EINVAL;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return 0;
}

static bool is_leap(int y)
{
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* "YYYY-MM-DDTHH:MM:SS" at s, by hand and field by field as Go's time.Parse
 * takes it: strptime skips blanks, takes one-digit fields and 60 seconds. */
static int parse_date_time(const char *s, struct tm *ret)
{
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int y, mo, d, h, mi, sec;

        if (parse_digits(s, 4, &y) < 0 || s[4] != '-' || parse_digits(s + 5, 2, &mo) < 0 || s[7] != '-' ||
            parse_digits(s + 8, 2, &d) < 0 || s[10] != 'T' || parse_digits(s + 11, 2, &h) < 0 ||
            s[13] != ':' || parse_digits(s + 14, 2, &mi) < 0 || s[16] != ':' ||
            parse_digits(s + 17, 2, &sec) < 0)
                return -EINVAL;
        if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)) || h > 23 || mi > 59 ||
            sec > 59)
                return -EINVAL;
        *ret = (struct tm){.tm_year = y - 1900,
                           .tm_mon = mo - 1,
                           .tm_mday = d,
                           .tm_hour = h,
                           .tm_min = mi,
                           .tm_sec = sec};
        return 0;
}

int parse_rfc3339(const char *s, usec_t *ret)
{
        struct tm tm = {};
        unsigned frac = 0, digits = 0;
        long offset = 0;

        assert_return(s && ret, -EINVAL);
        /* Every check below stops at the first byte that does not fit, so a
         * NUL ends the parse before anything past it is read. */
        if (parse_date_time(s, &tm) < 0)
                return -EINVAL;
        const char *p = s + 19;
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
                if (parse_digits(p + 1, 2, &hh) < 0 || p[3] != ':' || parse_digits(p + 4, 2, &mm) < 0 ||
                    hh > 23 || mm > 59)
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
                usec_t term = (usec_t) v * units[k].mult; /* at most 1e9 h: no overflow */
                if (total > USEC_INFINITY - 1 - term)
                        return -ERANGE; /* "1000000000h" six times over */
                total += term;
                s = end + strlen(units[k].suffix);
        }
        *ret = total;
        return 0;
}
