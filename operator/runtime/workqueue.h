/* A controller's work queue with client-go semantics, as a pure data
 * structure on an injected clock (the runtime arms the loop's timers from
 * workqueue_advance()'s answer):
 * - a key queued twice is queued once (dirty set);
 * - a key being processed is never handed out again until workqueue_done();
 *   if it was added meanwhile it is queued again then (never lost);
 * - add_rate_limited waits max(per-key exponential 5 ms .. 1000 s, an overall
 *   10 qps / burst 100 bucket); forget resets the per-key count;
 * - add_after keeps the earliest time asked for;
 * - after shutdown nothing new is accepted and get returns NULL once empty. */
#pragma once

#include "base/timeutil.h"

typedef struct WorkQueue WorkQueue;

typedef struct WorkQueueLimits {
        usec_t base_delay; /* 5 ms */
        usec_t max_delay;  /* 1000 s */
        double qps;        /* 10 */
        unsigned burst;    /* 100 */
} WorkQueueLimits;

WorkQueue *workqueue_new(const WorkQueueLimits *limits /* NULL = defaults */, usec_t now);
WorkQueue *workqueue_free(WorkQueue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(WorkQueue *, workqueue_free);

int workqueue_add(WorkQueue *q, const char *key);
int workqueue_add_after(WorkQueue *q, const char *key, usec_t when);
/* Returns the delay chosen (for logs and tests). */
int workqueue_add_rate_limited(WorkQueue *q, const char *key, usec_t now, usec_t *ret_delay);
void workqueue_forget(WorkQueue *q, const char *key);
unsigned workqueue_num_requeues(WorkQueue *q, const char *key);

/* Moves due delayed keys into the queue; returns the next deadline or USEC_INFINITY. */
usec_t workqueue_advance(WorkQueue *q, usec_t now);
/* The next key, now "processing"; borrowed until workqueue_done(). NULL when empty. */
const char *workqueue_get(WorkQueue *q);
void workqueue_done(WorkQueue *q, const char *key);

size_t workqueue_len(WorkQueue *q);
size_t workqueue_processing(WorkQueue *q);
void workqueue_shutdown(WorkQueue *q);
bool workqueue_is_shutdown(WorkQueue *q);
