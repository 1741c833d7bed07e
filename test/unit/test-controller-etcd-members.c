/* EtcdMembersController as a table: etcd views in, conditions out. And the
 * MemberViewController's per-member view (openshift-etcd-operator/etcd-members). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static void test_three_healthy(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "True", "EtcdQuorate");
        assert_string_equal(fixture_condition(f, "EtcdMembersAvailable")->cond_message,
                            "3 members are available");
        fixture_expect_condition(f, "EtcdMembersDegraded", "False", "AsExpected");
        fixture_expect_condition(f, "EtcdMembersProgressing", "False", "AsExpected");
        /* It only reports. */
        assert_int_equal(f->plan.n, 3);
        fixture_free(f);
}

static void test_one_unhealthy(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, false);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "True", "EtcdQuorate");
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "UnhealthyMembers");
        assert_string_equal(
                fixture_condition(f, "EtcdMembersDegraded")->cond_message,
                "2 of 3 members are available, master-1 is unhealthy (master-1: Connection refused)");

        /* A member whose etcd crash-loops on a damaged database: which, and why, from its pod. */
        fixture_addf(f, W_ETCD_PODS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                     "\"namespace\":\"openshift-etcd\"},\"spec\":{\"nodeName\":\"master-1\"},\"status\":{"
                     "\"containerStatuses\":[{\"name\":\"etcd\",\"restartCount\":4,\"ready\":false,"
                     "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},\"lastState\":{"
                     "\"terminated\":{\"exitCode\":2,\"reason\":\"Error\",\"message\":\"starting\\n"
                     "panic: assertion failed: Page expected to be: 7, but got: 0\\n\\n\"}}}]}}");
        fixture_alarm(f, 2, "CORRUPT");
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        assert_string_equal(
                fixture_condition(f, "EtcdMembersDegraded")->cond_message,
                "2 of 3 members are available, master-1 is unhealthy (master-1: Connection refused; "
                "raised the CORRUPT alarm; its etcd container restarted 4 times, last exit code 2: "
                "panic: assertion failed: Page expected to be: 7, but got: 0)");

        /* etcd's real output on a database whose meta pages are gone: the panic line, then
         * goroutine traces. The panic is what the condition names, not the last frame. */
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                "\"namespace\":\"openshift-etcd\"},\"spec\":{\"nodeName\":\"master-1\"},\"status\":{"
                "\"containerStatuses\":[{\"name\":\"etcd\",\"restartCount\":5,\"ready\":false,"
                "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},\"lastState\":{"
                "\"terminated\":{\"exitCode\":2,\"reason\":\"Error\",\"message\":\"... recovered store\\n"
                "panic: failed to open database: invalid database\\n\\ngoroutine 148 [running]:\\n"
                "go.etcd.io/etcd/etcdserver.openBackend.func1()\\n"
                "\\tgo.etcd.io/etcd/etcdserver/backend.go:74 +0x58\\n\"}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        assert_non_null(strstr(fixture_condition(f, "EtcdMembersDegraded")->cond_message,
                               "restarted 5 times, last exit code 2: panic: failed to open database: "
                               "invalid database)"));
        fixture_free(f);
}

static void test_no_quorum_and_learner(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, false);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, false);
        fixture_member(f, 4, NULL, "10.0.0.4", true, false, false);
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "False", "NoQuorum");
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "UnhealthyMembers");
        assert_non_null(
                strstr(fixture_condition(f, "EtcdMembersDegraded")->cond_message, "0000000000000004"));
        fixture_expect_condition(f, "EtcdMembersProgressing", "True", "MembersNotStarted");
        fixture_free(f);
}

static void test_unknown_and_unreachable(void **state)
{
        Fixture *f = fixture_new();
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "Unknown", "EtcdMembersUnknown");
        fixture_etcd_error(f, -ECONNREFUSED);
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "EtcdUnreachable");
        fixture_free(f);
}

/* The leader killed: the two others answer /health with false (no leader) for a moment.
 * While a quorum of voters is up and the last healthy quorum is recent, the members are
 * available (an election is no outage); past the grace, or with too few up, they are not. */
static void test_election_is_not_unavailability(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, false);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, false);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, false);
        f->snap->states[0].has_status = false; /* the killed leader: refused */
        f->snap->states[1].error = -EAGAIN;    /* /health: false, "RAFT NO LEADER" */
        f->snap->states[2].error = -ETIMEDOUT; /* /health outlasted the round... */
        f->snap->states[2].has_status = true;  /* ...but its status answered */
        f->snap->taken_at = 100 * USEC_PER_SEC;
        f->snap->quorate_at = 98 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "True", "EtcdQuorate");
        assert_string_equal(fixture_condition(f, "EtcdMembersAvailable")->cond_message,
                            "2 of 3 voting members are up; they are electing a leader");
        /* Looked at again when the grace ends, even if etcd's answers do not change. */
        assert_true(f->plan.requeue_after > 0 && f->plan.requeue_after <= 8 * USEC_PER_SEC);
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "UnhealthyMembers");

        /* Still no leader 12 s after the last healthy quorum: that is unavailability. */
        f->snap->taken_at = 110 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "False", "NoQuorum");

        /* Within the grace but only one voter answers: the quorum is gone, not electing. */
        f->snap->taken_at = 100 * USEC_PER_SEC;
        f->snap->states[2].error = -ECONNREFUSED;
        f->snap->states[2].has_status = false;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "False", "NoQuorum");

        /* The member list itself failed on every member mid-election: still available
         * within the grace, then not. */
        f->snap->states[2].error = -EAGAIN;
        f->snap->states[2].has_status = true;
        f->snap->error = -ETIMEDOUT;
        f->snap->taken_at = 101 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "True", "EtcdQuorate");
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "EtcdUnreachable");
        f->snap->taken_at = 109 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "False", "EtcdUnreachable");
        f->snap->error = 0;
        f->snap->taken_at = 100 * USEC_PER_SEC;

        /* Never a healthy quorum seen (quorate_at 0): no grace. */
        f->snap->quorate_at = 0;
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersAvailable", "False", "NoQuorum");
        fixture_free(f);
}

