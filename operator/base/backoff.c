/* Backoff and rate limiting arithmetic; no clocks read here. */
#include <sys/random.h>

#include "backoff.h"

void backoff_init(Backoff *b, usec_t initial, usec_t max, double factor, double jitter)
{
        *b = (Backoff){.initial = initial, .max = max, .factor = factor, .jitter = jitter};
}

usec_t backoff_next(Backoff *b, double rnd)
{
        usec_t d = b->current ? b->current : b->initial;
        double next = (double) d * b->factor;
        b->current = next > (double) b->max ? b->max : (usec_t) next;
        b->steps++;
        double j = (double) d * (1.0 + b->jitter * rnd);
        if (j > (double) b->max)
                return b->max;
        return (usec_t) j;
}

void backoff_reset(Backoff *b)
{
        b->current = 0;
        b->steps = 0;
}

usec_t backoff_exponential(usec_t base, usec_t max, unsigned failures)
{
        usec_t d = MIN(base, max);
        for (unsigned i = 0; i < failures && d < max; i++)
                d = d > max / 2 ? max : d * 2;
        return d;
}

void token_bucket_init(TokenBucket *t, double rate, unsigned burst, usec_t now)
{
        *t = (TokenBucket){.rate = rate, .burst = burst, .tokens = burst, .last = now};
}

usec_t token_bucket_reserve(TokenBucket *t, usec_t now)
{
        if (now > t->last) {
                t->tokens += (double) (now - t->last) / (double) USEC_PER_SEC * t->rate;
                if (t->tokens > t->burst)
                        t->tokens = t->burst;
                t->last = now;
        }
        t->tokens -= 1.0;
        if (t->tokens >= 0)
                return 0;
        /* Debt is paid back at `rate`; the caller waits until its token exists. */
        return (usec_t) (-t->tokens / t->rate * (double) USEC_PER_SEC);
}

double random_unit(void)
{
        uint64_t v = 0;
        if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
                v = (uint64_t) now_usec(CLOCK_MONOTONIC) * 6364136223846793005ULL;
        return (double) (v >> 11) / 9007199254740992.0;
}
