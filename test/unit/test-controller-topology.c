/* ControlPlaneTopologyController and the hold of the controllers that change etcd's pods or
 * membership (facts.h topology_holds_back()) as tables: on DualReplica and External, Degraded
 * with the topology named, and none of those controllers plans a change, each saying why; on
 * HighlyAvailable, HighlyAvailableArbiter, SingleReplica or none, nothing held back. On
 * HighlyAvailableArbiter the arbiter node runs a member as a master does (guard, member add,
 * installer, desired size); on any other topology an arbiter-labelled node is nobody's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "controller-fixture.h"
#include "controllers/controllers.h"

static void topology(Fixture *f, const char *t)
{
        fixture_addf(f, W_INFRASTRUCTURES,
                     "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                     "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"%s\"}}",
                     t);
}

/* Three Ready masters, each with a running etcd pod and a healthy voter: guards to make. */
static Fixture *three_masters(const char *t)
{
        Fixture *f = fixture_new();
        static const char *const ips[] = {"10.0.0.10", "10.0.0.11", "10.0.0.12"};
        for (unsigned i = 0; i < 3; i++) {
                char name[16];
                (void) snprintf(name, sizeof name, "master-%u", i);
                fixture_master(f, name, ips[i], true);
                fixture_etcd_pod(f, name, 1, true);
                fixture_member(f, 1 + i, name, ips[i], false, true, true);
        }
        if (t)
                topology(f, t);
        return f;
}

static size_t changes(Fixture *f)
{
        size_t n = 0;
        for (size_t i = 0; i < f->plan.n; i++)
                n += f->plan.intents[i].type != INTENT_CONDITION && f->plan.intents[i].type != INTENT_EVENT;
        return n;
}

static void test_condition(void **state)
{
        static const struct {
                const char *topology, *status, *reason, *says;
        } cases[] = {
                {NULL, "False", "AsExpected", NULL},
                {"HighlyAvailable", "False", "AsExpected", NULL},
                {"SingleReplica", "False", "AsExpected", NULL},
                {"DualReplica", "True", "UnsupportedControlPlaneTopology", "fencing agent"},
                {"HighlyAvailableArbiter", "False", "AsExpected", NULL},
                {"External", "True", "UnsupportedControlPlaneTopology", "hosted"},
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture *f = fixture_new();
                if (cases[i].topology)
                        topology(f, cases[i].topology);
                assert_int_equal(fixture_sync(f, &controller_topology), 0);
                fixture_expect_condition(f, "ControlPlaneTopologyDegraded", cases[i].status,
                                         cases[i].reason);
                if (cases[i].says) {
                        const char *msg = fixture_condition(f, "ControlPlaneTopologyDegraded")->cond_message;
                        assert_non_null(strstr(msg, cases[i].topology));
                        assert_non_null(strstr(msg, cases[i].says));
                }
                fixture_free(f);
        }
}

/* Each controller that changes etcd's pods or membership: nothing planned, and why. */
static void test_controllers_hold_back(void **state)
{
        const ControllerSpec *const held[] = {
                &controller_installer,      &controller_cluster_member,
                &controller_member_removal, &controller_bootstrap_teardown,
                &controller_machine_hooks,  &controller_defrag,
                &controller_guard,
        };
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(held); i++) {
                Fixture *f = three_masters("DualReplica");
                assert_int_equal(fixture_sync(f, held[i]), 0);
                if (changes(f) != 0 || !f->plan.waiting_reason ||
                    strcmp(f->plan.waiting_reason, "UnsupportedControlPlaneTopology") != 0)
                        fail_msg("%s: %zu changes, waiting %s", held[i]->name, changes(f),
                                 f->plan.waiting_reason ? f->plan.waiting_reason : "(none)");
                assert_non_null(strstr(f->plan.waiting, "DualReplica"));
                fixture_free(f);
        }
}

/* The same cluster on three masters: the guard controller makes its guards (so the hold above
 * is the topology's, not an empty fixture's). */
static void test_ha_acts(void **state)
{
        (void) state;
        Fixture *f = three_masters("HighlyAvailable");
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 3);
        assert_null(f->plan.waiting_reason);
        fixture_free(f);
}

/* Two masters with voters and an arbiter node. */
static Fixture *two_masters_and_arbiter(const char *t, bool arbiter_member)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_arbiter(f, "arbiter-0", "10.0.0.20", true);
        fixture_etcd_pod(f, "master-0", 1, true);
        fixture_etcd_pod(f, "master-1", 1, true);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, true);
        if (arbiter_member) {
                fixture_etcd_pod(f, "arbiter-0", 1, true);
                fixture_member(f, 3, "arbiter-0", "10.0.0.20", false, true, true);
        }
        topology(f, t);
        return f;
}

static void test_arbiter_runs_a_member(void **state)
{
        (void) state;
        /* A guard on each of the three. */
        Fixture *f = two_masters_and_arbiter("HighlyAvailableArbiter", true);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 3);
        assert_non_null(fixture_find(f, INTENT_CREATE, "pods", "etcd-guard-arbiter-0"));
        fixture_free(f);

        /* The arbiter's etcd pod runs and waits for its membership: added as a learner. */
        f = two_masters_and_arbiter("HighlyAvailableArbiter", false);
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-arbiter-0\","
                "\"namespace\":\"openshift-etcd\",\"labels\":{\"app\":\"etcd\",\"revision\":\"1\"}},"
                "\"spec\":{\"nodeName\":\"arbiter-0\"},\"status\":{\"phase\":\"Running\","
                "\"containerStatuses\":[{\"name\":\"etcd\",\"ready\":false,\"started\":true,"
                "\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"2026-11-30T00:00:00Z\"}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        const Intent *add = fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "arbiter-0");
        assert_non_null(add);
        assert_string_equal(add->peer_url, "https://10.0.0.20:2380");
        fixture_free(f);
}

/* On three-master HA a node labelled arbiter is no etcd node: no guard, no member for it. */
static void test_arbiter_label_alone_counts_for_nothing(void **state)
{
        (void) state;
        Fixture *f = two_masters_and_arbiter("HighlyAvailable", false);
        assert_int_equal(fixture_sync(f, &controller_guard), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 2);
        assert_null(fixture_find(f, INTENT_CREATE, "pods", "etcd-guard-arbiter-0"));
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_condition),
                cmocka_unit_test(test_controllers_hold_back),
                cmocka_unit_test(test_ha_acts),
                cmocka_unit_test(test_arbiter_runs_a_member),
                cmocka_unit_test(test_arbiter_label_alone_counts_for_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
