/* Growing a real TLS etcd cluster 1 -> 3 with learners, one at a time, and
 * shrinking it: the membership calls and their errors as the operator sees
 * them, and the view's picture along the way. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers/facts.h"
#include "etcd-harness.h"
#include "etcd/view.h"

static EtcdTestCluster cluster;
static Loop *loop;
static EtcdClient *client;

/* Small wrappers: each returns the call's final error. */
static int add_learner(const char *peer_url, uint64_t *ret_id)
{
        EtcdTestResult r = {};
        int e = etcd_member_add(client, peer_url, true, etcd_test_result_cb, &r);
        if (e < 0)
                return e;
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        e = r.error;
        if (e < 0)
                printf("member add %s: %s (%s)\n", peer_url, etcd_strerror(e), r.message);
        if (e >= 0 && ret_id)
                assert_int_equal(etcd_parse_added_member(r.body, ret_id), 0);
        etcd_test_result_done(&r);
        return e;
}

static int id_op(int (*f)(EtcdClient *, uint64_t, EtcdCallback, void *), uint64_t id)
{
        EtcdTestResult r = {};
        int e = f(client, id, etcd_test_result_cb, &r);
        if (e < 0)
                return e;
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        e = r.error;
        etcd_test_result_done(&r);
        return e;
}

static EtcdMemberList *list_members(void)
{
        EtcdTestResult r = {};
        EtcdMemberList *l = NULL;
        assert_int_equal(etcd_member_list(client, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_int_equal(etcd_parse_member_list(r.body, &l), 0);
        etcd_test_result_done(&r);
        return l;
}

/* Promote, retrying while the learner catches up (as the operator does). */
static void promote_when_in_sync(uint64_t id)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 60 * USEC_PER_SEC;
        unsigned not_ready = 0;
        for (;;) {
                int e = id_op(etcd_member_promote, id);
                if (e == 0)
                        break;
                if (e != ETCD_ERR_LEARNER_NOT_READY && e != ETCD_ERR_UNHEALTHY)
                        fail_msg("promote: %s", etcd_strerror(e));
                not_ready++;
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(200000);
        }
        printf("promoted after %u not-ready answers\n", not_ready);
}

static void wait_all_healthy(EtcdView *v, size_t members)
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        for (;;) {
                bool tick = false;
                (void) loop_run_until(loop, &tick, 300 * USEC_PER_MSEC);
                const EtcdViewSnapshot *s = etcd_view_get(v);
                if (s && s->members && s->members->n_members == members && etcd_view_all_healthy(s))
                        return;
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
        }
}

