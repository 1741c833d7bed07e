/* The first sample of docs/adding-a-controller.md, compiled as the doc
 * writes it (cmake/doc-sample.cmake copies it out at build time) and run as
 * a table on the controller fixture, so the walk-through a newcomer starts
 * from cannot stop compiling, read an undeclared watch, or say something
 * the runtime does not do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller-fixture.h"

extern const ControllerSpec controller_example;

static Fixture *three_masters(void)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_master(f, "master-1", "10.0.0.2", true);
        fixture_master(f, "master-2", "10.0.0.3", true);
        for (unsigned i = 0; i < 3; i++) {
                char node[16], ip[16];
                (void) snprintf(node, sizeof node, "master-%u", i);
                (void) snprintf(ip, sizeof ip, "10.0.0.%u", i + 1);
                fixture_member(f, i + 1, node, ip, false, true, true);
                fixture_etcd_pod(f, node, 1, true);
        }
        return f;
}

static void test_no_view(void **state)
{
        Fixture *f = fixture_new();
        fixture_no_etcd(f);
        assert_int_equal(fixture_sync(f, &controller_example), 0);
        assert_null(fixture_condition(f, "ExampleMembersReady"));
        assert_string_equal(f->plan.waiting_reason, "ExampleWaiting");
        assert_true(f->plan.requeue_after > 0);
        fixture_free(f);
}

static void test_all_ready(void **state)
{
        Fixture *f = three_masters();
        assert_int_equal(fixture_sync(f, &controller_example), 0);
        fixture_expect_condition(f, "ExampleMembersReady", "True", "AsExpected");
        assert_string_equal(fixture_condition(f, "ExampleMembersReady")->cond_message,
                            "3 masters run healthy members");
        assert_null(f->plan.waiting);
        assert_int_equal(f->plan.n, 1); /* it only reports */
        fixture_free(f);
}

static void test_member_unhealthy(void **state)
{
        Fixture *f = three_masters();
        fixture_member_set(f, 2, false, false);
        assert_int_equal(fixture_sync(f, &controller_example), 0);
        fixture_expect_condition(f, "ExampleMembersReady", "False", "MemberNotHealthy");
        assert_string_equal(fixture_condition(f, "ExampleMembersReady")->cond_message,
                            "master master-1 has an etcd member that is not healthy");
        fixture_free(f);
}

static void test_no_member(void **state)
{
        Fixture *f = three_masters();
        fixture_master(f, "master-3", "10.0.0.4", true);
        assert_int_equal(fixture_sync(f, &controller_example), 0);
        fixture_expect_condition(f, "ExampleMembersReady", "False", "MemberNotHealthy");
        assert_string_equal(fixture_condition(f, "ExampleMembersReady")->cond_message,
                            "master master-3 has no etcd member");
        fixture_free(f);
}

static void test_pod_not_ready(void **state)
{
        Fixture *f = three_masters();
        fixture_etcd_pod(f, "master-2", 1, false);
        assert_int_equal(fixture_sync(f, &controller_example), 0);
        fixture_expect_condition(f, "ExampleMembersReady", "False", "PodNotReady");
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_view),          cmocka_unit_test(test_all_ready),
                cmocka_unit_test(test_member_unhealthy), cmocka_unit_test(test_no_member),
                cmocka_unit_test(test_pod_not_ready),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
