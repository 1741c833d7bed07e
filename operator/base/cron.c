/* The cron schedule grammar of Kubernetes' CronJob (robfig/cron's standard
 * parser) restricted to what the Backup CRD documents: no seconds field, no
 * TZ= prefix, no @every, the @-macros of the CRD's pattern. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cron.h"

#define SCHEDULE_MAX 256

typedef struct Field {
        const char *name;
        int min, max;
        const char *const *names; /* names[i] is min + i; NULL without names */
        bool question;            /* `?` allowed (the day fields) */
} Field;

static const char *const months[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL",
                                     "AUG", "SEP", "OCT", "NOV", "DEC", NULL};
static const char *const days[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL};

static const Field fields[] = {
        {"minute", 0, 59, NULL, false},      {"hour", 0, 23, NULL, false},
        {"day of month", 1, 31, NULL, true}, {"month", 1, 12, months, false},
        {"day of week", 0, 6, days, true},
};

static const char *const macros[] = {"@annually", "@yearly", "@monthly", "@weekly", "@daily", "@hourly"};

/* A number or (where the field has them) a name, the whole of [s, e). */
static int parse_value(const Field *f, const char *s, const char *e, int *ret)
{
        size_t len = (size_t) (e - s);
        if (len == 0)
                return -EINVAL;
        if (isdigit((unsigned char) *s)) {
                int v = 0;
                for (const char *p = s; p < e; p++) {
                        if (!isdigit((unsigned char) *p) || len > 2)
                                return -EINVAL;
                        v = v * 10 + (*p - '0');
                }
                *ret = v;
                return 0;
        }
        for (size_t i = 0; f->names && f->names[i]; i++)
                if (len == 3 && strncasecmp(s, f->names[i], 3) == 0) {
                        *ret = f->min + (int) i;
                        return 0;
                }
        return -EINVAL;
}

/* One comma-separated item of field f: [s, e). */
static int parse_item(const Field *f, const char *s, const char *e, char *why, size_t n)
{
        const char *slash = memchr(s, '/', (size_t) (e - s));
        const char *end = slash ? slash : e;
        int lo = f->min, hi = f->max;

        if (end - s == 1 && (*s == '*' || (*s == '?' && f->question)))
                ;
        else {
                const char *dash = memchr(s, '-', (size_t) (end - s));
                int r = parse_value(f, s, dash ? dash : end, &lo);
                if (r >= 0)
                        r = dash ? parse_value(f, dash + 1, end, &hi) : (hi = lo, 0);
                if (r < 0) {
                        (void) snprintf(why, n, "%s \"%.*s\" is not *, a value or a range (%d-%d%s)",
                                        f->name, (int) (e - s), s, f->min, f->max,
                                        f->names == months ? " or JAN-DEC"
                                        : f->names == days ? " or SUN-SAT"
                                                           : "");
                        return -EINVAL;
                }
                if (lo < f->min || hi > f->max || lo > hi) {
                        (void) snprintf(why, n, "%s \"%.*s\" is out of range (%d-%d)", f->name,
                                        (int) (e - s), s, f->min, f->max);
                        return -EINVAL;
                }
        }
        if (slash) {
                int step = 0;
                const char *p = slash + 1;
                for (; p < e && isdigit((unsigned char) *p) && step <= f->max; p++)
                        step = step * 10 + (*p - '0');
                if (p == slash + 1 || p != e || step < 1 || step > f->max - f->min + 1) {
                        (void) snprintf(why, n, "%s \"%.*s\": the step after '/' must be 1 to %d", f->name,
                                        (int) (e - s), s, f->max - f->min + 1);
                        return -EINVAL;
                }
        }
        return 0;
}

int cron_schedule_check(const char *s, char *why, size_t n)
{
        size_t k = 0;

        if (!s || !*s) {
                (void) snprintf(why, n, "the schedule is empty");
                return -EINVAL;
        }
        if (strlen(s) > SCHEDULE_MAX) {
                (void) snprintf(why, n, "the schedule is longer than %d characters", SCHEDULE_MAX);
                return -EINVAL;
        }
        if (*s == '@') {
                for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
                        if (strcmp(s, macros[i]) == 0)
                                return 0;
                (void) snprintf(why, n,
                                "\"%s\" is none of @annually, @yearly, @monthly, @weekly, @daily, @hourly",
                                s);
                return -EINVAL;
        }
        for (const char *p = s; *p;) {
                if (*p == ' ') {
                        p++;
                        continue;
                }
                const char *e = p + strcspn(p, " ");
                if (k >= sizeof fields / sizeof fields[0]) {
                        (void) snprintf(why, n,
                                        "more than five fields (minute hour day-of-month month "
                                        "day-of-week)");
                        return -EINVAL;
                }
                for (const char *c = p; c < e; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("*?/,-", *c)) {
                                (void) snprintf(why, n,
                                                "%s: character 0x%02x is not part of a cron schedule",
                                                fields[k].name, (unsigned char) *c);
                                return -EINVAL;
                        }
                for (const char *item = p; item <= e;) {
                        const char *comma = memchr(item, ',', (size_t) (e - item));
                        const char *ie = comma ? comma : e;
                        if (parse_item(&fields[k], item, ie, why, n) < 0)
                                return -EINVAL;
                        item = ie + 1;
                }
                k++;
                p = e;
        }
        if (k != sizeof fields / sizeof fields[0]) {
                (void) snprintf(why, n,
                                "%zu fields; a schedule has five (minute hour day-of-month month "
                                "day-of-week)",
                                k);
                return -EINVAL;
        }
        return 0;
}
