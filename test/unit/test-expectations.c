/* Expectations (operator/runtime/expectations.h) on fixture informers: a
 * write is awaited until the cache shows it, a delete until the object is
 * gone, going, or made again by another, and never past the deadline or for
 * objects no declared watch covers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller-fixture.h"
#include "runtime/expectations.h"

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CONFIGMAPS), OP_WATCH(W_MASTER_NODES)};

static void cm(Fixture *f, const char *name, const char *rv)
{
        fixture_addf(f, W_ETCD_CONFIGMAPS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                     "\"namespace\":\"openshift-etcd\",\"resourceVersion\":\"%s\"}}",
                     name, rv);
}

static void test_write_awaited_until_seen(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        const char *what = NULL;
        cm(f, "etcd-pod", "10");
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD,
                                          "etcd-pod", 20, NULL, 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, &what));
        assert_string_equal(what, "configmaps openshift-etcd/etcd-pod");
        cm(f, "etcd-pod", "20");
        assert_true(expectations_met(e, f->factory, 0, &what));
        assert_null(what);
        assert_int_equal(expectations_pending(e), 0);
        fixture_free(f);
}

static void test_create_and_delete(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        cm(f, "other", "5"); /* the informer exists, as every declared one does in the runtime */
        /* A create: the object is not cached at all yet. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD, "new",
                                          30, NULL, 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, NULL));
        cm(f, "new", "31");
        assert_true(expectations_met(e, f->factory, 0, NULL));
        /* A delete (rv 0): awaited while the object is still cached. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD, "new",
                                          0, NULL, 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, NULL));
        fixture_delete(f, W_ETCD_CONFIGMAPS, NS_ETCD, "new");
        assert_true(expectations_met(e, f->factory, 0, NULL));
        fixture_free(f);
}

static void test_deadline_and_coverage(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        cm(f, "etcd-pod", "10");
        /* Not covered: a namespace we do not watch, a resource watched only through a selector. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, "default", "x",
                                          5, NULL, 1000),
                         0);
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_NODES, NULL, "master-0", 5,
                                          NULL, 1000),
                         0);
        assert_int_equal(expectations_pending(e), 0);
        /* Never seen, but the deadline passes: the sync runs anyway. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD,
                                          "etcd-pod", 99, NULL, 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 999, NULL));
        assert_true(expectations_met(e, f->factory, 1000, NULL));
        /* A second write of the same object replaces the first expectation. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD,
                                          "etcd-pod", 99, NULL, 1000),
                         1);
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD,
                                          "etcd-pod", 100, NULL, 1000),
                         1);
        assert_int_equal(expectations_pending(e), 1);
        fixture_free(f);
}

/* A delete with the uid it was sent with: seen once the object is going (a pod's grace period,
 * a finalizer) or made again by another writer, not while the same object stays as it was. */
static void test_delete_going_or_made_again(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        static const char tmpl[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                                   "\"name\":\"x\",\"namespace\":\"openshift-etcd\",\"uid\":\"%s\","
                                   "\"resourceVersion\":\"%s\"%s}}";
        fixture_addf(f, W_ETCD_CONFIGMAPS, tmpl, "uid-1", "10", "");
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD, "x", 0,
                                          "uid-1", 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, NULL));
        fixture_addf(f, W_ETCD_CONFIGMAPS, tmpl, "uid-1", "11", ",\"finalizers\":[\"a/b\"]");
        assert_false(expectations_met(e, f->factory, 0, NULL)); /* changed, but not going */
        fixture_addf(f, W_ETCD_CONFIGMAPS, tmpl, "uid-1", "12",
                     ",\"deletionTimestamp\":\"2026-11-29T20:00:00Z\",\"finalizers\":[\"a/b\"]");
        assert_true(expectations_met(e, f->factory, 0, NULL));

        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD, "x", 0,
                                          "uid-1", 1000),
                         1);
        fixture_addf(f, W_ETCD_CONFIGMAPS, tmpl, "uid-2", "13", "");
        assert_true(expectations_met(e, f->factory, 0, NULL));
        /* Without a uid, another object of that name is the one deleted, not yet seen gone. */
        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD, "x", 0,
                                          NULL, 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, NULL));
        fixture_free(f);
}

/* A write that lifted the last finalizer of an object being deleted: its deletionTimestamp,
 * already cached, does not count; only its absence does (or another uid). */
static void test_gone_after_the_last_finalizer(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        fixture_addf(f, W_ETCD_CONFIGMAPS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\","
                     "\"namespace\":\"openshift-etcd\",\"uid\":\"u1\",\"resourceVersion\":\"7\","
                     "\"deletionTimestamp\":\"2026-11-29T22:00:00Z\",\"finalizers\":[\"a/b\"]}}");
        assert_int_equal(expectations_add_gone(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS, NS_ETCD,
                                               "b", "u1", 1000),
                         1);
        assert_false(expectations_met(e, f->factory, 0, NULL));
        fixture_delete(f, W_ETCD_CONFIGMAPS, NS_ETCD, "b");
        assert_true(expectations_met(e, f->factory, 0, NULL));
        fixture_free(f);
}

/* One plan's writes: the array grows with them up to 64 (the oldest forgotten past
 * that), is given back once all are seen, and grows again for the next plan. */
static void test_many_writes(void **state)
{
        Fixture *f = fixture_new();
        _cleanup_(expectations_freep) Expectations *e = expectations_new();
        const char *what = NULL;
        char name[32];

        cm(f, "other", "5"); /* the informer exists */
        for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 70; i++) {
                        (void) snprintf(name, sizeof name, "cm-%d", i);
                        assert_int_equal(expectations_add(e, watches, ELEMENTSOF(watches), &KUBE_CONFIGMAPS,
                                                          NS_ETCD, name, 10 + round, NULL, 1000),
                                         1);
                        assert_int_equal(expectations_pending(e), MIN(i + 1, 64));
                }
                assert_false(expectations_met(e, f->factory, 0, &what));
                assert_string_equal(what, "configmaps openshift-etcd/cm-6"); /* cm-0..cm-5 forgotten */
                for (int i = 0; i < 70; i++) {
                        (void) snprintf(name, sizeof name, "cm-%d", i);
                        char rv[16];
                        (void) snprintf(rv, sizeof rv, "%d", 10 + round);
                        cm(f, name, rv);
                }
                assert_true(expectations_met(e, f->factory, 0, &what));
                assert_null(what);
                assert_int_equal(expectations_pending(e), 0);
        }
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_write_awaited_until_seen),
                cmocka_unit_test(test_delete_going_or_made_again),
                cmocka_unit_test(test_gone_after_the_last_finalizer),
                cmocka_unit_test(test_create_and_delete),
                cmocka_unit_test(test_deadline_and_coverage),
                cmocka_unit_test(test_many_writes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
