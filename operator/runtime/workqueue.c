/* Work queue: FIFO of keys + dirty set + processing set + delayed set +
 * per-key failure counts + a token bucket. */

#include "workqueue.h"
#include <limits.h>

#include "base/backoff.h"
#include "base/hashmap.h"

typedef struct Node {
        struct Node *next;
        char key[];
} Node;

struct WorkQueue {
        WorkQueueLimits limits;
        Node *head, *tail;
        size_t len;
        Hashmap *dirty;      /* keys queued or to be requeued after processing */
        Hashmap *processing; /* keys handed out; value: the Node whose key was returned */
        Hashmap *delayed;    /* key -> usec_t* due time */
        Hashmap *failures;   /* key -> (uintptr_t) count */
        TokenBucket bucket;
        bool shutdown;
};

WorkQueue *workqueue_new(const WorkQueueLimits *limits, usec_t now)
{
        WorkQueue *q = calloc(1, sizeof *q);
        if (!q)
                return NULL;
        q->limits = limits ? *limits
                           : (WorkQueueLimits){.base_delay = 5 * USEC_PER_MSEC,
                                               .max_delay = 1000 * USEC_PER_SEC,
                                               .qps = 10,
                                               .burst = 100};
        q->dirty = hashmap_new(NULL);
        q->processing = hashmap_new(free);
        q->delayed = hashmap_new(free);
        q->failures = hashmap_new(NULL);
        if (!q->dirty || !q->processing || !q->delayed || !q->failures)
                return workqueue_free(q);
        token_bucket_init(&q->bucket, q->limits.qps, q->limits.burst, now);
        return q;
}

WorkQueue *workqueue_free(WorkQueue *q)
{
        if (!q)
                return NULL;
        for (Node *n = q->head, *next; n; n = next) {
                next = n->next;
                free(n);
        }
        hashmap_free(q->dirty);
        hashmap_free(q->processing);
        hashmap_free(q->delayed);
        hashmap_free(q->failures);
        return mfree(q);
}

static int push(WorkQueue *q, const char *key)
{
        size_t l = strlen(key) + 1;
        Node *n = malloc(sizeof *n + l);
        if (!n)
                return -ENOMEM;
        memcpy(n->key, key, l);
        n->next = NULL;
        if (q->tail)
                q->tail->next = n;
        else
                q->head = n;
        q->tail = n;
        q->len++;
        return 0;
}

int workqueue_add(WorkQueue *q, const char *key)
{
        int r;

        assert_return(q && key, -EINVAL);
        if (q->shutdown)
                return -ESHUTDOWN;
        if (hashmap_contains(q->dirty, key))
                return 0;
        r = hashmap_put(q->dirty, key, NULL);
        if (r < 0)
                return r;
        if (hashmap_contains(q->processing, key))
                return 0; /* queued again by workqueue_done() */
        r = push(q, key);
        if (r < 0)
                (void) hashmap_remove(q->dirty, key);
        return r;
}

int workqueue_add_after(WorkQueue *q, const char *key, usec_t when)
{
        assert_return(q && key, -EINVAL);
        if (q->shutdown)
                return -ESHUTDOWN;
        usec_t *due = hashmap_get(q->delayed, key);
        if (due) {
                if (when < *due)
                        *due = when;
                return 0;
        }
        due = malloc(sizeof *due);
        if (!due)
                return -ENOMEM;
        *due = when;
        int r = hashmap_put(q->delayed, key, due);
        if (r < 0)
                free(due);
        return MIN(r, 0);
}

int workqueue_add_rate_limited(WorkQueue *q, const char *key, usec_t now, usec_t *ret_delay)
{
        assert_return(q && key, -EINVAL);
        uintptr_t fails = (uintptr_t) hashmap_get(q->failures, key);
        usec_t per_key = backoff_exponential(q->limits.base_delay, q->limits.max_delay,
                                             (unsigned) MIN(fails, (uintptr_t) UINT_MAX));
        int r = hashmap_put(q->failures, key, (void *) (fails + 1));
        if (r < 0)
                return r;
        usec_t overall = token_bucket_reserve(&q->bucket, now);
        usec_t delay = MAX(per_key, overall);
        if (ret_delay)
                *ret_delay = delay;
        return workqueue_add_after(q, key, now + delay);
}

void workqueue_forget(WorkQueue *q, const char *key)
{
        (void) hashmap_remove(q->failures, key);
}

unsigned workqueue_num_requeues(WorkQueue *q, const char *key)
{
        return (unsigned) (uintptr_t) hashmap_get(q->failures, key);
}

usec_t workqueue_advance(WorkQueue *q, usec_t now)
{
        usec_t next = USEC_INFINITY;
        HashmapIter it;
        const char *key;
        usec_t *due;

        HASHMAP_FOREACH (key, due, q->delayed, it) {
                if (*due <= now) {
                        _cleanup_free_ char *k = strdup(key);
                        if (!k)
                                continue;
                        (void) hashmap_remove(q->delayed, k);
                        if (!q->shutdown)
                                (void) workqueue_add(q, k);
                } else if (*due < next)
                        next = *due;
        }
        return next;
}

const char *workqueue_get(WorkQueue *q)
{
        Node *n = q->head;
        if (!n)
                return NULL;
        q->head = n->next;
        if (!q->head)
                q->tail = NULL;
        q->len--;
        (void) hashmap_remove(q->dirty, n->key);
        if (hashmap_put(q->processing, n->key, n) < 0) {
                free(n);
                return NULL;
        }
        return n->key;
}

void workqueue_done(WorkQueue *q, const char *key)
{
        _cleanup_free_ Node *n = hashmap_steal(q->processing, key);
        if (!n)
                return;
        /* Added while processing: now it may be handed out again. */
        if (hashmap_contains(q->dirty, n->key) && push(q, n->key) < 0)
                (void) hashmap_remove(q->dirty, n->key);
}

size_t workqueue_len(WorkQueue *q)
{
        return q->len;
}

size_t workqueue_processing(WorkQueue *q)
{
        return hashmap_size(q->processing);
}

void workqueue_shutdown(WorkQueue *q)
{
        q->shutdown = true;
}

bool workqueue_is_shutdown(WorkQueue *q)
{
        return q->shutdown;
}