static void test_grow_and_shrink(void **state)
{
        uint64_t id2 = 0, id3 = 0;
        _cleanup_(etcd_view_freep) EtcdView *view = etcd_view_new(client, 500 * USEC_PER_MSEC);

        assert_int_equal(etcd_view_start(view), 0);
        wait_all_healthy(view, 1);

        /* 1 -> 2: add m2 as a learner; a second learner is refused with its own error. */
        assert_int_equal(add_learner(cluster.members[1].peer_url, &id2), 0);
        assert_int_equal(add_learner(cluster.members[2].peer_url, NULL), ETCD_ERR_TOO_MANY_LEARNERS);
        /* Adding the same peer URL again is refused too. */
        assert_int_equal(add_learner(cluster.members[1].peer_url, NULL), ETCD_ERR_PEER_URL_EXISTS);
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = list_members();
        const EtcdMember *m2 = etcd_member_list_find(l, id2);
        assert_non_null(m2);
        assert_true(m2->is_learner);
        assert_false(etcd_member_is_started(m2));
        /* Promoting before it even started: not in sync. */
        assert_int_equal(id_op(etcd_member_promote, id2), ETCD_ERR_LEARNER_NOT_READY);

        _cleanup_free_ char *ic2 = etcd_test_initial_cluster(&cluster, 0x3);
        assert_int_equal(etcd_test_member_start(&cluster, 1, ic2, true), 0);
        promote_when_in_sync(id2);
        /* Promoting again is refused. Right after the promotion a loaded etcd may first push
         * back with "too many requests" (ResourceExhausted, -EBUSY): ask again. */
        int again = -EBUSY;
        for (int i = 0; i < 50 && again == -EBUSY; i++) {
                if (i > 0)
                        (void) usleep(100 * 1000);
                again = id_op(etcd_member_promote, id2);
        }
        assert_int_equal(again, ETCD_ERR_NOT_LEARNER);

        /* 2 -> 3. Right after a join etcd calls the cluster unhealthy for ~5 s: retry. */
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        int e;
        while ((e = add_learner(cluster.members[2].peer_url, &id3)) == ETCD_ERR_UNHEALTHY) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(500000);
        }
        assert_int_equal(e, 0);
        _cleanup_free_ char *ic3 = etcd_test_initial_cluster(&cluster, 0x7);
        assert_int_equal(etcd_test_member_start(&cluster, 2, ic3, true), 0);
        promote_when_in_sync(id3);

        /* Point the client at all three and let the view see them healthy. */
        char *urls[] = {cluster.members[0].client_url, cluster.members[1].client_url,
                        cluster.members[2].client_url};
        assert_int_equal(etcd_client_set_endpoints(client, urls, 3), 0);
        wait_all_healthy(view, 3);
        const EtcdViewSnapshot *s = etcd_view_get(view);
        assert_int_equal(etcd_view_count_voters(s), 3);
        assert_int_equal(etcd_view_count_pending(s), 0);
        assert_true(s->leader != 0);
        assert_false(s->split_brain);
        assert_true(etcd_view_removal_keeps_quorum(s, id3));

        /* Invalid peer URLs never reach etcd. */
        char *bad[] = {(char *) "not a url"};
        EtcdTestResult r = {};
        assert_int_equal(etcd_member_update(client, id3, bad, 1, etcd_test_result_cb, &r), ETCD_ERR_BAD_URL);
        assert_false(r.done);
        assert_int_equal(etcd_member_add(client, "127.0.0.9:2380", true, etcd_test_result_cb, &r),
                         ETCD_ERR_BAD_URL);

        /* 3 -> 2: remove m3 (etcd refuses while it joined less than 5 s ago); it then leaves on its own. */
        end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        while ((e = id_op(etcd_member_remove, id3)) == ETCD_ERR_UNHEALTHY) {
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
                (void) usleep(500000);
        }
        assert_int_equal(e, 0);
        assert_true(etcd_test_member_wait_exit(&cluster, 2, 15 * USEC_PER_SEC) >= 0);
        assert_int_equal(id_op(etcd_member_remove, id3), ETCD_ERR_MEMBER_NOT_FOUND);
        _cleanup_(etcd_member_list_freep) EtcdMemberList *after = list_members();
        assert_int_equal(after->n_members, 2);
        assert_null(etcd_member_list_find(after, id3));
        wait_all_healthy(view, 2);
}

/* Runs the view until a round's snapshot satisfies `want` (30 s at most). */
static const EtcdViewSnapshot *wait_view(EtcdView *v, bool (*want)(const EtcdViewSnapshot *s))
{
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        for (;;) {
                bool tick = false;
                (void) loop_run_until(loop, &tick, 300 * USEC_PER_MSEC);
                const EtcdViewSnapshot *s = etcd_view_get(v);
                if (s && want(s))
                        return s;
                assert_true(now_usec(CLOCK_MONOTONIC) < end);
        }
}

static bool split(const EtcdViewSnapshot *s)
{
        return s->split_brain;
}

static bool split_listed_by_the_two(const EtcdViewSnapshot *s)
{
        return s->split_brain && s->n_members == 2;
}

static bool whole(const EtcdViewSnapshot *s)
{
        return !s->split_brain && s->members && etcd_view_all_healthy(s);
}

/* Split brain (issue 37): the third member, removed by the last test, comes back as a
 * cluster of its own (its old data moved aside, bootstrapped alone) on the address the
 * client still has among its endpoints. Whichever side answers the member list, the view
 * sees two cluster IDs and names both sides: the first two members on one, the third's
 * endpoint on the other. Once m2 stops, the view
 * is whole again. */
