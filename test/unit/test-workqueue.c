/* Work queue semantics with an injected clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runtime/workqueue.h"

#define MS USEC_PER_MSEC

static void test_dedup_and_processing(void **state)
{
        _cleanup_(workqueue_freep) WorkQueue *q = workqueue_new(NULL, 0);

        assert_int_equal(workqueue_add(q, "a"), 0);
        assert_int_equal(workqueue_add(q, "b"), 0);
        assert_int_equal(workqueue_add(q, "a"), 0);
        assert_int_equal(workqueue_len(q), 2);

        const char *k = workqueue_get(q);
        assert_string_equal(k, "a");
        /* Added while processing: not handed out twice at once... */
        assert_int_equal(workqueue_add(q, "a"), 0);
        assert_int_equal(workqueue_len(q), 1);
        assert_string_equal(workqueue_get(q), "b");
        assert_null(workqueue_get(q));
        /* ...and not lost: it comes back once done. */
        workqueue_done(q, "a");
        assert_int_equal(workqueue_len(q), 1);
        k = workqueue_get(q);
        assert_string_equal(k, "a");
        workqueue_done(q, k);
        workqueue_done(q, "b");
        assert_int_equal(workqueue_len(q), 0);
        assert_int_equal(workqueue_processing(q), 0);
}

static void test_backoff_per_key(void **state)
{
        WorkQueueLimits l = {
                .base_delay = 5 * MS, .max_delay = 1000 * USEC_PER_SEC, .qps = 1e9, .burst = 1000000};
        _cleanup_(workqueue_freep) WorkQueue *q = workqueue_new(&l, 0);
        usec_t d = 0;

        assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &d), 0);
        assert_int_equal(d, 5 * MS);
        assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &d), 0);
        assert_int_equal(d, 10 * MS);
        assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &d), 0);
        assert_int_equal(d, 20 * MS);
        assert_int_equal(workqueue_num_requeues(q, "a"), 3);
        for (int i = 0; i < 40; i++)
                assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &d), 0);
        assert_int_equal(d, 1000 * USEC_PER_SEC);
        workqueue_forget(q, "a");
        assert_int_equal(workqueue_add_rate_limited(q, "a", 0, &d), 0);
        assert_int_equal(d, 5 * MS);
        /* Another key has its own count. */
        assert_int_equal(workqueue_add_rate_limited(q, "b", 0, &d), 0);
        assert_int_equal(d, 5 * MS);
}

static void test_overall_bucket(void **state)
{
        _cleanup_(workqueue_freep) WorkQueue *q = workqueue_new(NULL, 0);
        char key[16];
        usec_t d = 0;

        /* 100 burst, then 10 qps: the 101st distinct key waits 100 ms, the 110th 1 s. */
        for (int i = 0; i < 100; i++) {
                (void) snprintf(key, sizeof key, "k%d", i);
                assert_int_equal(workqueue_add_rate_limited(q, key, 0, &d), 0);
                assert_int_equal(d, 5 * MS);
        }
        assert_int_equal(workqueue_add_rate_limited(q, "x1", 0, &d), 0);
        assert_int_equal(d, 100 * MS);
        for (int i = 2; i <= 10; i++) {
                (void) snprintf(key, sizeof key, "x%d", i);
                assert_int_equal(workqueue_add_rate_limited(q, key, 0, &d), 0);
        }
        assert_int_equal(d, 1000 * MS);
}

static void test_add_after(void **state)
{
        _cleanup_(workqueue_freep) WorkQueue *q = workqueue_new(NULL, 0);

        assert_int_equal(workqueue_add_after(q, "a", 100 * MS), 0);
        assert_int_equal(workqueue_add_after(q, "a", 50 * MS), 0);
        assert_int_equal(workqueue_add_after(q, "a", 80 * MS), 0);
        assert_int_equal(workqueue_add_after(q, "b", 200 * MS), 0);
        assert_int_equal(workqueue_advance(q, 10 * MS), 50 * MS);
        assert_int_equal(workqueue_len(q), 0);
        assert_int_equal(workqueue_advance(q, 50 * MS), 200 * MS);
        assert_int_equal(workqueue_len(q), 1);
        assert_int_equal(workqueue_advance(q, 300 * MS), USEC_INFINITY);
        assert_int_equal(workqueue_len(q), 2);
}

static void test_shutdown(void **state)
{
        _cleanup_(workqueue_freep) WorkQueue *q = workqueue_new(NULL, 0);

        assert_int_equal(workqueue_add(q, "a"), 0);
        const char *k = workqueue_get(q);
        workqueue_shutdown(q);
        assert_int_equal(workqueue_add(q, "b"), -ESHUTDOWN);
        assert_int_equal(workqueue_add_after(q, "c", 0), -ESHUTDOWN);
        assert_int_equal(workqueue_processing(q), 1);
        workqueue_done(q, k);
        assert_int_equal(workqueue_processing(q), 0);
        assert_null(workqueue_get(q));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dedup_and_processing),
                cmocka_unit_test(test_backoff_per_key),
                cmocka_unit_test(test_overall_bucket),
                cmocka_unit_test(test_add_after),
                cmocka_unit_test(test_shutdown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
