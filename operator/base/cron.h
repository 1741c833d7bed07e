/* Cron schedules as a CronJob takes them: five fields (minute, hour, day of
 * month, month, day of week), or one of the @-macros the Backup CRD allows.
 * A Backup's schedule is checked here before it goes into a CronJob, so a
 * value that is anything else (JSON, a sixth field, a range out of bounds)
 * never reaches the API server as part of an object we write. */
#pragma once

#include <stddef.h>

/* 0 when `s` is a schedule: each field a comma list of `*`, `?` (day
 * fields), N or N-M (month and day-of-week names JAN-DEC and SUN-SAT too),
 * each with an optional /STEP; or @annually, @yearly, @monthly, @weekly,
 * @daily, @hourly. -EINVAL otherwise, with `why` (n bytes) saying which part
 * is wrong and what it may be. */
int cron_schedule_check(const char *s, char *why, size_t n);