static void test_split_brain(void **state)
{
        (void) state;
        _cleanup_(etcd_view_freep) EtcdView *view = etcd_view_new(client, 500 * USEC_PER_MSEC);
        assert_int_equal(etcd_view_start(view), 0);
        wait_all_healthy(view, 2);

        EtcdTestMember *m2 = &cluster.members[2];
        _cleanup_free_ char *data = strdup_printf("%s/data", m2->dir);
        _cleanup_free_ char *aside = strdup_printf("%s/data.removed", m2->dir);
        assert_int_equal(rename(data, aside), 0);
        _cleanup_free_ char *alone = etcd_test_initial_cluster(&cluster, 0x4);
        assert_int_equal(etcd_test_member_start(&cluster, 2, alone, false), 0);

        /* The list from the first two (m2 no member of theirs): m2's endpoint answers for another cluster.
         */
        char *all[] = {cluster.members[0].client_url, cluster.members[1].client_url, m2->client_url};
        assert_int_equal(etcd_client_set_endpoints(client, all, 3), 0);
        const EtcdViewSnapshot *s = wait_view(view, split_listed_by_the_two);
        printf("split brain: %s\n", s->split_brain_detail);
        assert_non_null(strstr(s->split_brain_detail, "members report 2 cluster IDs"));
        /* The member list's side names both of its members, in the list's order (etcd 3.6 lists
         * them in another order than 3.5). */
        _cleanup_free_ char *listed = strdup_printf("(the member list's): %s, %s", cluster.members[0].name,
                                                    cluster.members[1].name);
        _cleanup_free_ char *listed_too = strdup_printf("(the member list's): %s, %s",
                                                        cluster.members[1].name, cluster.members[0].name);
        assert_true(strstr(s->split_brain_detail, listed) || strstr(s->split_brain_detail, listed_too));
        _cleanup_free_ char *named = strdup_printf("endpoint %s", m2->client_url);
        assert_non_null(strstr(s->split_brain_detail, named));

        /* m2 first: whichever side lists, the other is seen, as a stray endpoint. */
        char *m2_first[] = {m2->client_url, cluster.members[0].client_url};
        assert_int_equal(etcd_client_set_endpoints(client, m2_first, 2), 0);
        for (int round = 0; round < 4; round++) {
                s = wait_view(view, split);
                assert_non_null(strstr(s->split_brain_detail, "members report 2 cluster IDs"));
                assert_non_null(strstr(s->split_brain_detail, "endpoint "));
                etcd_view_refresh(view);
        }

        /* m2 stopped: one cluster again. */
        assert_int_equal(etcd_test_member_kill(&cluster, 2, SIGTERM), 0); /* and reaped */
        assert_int_equal(etcd_client_set_endpoints(client, all, 3), 0);
        s = wait_view(view, whole);
        assert_null(s->split_brain_detail);
        assert_int_equal(s->n_members, 2);
}

static int downgrade(const char *action, const char *version, char *msg, size_t n)
{
        EtcdTestResult r = {};
        int e = etcd_downgrade(client, action, version, etcd_test_result_cb, &r);
        if (e < 0)
                return e;
        assert_int_equal(etcd_test_wait(loop, &r, 30 * USEC_PER_SEC), 0);
        e = r.error;
        (void) snprintf(msg, n, "%s", r.message);
        printf("downgrade %s %s: %s %s\n", action, strempty(version), e < 0 ? etcd_strerror(e) : "ok",
               r.message);
        etcd_test_result_done(&r);
        return e;
}

static bool all_storage_35_enabled(const EtcdViewSnapshot *s)
{
        size_t n = 0;
        for (size_t i = 0; i < s->n_members; i++) {
                const EtcdStatus *st = &s->states[i].status;
                n += s->states[i].has_status && st->downgrade_enabled &&
                     streq(st->downgrade_target, "3.5.0") && streq(st->storage_version, "3.5.0");
        }
        return s->n_members > 0 && n == s->n_members;
}

static bool none_enabled(const EtcdViewSnapshot *s)
{
        for (size_t i = 0; i < s->n_members; i++)
                if (!s->states[i].has_status || s->states[i].status.downgrade_enabled)
                        return false;
        return s->n_members > 0;
}

/* etcd's downgrade as EtcdDowngradeController drives it, on the two members left: 3.6
 * members report their storage version and the downgrade in their status; enabling 3.5
 * moves every storage to 3.5; a target etcd cannot go to is refused with etcd's reason;
 * cancelling ends it, and cancelling again changes nothing. Without a downgrade, etcd 3.5
 * (Debian's) refuses to start on a 3.6 member's data: what EtcdDowngradeController and
 * TargetConfigController keep a rollback from running into. etcd 3.5 members have no 3.5 to go
 * down to: the test says so and stops (integration/etcd-3.6/test-etcd-membership runs it). */
