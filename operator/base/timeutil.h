/* Clocks and Kubernetes time formats. usec_t is microseconds. */
#pragma once

#include <stdint.h>
#include <time.h>

#include "macro.h"

typedef uint64_t usec_t;

#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_SEC  ((usec_t) 1000000ULL)

usec_t now_usec(clockid_t clock);

/* RFC 3339 "2025-01-01T00:00:00Z" (Time) into buf of at least 32 bytes. */
char *format_rfc3339(char *buf, size_t n, usec_t realtime);
/* RFC 3339 with 6 fractional digits (MicroTime), buf of at least 32 bytes. */
char *format_rfc3339_micro(char *buf, size_t n, usec_t realtime);
/* Parses both forms (and any fraction length, and numeric offsets). */
int parse_rfc3339(const char *s, usec_t *ret);

/* Go-style durations: "137s", "2m", "1m30s", "500ms", "1h"; a bare number is seconds. */
int parse_duration(const char *s, usec_t *ret);