static const char *view_data(Fixture *f, const char *key)
{
        const Intent *i = fixture_find(f, INTENT_APPLY, "configmaps", "etcd-members");
        assert_non_null(i);
        assert_string_equal(json_get_string(i->object, "metadata.namespace"), "openshift-etcd-operator");
        /* Not json_get_string: "members.json" is a key, not a path. */
        return cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(json_get_object(i->object, "data"), key));
}

/* The per-member view (issue 37): each member's row and JSON entry with what the view and
 * the maintenance log say; written again only when something it shows changed, at most
 * every 30 s; left as it was without a member list. */
static void test_member_view(void **state)
{
        (void) state;
        Fixture *f = fixture_new();
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", true, true, false);
        fixture_leader(f, 2);
        fixture_member_db(f, 1, 200ULL << 20, 100ULL << 20, 50);
        fixture_member_db(f, 2, 210ULL << 20, 190ULL << 20, 50);
        fixture_member_version(f, 1, "3.5.16");
        fixture_maint(f, ETCD_MAINT_DEFRAG, 1, 0, 1795305000ULL * USEC_PER_SEC, 0);
        fixture_add(
                f, W_ETCD_BACKUPS,
                "{\"apiVersion\":\"operator.openshift.io/v1alpha1\",\"kind\":\"EtcdBackup\","
                "\"metadata\":{\"name\":\"b1\"},\"status\":{\"conditions\":[{\"type\":\"BackupCompleted\","
                "\"status\":\"True\",\"lastTransitionTime\":\"2026-11-21T23:00:00Z\"}]}}");
        assert_int_equal(fixture_sync(f, &controller_member_view), 0);
        assert_int_equal(f->plan.n, 1);
        const char *table = view_data(f, "members");
        printf("%s", table);
        assert_non_null(strstr(table, "NAME "));
        assert_non_null(strstr(table, "LAST DEFRAG"));
        assert_non_null(strstr(
                table,
                "master-0                 0000000000000001 -      -       yes     3.5.16     200 MiB   "
                "100 MiB   50%  2026-11-21T23:50:00Z\n"));
        assert_non_null(strstr(table, "master-1                 0000000000000002 yes    -       yes"));
        assert_non_null(strstr(table, "master-2                 0000000000000003 -      yes     no "));
        assert_non_null(strstr(table, "last backup completed: 2026-11-21T23:00:00Z\n"));
        assert_string_equal(view_data(f, "lastBackup"), "2026-11-21T23:00:00Z");
        assert_string_equal(view_data(f, "updated"), "2026-11-22T00:00:00Z");
        _cleanup_(cJSON_Deletep) cJSON *list = NULL;
        const char *json = view_data(f, "members.json");
        assert_int_equal(json_parse(json, strlen(json), &list), 0);
        assert_int_equal(cJSON_GetArraySize(list), 3);
        cJSON *m1 = cJSON_GetArrayItem(list, 1);
        assert_string_equal(json_get_string(m1, "name"), "master-1");
        assert_true(json_get_bool(m1, "leader", false));
        assert_int_equal(cJSON_GetObjectItem(m1, "dbSizeInUseMiB")->valuedouble, 190);
        assert_int_equal(cJSON_GetObjectItem(m1, "fragmentedPercent")->valuedouble, 10);
        assert_true(json_get_bool(cJSON_GetArrayItem(list, 2), "learner", false));
        assert_string_equal(json_get_string(cJSON_GetArrayItem(list, 0), "lastDefragmentation"),
                            "2026-11-21T23:50:00Z");

        /* Written: nothing to do. */
        fixture_feed(f, W_OPERATOR_CONFIGMAPS);
        assert_int_equal(fixture_sync(f, &controller_member_view), 0);
        assert_int_equal(f->plan.n, 0);

        /* The database grew 10 s later: not before 30 s after the last write. */
        fixture_member_db(f, 1, 260ULL << 20, 100ULL << 20, 60);
        f->now += 10 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_member_view), 0);
        assert_int_equal(f->plan.n, 0);
        assert_int_equal(f->plan.requeue_after, 20 * USEC_PER_SEC);
        f->now += 20 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_member_view), 0);
        assert_non_null(strstr(view_data(f, "members"), "260 MiB"));

        /* No member list (a split brain, or etcd unreachable): what it showed stays. */
        f->snap->split_brain = true;
        assert_int_equal(fixture_sync(f, &controller_member_view), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_three_healthy),
                cmocka_unit_test(test_one_unhealthy),
                cmocka_unit_test(test_no_quorum_and_learner),
                cmocka_unit_test(test_unknown_and_unreachable),
                cmocka_unit_test(test_election_is_not_unavailability),
                cmocka_unit_test(test_member_view),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