static void test_downgrade(void **state)
{
        (void) state;
        EtcdTestResult r = {};
        assert_int_equal(etcd_status(client, cluster.members[0].client_url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 10 * USEC_PER_SEC), 0);
        char version[32];
        (void) snprintf(version, sizeof version, "%s", strempty(json_get_string(r.body, "version")));
        etcd_test_result_done(&r);
        if (!startswith(version, "3.6.")) {
                printf("etcd %s: no etcd minor below to downgrade to here; integration/etcd-3.6/"
                       "test-etcd-membership runs this on etcd 3.6\n",
                       version);
                skip();
        }
        _cleanup_(etcd_view_freep) EtcdView *view = etcd_view_new(client, 500 * USEC_PER_MSEC);
        assert_int_equal(etcd_view_start(view), 0);
        wait_all_healthy(view, 2);
        const EtcdViewSnapshot *s = etcd_view_get(view);
        const EtcdStatus *st = &s->states[0].status;
        assert_string_equal(st->storage_version, "3.6.0");
        assert_false(st->downgrade_enabled);
        /* No downgrade enabled (the cluster version is 3.6): m2 restarted on etcd 3.5 is refused by
         * etcd itself. */
        if (access("/usr/bin/etcd", X_OK) != 0)
                fail_msg("no etcd 3.5 at /usr/bin/etcd (hack/install-deps.sh installs Debian's)");
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&cluster, 0x3);
        assert_int_equal(etcd_test_member_kill(&cluster, 1, SIGTERM), 0);
        cluster.etcd_binary = "/usr/bin/etcd";
        assert_int_equal(etcd_test_member_start(&cluster, 1, ic, true), 0);
        cluster.etcd_binary = NULL;
        assert_true(etcd_test_member_wait_exit(&cluster, 1, 30 * USEC_PER_SEC) > 0); /* exited, failing */
        _cleanup_free_ char *log = strdup_printf("%s/etcd.log", cluster.members[1].dir);
        _cleanup_free_ char *text = NULL;
        assert_true(read_full_file(log, 1 << 20, &text, NULL) >= 0);
        assert_non_null(strstr(text, "invalid downgrade"));
        printf("etcd 3.5 on a 3.6 member's data, no downgrade enabled: refused (\"invalid downgrade\")\n");
        /* Back on 3.6, the member rejoins. */
        assert_int_equal(etcd_test_member_start(&cluster, 1, ic, true), 0);
        wait_all_healthy(view, 2);
        char msg[256];
        assert_true(downgrade("VALIDATE", "3.4", msg, sizeof msg) < 0);
        assert_true(*msg);
        assert_int_equal(downgrade("ENABLE", "3.5", msg, sizeof msg), 0);
        s = wait_view(view, all_storage_35_enabled);
        assert_int_equal(etcd_downgrade_state(s, ETCD_MINOR_3_5, NULL, 0), ETCD_DOWNGRADE_READY);
        assert_int_equal(etcd_downgrade_state(s, ETCD_MINOR_3_6, NULL, 0), ETCD_DOWNGRADE_STALE);
        assert_int_equal(downgrade("CANCEL", NULL, msg, sizeof msg), 0);
        s = wait_view(view, none_enabled);
        assert_int_equal(etcd_downgrade_state(s, ETCD_MINOR_3_6, NULL, 0), ETCD_DOWNGRADE_NONE);
        /* A second cancel changes nothing and is answered as the first (etcd 3.6.16). */
        assert_int_equal(downgrade("CANCEL", NULL, msg, sizeof msg), 0);
}

static int setup(void **state)
{
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (etcd_test_cluster_init(&cluster, 3, NULL) < 0 || etcd_test_cluster_bootstrap(&cluster, 1) < 0)
                return -1;
        loop = loop_new();
        client = etcd_test_client(&cluster, loop, 0x1);
        return client ? 0 : -1;
}

static int teardown(void **state)
{
        client = etcd_client_free(client);
        assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        etcd_test_cluster_destroy(&cluster);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grow_and_shrink),
                cmocka_unit_test(test_split_brain),
                cmocka_unit_test(test_downgrade),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
