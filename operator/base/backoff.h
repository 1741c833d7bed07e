/* Exponential backoff with jitter (client-go's wait.Backoff shape), and a
 * token bucket. Pure functions of an injected clock and random source. */
#pragma once

#include "timeutil.h"

typedef struct Backoff {
        usec_t initial;
        usec_t max;
        double factor;
        double jitter;      /* 0.1 = up to +10% */
        usec_t reset_after; /* a success older than this resets the step */
        unsigned steps;
        usec_t current;
} Backoff;

void backoff_init(Backoff *b, usec_t initial, usec_t max, double factor, double jitter);
/* Next delay; `rnd` in [0,1) supplies the jitter (tests pass fixed values). */
usec_t backoff_next(Backoff *b, double rnd);
void backoff_reset(Backoff *b);

/* The delay after `failures` failures in a row, from no state but the count: base * 2^failures,
 * capped at max (client-go's ItemExponentialFailureRateLimiter). The one exponential of the
 * product: the work queue's per-key retries, the executor's wait for a cache behind the
 * server, the installer's retries after a failed revision. */
usec_t backoff_exponential(usec_t base, usec_t max, unsigned failures);

typedef struct TokenBucket {
        double rate;  /* tokens per second */
        double burst; /* capacity */
        double tokens;
        usec_t last;
} TokenBucket;

void token_bucket_init(TokenBucket *t, double rate, unsigned burst, usec_t now);
/* Reserves one token and returns how long the caller must wait for it (0 = now). */
usec_t token_bucket_reserve(TokenBucket *t, usec_t now);

double random_unit(void);
