/* Member failure and quorum loss on a real 3-member TLS cluster: kill -9 of
 * a member flips its health within the poll period and a restart recovers
 * it; with two of three down, writes fail as "no quorum" (or the client's
 * deadline) within the timeout, never a hang. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/log.h"
#include "etcd-harness.h"
#include "etcd/view.h"

#define POLL (500 * USEC_PER_MSEC)

static EtcdTestCluster cluster;
static Loop *loop;
static EtcdClient *client;
static EtcdView *view;

static const EtcdMemberState *state_of(const char *name)
{
        return etcd_view_find_by_name(etcd_view_get(view), name);
}

/* Runs the loop until `pred` holds for the view's snapshot; returns how long it took. */
static usec_t wait_view(bool (*pred)(void), usec_t timeout)
{
        usec_t start = now_usec(CLOCK_MONOTONIC);
        for (;;) {
                bool tick = false;
                (void) loop_run_until(loop, &tick, 100 * USEC_PER_MSEC);
                if (etcd_view_get(view) && pred())
                        return now_usec(CLOCK_MONOTONIC) - start;
                if (now_usec(CLOCK_MONOTONIC) - start > timeout)
                        fail_msg("view did not reach the expected state in %llu ms",
                                 (unsigned long long) (timeout / USEC_PER_MSEC));
        }
}

static bool all_healthy(void)
{
        return etcd_view_all_healthy(etcd_view_get(view)) &&
               etcd_view_count_voters(etcd_view_get(view)) == 3;
}

static bool m2_unhealthy(void)
{
        const EtcdMemberState *s = state_of("m2");
        return s && !s->healthy;
}

static bool m2_down_others_healthy(void)
{
        return m2_unhealthy() && etcd_view_count_healthy_voters(etcd_view_get(view)) == 2;
}

static bool quorum_lost(void)
{
        return etcd_view_count_healthy_voters(etcd_view_get(view)) <= 1;
}

static void test_member_down_and_back(void **state)
{
        wait_view(all_healthy, 30 * USEC_PER_SEC);
        assert_int_equal(etcd_test_member_kill(&cluster, 1, SIGKILL), 0);
        usec_t took = wait_view(m2_unhealthy, 10 * USEC_PER_SEC);
        printf("kill -9 of m2 seen as unhealthy after %llu ms\n",
               (unsigned long long) (took / USEC_PER_MSEC));
        /* Within a poll period plus one round: the health request to a dead port fails fast,
         * but a round ends when its last request does, and each of its two steps (member list,
         * then health) is bounded by the view's round timeout (2 s). On a quiet machine it
         * takes about one poll period; beside the rest of the suite 3.7 s was seen
         * (2026-11-29), so the bound is the design's: two polls and both steps at their
         * timeout, which still fails a view held by the client's 10 s default. */
        assert_true(took < 2 * POLL + 2 * 2 * USEC_PER_SEC);
        const EtcdMemberState *s = state_of("m2");
        assert_true(s->error == -ECONNREFUSED || s->error == -ECONNRESET);
        assert_false(etcd_view_all_healthy(etcd_view_get(view)));
        /* If m2 led, the others say unhealthy until they elect a leader: the view follows. */
        took = wait_view(m2_down_others_healthy, 15 * USEC_PER_SEC);
        printf("m1 and m3 healthy without m2 after %llu ms more\n",
               (unsigned long long) (took / USEC_PER_MSEC));
        assert_int_equal(etcd_view_count_healthy_voters(etcd_view_get(view)), 2);
        /* A healthy quorum in this round: its end is the latest quorate moment. */
        assert_true(etcd_view_get(view)->quorate_at == etcd_view_get(view)->taken_at);

        /* Restart on its data: it rejoins and the view sees all healthy again. */
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&cluster, 0x7);
        assert_int_equal(etcd_test_member_start(&cluster, 1, ic, false), 0);
        took = wait_view(all_healthy, 30 * USEC_PER_SEC);
        printf("m2 healthy again %llu ms after restart\n", (unsigned long long) (took / USEC_PER_MSEC));
}

static void test_quorum_loss(void **state)
{
        EtcdTestResult r = {};

        wait_view(all_healthy, 30 * USEC_PER_SEC);
        assert_int_equal(etcd_test_member_kill(&cluster, 1, SIGKILL), 0);
        assert_int_equal(etcd_test_member_kill(&cluster, 2, SIGKILL), 0);
        wait_view(quorum_lost, 15 * USEC_PER_SEC);
        /* The last healthy quorum stays where it was; only the survivor answers /health
         * (false), so the survivors are no quorum electing a leader. */
        const EtcdViewSnapshot *lost = etcd_view_get(view);
        assert_true(lost->quorate_at > 0 && lost->quorate_at < lost->taken_at);
        assert_true(etcd_view_count_reachable_voters(lost) <= 1);

        /* A write with a 3 s budget: answered as no quorum / deadline, in time. */
        char *one[] = {cluster.members[0].client_url};
        assert_int_equal(etcd_client_set_endpoints(client, one, 1), 0);
        etcd_client_set_timeout(client, 3 * USEC_PER_SEC);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(etcd_kv_put(client, "k", 1, "v", 1, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        printf("write without quorum: %s after %llu ms\n", etcd_strerror(r.error),
               (unsigned long long) (took / USEC_PER_MSEC));
        assert_true(r.error == ETCD_ERR_NO_QUORUM || r.error == -ETIMEDOUT || r.error == ETCD_ERR_NO_LEADER);
        assert_true(took < 5 * USEC_PER_SEC);
        etcd_test_result_done(&r);

        /* Health of the survivor says false; status still answers, without a leader. */
        assert_int_equal(etcd_health(client, cluster.members[0].client_url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, -EAGAIN);
        etcd_test_result_done(&r);
        assert_int_equal(etcd_status(client, cluster.members[0].client_url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        _cleanup_(etcd_status_done) EtcdStatus st = {};
        assert_int_equal(etcd_parse_status(r.body, &st), 0);
        assert_int_equal(st.leader, 0);
        etcd_test_result_done(&r);

        /* Member remove never answers without quorum on 3.4: our deadline still ends it. */
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
        assert_int_equal(etcd_member_list(client, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        assert_int_equal(etcd_parse_member_list(r.body, &l), 0);
        etcd_test_result_done(&r);
        const EtcdMember *m3 = etcd_member_list_find_by_name(l, "m3");
        assert_non_null(m3);
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(etcd_member_remove(client, m3->id, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        took = now_usec(CLOCK_MONOTONIC) - t0;
        printf("member remove without quorum: %s after %llu ms\n", etcd_strerror(r.error),
               (unsigned long long) (took / USEC_PER_MSEC));
        assert_true(r.error < 0);
        assert_true(took < 5 * USEC_PER_SEC);
        etcd_test_result_done(&r);
}

static int setup(void **state)
{
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (etcd_test_cluster_init(&cluster, 3, NULL) < 0 || etcd_test_cluster_bootstrap(&cluster, 3) < 0)
                return -1;
        loop = loop_new();
        client = etcd_test_client(&cluster, loop, 0x7);
        view = client ? etcd_view_new(client, POLL) : NULL;
        return view && etcd_view_start(view) >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
        client = etcd_client_free(client);
        view = etcd_view_free(view);
        assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        etcd_test_cluster_destroy(&cluster);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_member_down_and_back),
                cmocka_unit_test(test_quorum_loss),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
