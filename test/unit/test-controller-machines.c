/* MachineDeletionHooksController, ClusterMemberRemovalController and the
 * ClusterMemberController's treatment of leaving masters, as tables: hooks
 * added, repaired and lifted only once the member is gone; one removal per
 * sync, a healthy member only after its replacement joined, an unhealthy
 * one only when the voters left are all healthy, never a healthy member
 * without Machine or Node; every gate says what it waits for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"
#include "controllers/facts.h"

/* A Machine of `role` (master or arbiter) in openshift-machine-api: Running, its node and
 * InternalIP, our hook or not. */
static void role_machine(Fixture *f, const char *role, const char *name, const char *node, const char *ip,
                         bool hook, bool deleting)
{
        fixture_addf(
                f, streq(role, "arbiter") ? W_ARBITER_MACHINES : W_MASTER_MACHINES,
                "{\"apiVersion\":\"machine.openshift.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
                "\"name\":\"%s\",\"namespace\":\"openshift-machine-api\",\"uid\":\"uid-%s\",\"labels\":{"
                "\"machine.openshift.io/cluster-api-machine-role\":\"%s\"}%s},\"spec\":{%s},"
                "\"status\":{\"phase\":\"%s\",\"nodeRef\":{\"kind\":\"Node\",\"name\":\"%s\"},"
                "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"%s\"},{\"type\":\"InternalDNS\","
                "\"address\":\"%s\"}]}}",
                name, name, role, deleting ? ",\"deletionTimestamp\":\"2026-11-26T10:00:00Z\"" : "",
                hook ? "\"lifecycleHooks\":{\"preDrain\":[{\"name\":\"EtcdQuorumOperator\",\"owner\":"
                       "\"clusteroperator/etcd\"}]}"
                     : "",
                deleting ? "Deleting" : "Running", node, ip, node);
}

static void machine(Fixture *f, const char *name, const char *node, const char *ip, bool hook, bool deleting)
{
        role_machine(f, "master", name, node, ip, hook, deleting);
}

/* etcd-endpoints with these member ID -> IP pairs (hex IDs as upstream). */
static void endpoints(Fixture *f, const char *data)
{
        fixture_addf(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\"},\"data\":{%s}}",
                data);
}

/* The bootstrap over (kube-system/bootstrap complete) and the install-config's `pools` (its
 * controlPlane and arbiter, as YAML escaped for JSON). */
static void bootstrap_done(Fixture *f, const char *pools)
{
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
        fixture_addf(
                f, W_KUBE_SYSTEM_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cluster-config-v1\","
                "\"namespace\":\"kube-system\"},\"data\":{\"install-config\":\"apiVersion: v1\\n%s\"}}",
                pools);
}

/* Three masters after the bootstrap: members 1..3 healthy voters (master-2 leads), revision 3 everywhere,
 * controlPlane.replicas 3, a Machine per master with our hook. */
static Fixture *cluster(void)
{
        Fixture *f = fixture_new();
        for (int i = 0; i < 3; i++) {
                char node[32], ip[32], m[32];
                (void) snprintf(node, sizeof node, "master-%d", i);
                (void) snprintf(ip, sizeof ip, "10.0.0.1%d", i);
                (void) snprintf(m, sizeof m, "cluster-master-%d", i);
                fixture_master(f, node, ip, true);
                fixture_member(f, (uint64_t) i + 1, node, ip, false, true, true);
                machine(f, m, node, ip, true, false);
        }
        fixture_leader(f, 3); /* master-2 leads (see test_leader_hands_over_first) */
        endpoints(f, "\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\",\"3\":\"10.0.0.12\"");
        bootstrap_done(f, "controlPlane:\\n  name: master\\n  replicas: 3\\n");
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":3,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-2\",\"currentRevision\":3}]");
        return f;
}

/* The Machines gone: no Machine API. */
static void no_machine_api(Fixture *f)
{
        for (int i = 0; i < 3; i++) {
                char m[32];
                (void) snprintf(m, sizeof m, "cluster-master-%d", i);
                fixture_delete(f, W_MASTER_MACHINES, "openshift-machine-api", m);
        }
}

/* A member removal sync that removes nothing and waits, saying `why`. */
static void expect_kept(Fixture *f, const char *why)
{
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_non_null(f->plan.waiting);
        assert_non_null(strstr(f->plan.waiting, why));
}

/* The replacement master-3 has joined as a voter (member 4, Machine cluster-master-3). */
static void replacement_joined(Fixture *f)
{
        fixture_master(f, "master-3", "10.0.0.13", true);
        if (!etcd_view_find(f->snap, 4))
                fixture_member(f, 4, "master-3", "10.0.0.13", false, true, true);
        machine(f, "cluster-master-3", "master-3", "10.0.0.13", true, false);
        endpoints(f, "\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\",\"3\":\"10.0.0.12\",\"4\":\"10.0.0.13\"");
}

/* The replacement joined and master-0's Machine is being deleted. */
static Fixture *master_0_leaving(void)
{
        Fixture *f = cluster();
        replacement_joined(f);
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", true, true);
        return f;
}

static const Intent *update_of(Fixture *f, const char *name)
{
        return fixture_find(f, INTENT_UPDATE, "machines", name);
}

static size_t hooks_named_ours(const cJSON *obj)
{
        size_t n = 0;
        cJSON *h;
        JSON_ARRAY_FOREACH (h, json_get_array(obj, "spec.lifecycleHooks.preDrain"))
                n += streq_ptr(json_get_string(h, "name"), "EtcdQuorumOperator");
        return n;
}

static void test_hooks_added_and_repaired(void **state)
{
        Fixture *f = cluster();
        /* A Machine without our hook but with somebody else's; one with our name and a wrong owner. */
        fixture_addf(
                f, W_MASTER_MACHINES,
                "{\"apiVersion\":\"machine.openshift.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
                "\"name\":\"cluster-master-1\",\"namespace\":\"openshift-machine-api\",\"labels\":{"
                "\"machine.openshift.io/"
                "cluster-api-machine-role\":\"master\"}},\"spec\":{\"lifecycleHooks\":"
                "{\"preDrain\":[{\"name\":\"Other\",\"owner\":\"someone\"}]}},\"status\":{\"phase\":"
                "\"Running\",\"nodeRef\":{\"name\":\"master-1\"},\"addresses\":[{\"type\":\"InternalIP\","
                "\"address\":\"10.0.0.11\"}]}}");
        fixture_addf(
                f, W_MASTER_MACHINES,
                "{\"apiVersion\":\"machine.openshift.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
                "\"name\":\"cluster-master-2\",\"namespace\":\"openshift-machine-api\",\"labels\":{"
                "\"machine.openshift.io/"
                "cluster-api-machine-role\":\"master\"}},\"spec\":{\"lifecycleHooks\":"
                "{\"preDrain\":[{\"name\":\"EtcdQuorumOperator\",\"owner\":\"me\"}]}},\"status\":{\"phase\":"
                "\"Running\",\"nodeRef\":{\"name\":\"master-2\"},\"addresses\":[{\"type\":\"InternalIP\","
                "\"address\":\"10.0.0.12\"}]}}");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 2);
        const Intent *u1 = update_of(f, "cluster-master-1"), *u2 = update_of(f, "cluster-master-2");
        assert_non_null(u1);
        assert_non_null(u2);
        cJSON *pre = json_get_array(u1->object, "spec.lifecycleHooks.preDrain");
        assert_int_equal(cJSON_GetArraySize(pre), 2);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(pre, 0), "name"), "Other");
        assert_string_equal(json_get_string(cJSON_GetArrayItem(pre, 1), "owner"), "clusteroperator/etcd");
        assert_int_equal(hooks_named_ours(u2->object), 1);
        assert_string_equal(
                json_get_string(
                        cJSON_GetArrayItem(json_get_array(u2->object, "spec.lifecycleHooks.preDrain"), 0),
                        "owner"),
                "clusteroperator/etcd");
        /* The update carries the cached resourceVersion (a conflict, not a lost write, if it moved). */
        assert_non_null(json_get_string(u1->object, "metadata.resourceVersion"));

        /* Written back: nothing more to do. */
        fixture_feed(f, W_MASTER_MACHINES);
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 0);
        fixture_free(f);
}

static void test_no_machine_api_no_hooks(void **state)
{
        Fixture *f = cluster();
        /* No Machine is Running (the Machine API is not functional): nothing is touched. */
        for (int i = 0; i < 3; i++) {
                char m[32], node[32], ip[32];
                (void) snprintf(m, sizeof m, "cluster-master-%d", i);
                (void) snprintf(node, sizeof node, "master-%d", i);
                (void) snprintf(ip, sizeof ip, "10.0.0.1%d", i);
                fixture_addf(
                        f, W_MASTER_MACHINES,
                        "{\"apiVersion\":\"machine.openshift.io/"
                        "v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
                        "\"name\":\"%s\",\"namespace\":\"openshift-machine-api\"},\"status\":{\"phase\":"
                        "\"Provisioning\",\"nodeRef\":{\"name\":\"%s\"},\"addresses\":[{\"type\":"
                        "\"InternalIP\",\"address\":\"%s\"}]}}",
                        m, node, ip);
        }
        fixture_member_set(f, 1, false, false);
        fixture_delete(f, W_MASTER_NODES, NULL, "master-0");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(f->plan.n, 0);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_hook_lifted_only_when_member_gone(void **state)
{
        Fixture *f = master_0_leaving();

        /* Its member is still listed: the hook stays, and says why. */
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 0);
        assert_string_equal(
                f->plan.waiting,
                "hook on Machine cluster-master-0 kept: member master-0 is still in the cluster");
        /* No member list: kept too. */
        fixture_etcd_error(f, -ECONNREFUSED);
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 0);

        /* The member is gone (as the removal controller leaves it): the hook goes, the others stay. */
        fixture_free(f);
        f = master_0_leaving();
        fixture_no_etcd(f);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.12", false, true, true);
        fixture_member(f, 4, "master-3", "10.0.0.13", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 1);
        const Intent *u = update_of(f, "cluster-master-0");
        assert_non_null(u);
        assert_int_equal(hooks_named_ours(u->object), 0);
        fixture_feed(f, W_MASTER_MACHINES);

        /* Drained (cordoned) with the hook lifted: its guard is deleted outright, once. */
        fixture_addf(
                f, W_MASTER_NODES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-0\",\"labels\":{"
                "\"node-role.kubernetes.io/master\":\"\"}},\"spec\":{\"unschedulable\":true},\"status\":{"
                "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.10\"}]}}");
        fixture_add(f, W_ETCD_PODS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-guard-master-0\","
                    "\"namespace\":\"openshift-etcd\",\"uid\":\"g0\",\"labels\":{\"app\":\"guard\"}},"
                    "\"spec\":{\"nodeName\":\"master-0\"}}");
        fixture_add(f, W_ETCD_PODS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-guard-master-1\","
                    "\"namespace\":\"openshift-etcd\",\"uid\":\"g1\",\"labels\":{\"app\":\"guard\"}},"
                    "\"spec\":{\"nodeName\":\"master-1\"}}");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 1);
        assert_non_null(fixture_find(f, INTENT_DELETE, "pods", "etcd-guard-master-0"));
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 0);
        fixture_free(f);
}

static void test_replacement_then_removal(void **state)
{
        Fixture *f = cluster();
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", true, true);

        /* Three voters, three wanted: the healthy leaving member waits for its replacement. */
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member master-0 (its Machine is being deleted) is healthy and kept until its "
                            "replacement joins (3 voters, 3 masters wanted)");

        /* The ClusterMemberController does not add it back, nor promote a learner of it. */
        replacement_joined(f);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);

        /* The replacement is a learner: not yet. */
        fixture_member_set(f, 4, true, true);
        endpoints(f, "\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\",\"3\":\"10.0.0.12\"");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member master-0 (its Machine is being deleted) not removed while a "
                            "member is being added");

        /* Promoted, but etcd-endpoints does not publish it yet. */
        fixture_member_set(f, 4, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member master-0 (its Machine is being deleted) not removed while "
                            "etcd-endpoints does not list member master-3 yet");

        /* Published, but master-3 rolls out a revision. */
        replacement_joined(f);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":3,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-2\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-3\",\"currentRevision\":0,\"targetRevision\":3}]");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_non_null(strstr(f->plan.waiting, "node master-3 runs etcd revision 0 of 3"));

        /* Everything settled, one other member unhealthy: no. */
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":3,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-2\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-3\",\"currentRevision\":3}]");
        fixture_member_set(f, 2, false, false);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);

        /* All healthy: master-0 goes, alone, with a ScaleDown event. */
        fixture_member_set(f, 2, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 1);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 1);
        assert_int_equal(fixture_count(f, INTENT_EVENT), 1);
        fixture_free(f);
}

static void test_leader_hands_over_first(void **state)
{
        Fixture *f = master_0_leaving();
        fixture_member_db(f, 2, 1000, 1000, 500);
        fixture_member_db(f, 3, 1000, 1000, 700); /* the most caught up */
        fixture_member_db(f, 4, 1000, 1000, 600);
        f->snap->states[1].status.raft_applied_index = 500;
        f->snap->states[2].status.raft_applied_index = 700;
        f->snap->states[3].status.raft_applied_index = 600;
        fixture_leader(f, 1);

        /* master-0 leads: leadership moves first (to master-2), nothing is removed. */
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        const Intent *mv = fixture_find(f, INTENT_ETCD_MOVE_LEADER, NULL, "master-2");
        assert_non_null(mv);
        assert_int_equal(mv->member_id, 3);
        assert_string_equal(mv->endpoint, "https://10.0.0.10:2379");

        /* Moved: now it goes. */
        fixture_move_leader(f, 1, 3, f->now, 0);
        fixture_leader(f, 3);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_MOVE_LEADER), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL));

        /* A handover that failed just now: removed while leading rather than never. */
        fixture_leader(f, 1);
        fixture_maint(f, ETCD_MAINT_MOVE_LEADER, 3, 0, f->now, -ETIMEDOUT); /* another leader's */
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_MOVE_LEADER, NULL, NULL));
        fixture_move_leader(f, 1, 3, f->now, -ETIMEDOUT);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_MOVE_LEADER), 0);
        assert_int_equal(fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL)->member_id, 1);
        fixture_free(f);
}

static void test_unhealthy_leaving_member_first(void **state)
{
        Fixture *f = cluster();
        /* Two Machines deleted at once; master-1's member is down. Three voters only: the
         * unhealthy one goes first (the two left are healthy), the healthy one waits. */
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", true, true);
        machine(f, "cluster-master-1", "master-1", "10.0.0.11", true, true);
        fixture_member_set(f, 2, false, false);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 2);

        /* Two unhealthy: the voters left would not all be healthy, nothing is removed. */
        fixture_member_set(f, 1, false, false);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_non_null(strstr(f->plan.waiting, "the voters left would not all be healthy"));
        fixture_free(f);
}

static void test_orphaned_member(void **state)
{
        Fixture *f = cluster();
        /* master-2's Node and Machine are gone (a dead master deleted by hand). Healthy: kept. */
        fixture_delete(f, W_MASTER_NODES, NULL, "master-2");
        fixture_delete(f, W_MASTER_MACHINES, "openshift-machine-api", "cluster-master-2");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member master-2 has neither a Machine nor a Node but is healthy: not removed");

        /* Unhealthy: removed (the two left are healthy). */
        fixture_member_set(f, 3, false, false);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 3);

        /* Not before the bootstrap is over. */
        fixture_member(f, 100, "etcd-bootstrap", "10.0.0.5", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_leaving_learner_removed(void **state)
{
        Fixture *f = cluster();
        /* A learner on a Machine being deleted goes at once (no vote), even while a
         * rollout runs, and is not promoted. */
        fixture_master(f, "master-3", "10.0.0.13", true);
        fixture_member(f, 4, "master-3", "10.0.0.13", true, true, true);
        machine(f, "cluster-master-3", "master-3", "10.0.0.13", true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_PROMOTE), 0);
        assert_string_equal(f->plan.waiting, "learner master-3 not promoted: its Machine is being deleted");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 4);
        fixture_free(f);
}

static void test_desired_replicas(void **state)
{
        Fixture *f = cluster();
        /* Unknown controlPlane.replicas: a healthy leaving member is never removed. */
        fixture_delete(f, W_KUBE_SYSTEM_CONFIGMAPS, "kube-system", "cluster-config-v1");
        replacement_joined(f);
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", true, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_non_null(strstr(f->plan.waiting, "0 masters wanted"));
        fixture_free(f);
}

/* master-1's etcd crash-looping `restarts` times, its last exit saying `msg`. */
/* master-1's etcd pod: `restarts` exits, the last saying `msg`; `state` is its container's
 * state now (CrashLoopBackOff, or running again). */
static void etcd_pod_state(Fixture *f, int restarts, const char *msg, const char *state)
{
        fixture_addf(f, W_ETCD_PODS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-master-1\","
                     "\"namespace\":\"openshift-etcd\"},\"spec\":{\"nodeName\":\"master-1\"},\"status\":{"
                     "\"containerStatuses\":[{\"name\":\"etcd\",\"restartCount\":%d,\"ready\":false,"
                     "\"state\":%s,\"lastState\":{\"terminated\":{"
                     "\"exitCode\":2,\"message\":\"%s\"}}}]}}",
                     restarts, state, msg);
}

static void crash_looping(Fixture *f, int restarts, const char *msg)
{
        etcd_pod_state(f, restarts, msg, "{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}");
}

static void test_damaged_member_remedy(void **state)
{
        Fixture *f = cluster();
        no_machine_api(f); /* not needed */
        fixture_member_set(f, 2, false, false);
        crash_looping(f, 4, "panic: failed to open database: invalid database\\n\\ngoroutine 1 [running]:");

        /* Not opted in: nothing. */
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);

        /* Opted in: removed, with a warning event that says why. */
        fixture_etcd_cr(f, "\"unsupportedConfigOverrides\":{\"replaceDamagedMembers\":true}",
                        "\"latestAvailableRevision\":3");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 2);
        const Intent *ev = fixture_find(f, INTENT_EVENT, NULL, NULL);
        assert_non_null(ev);
        assert_true(ev->warning);
        assert_non_null(strstr(ev->message, "failed to open database"));

        /* The member that rejoined empty runs in the same pod, which keeps the restarts and the
         * last exit of the member before it: running now, it is not damaged (a learner
         * catching up is unhealthy for a while). */
        etcd_pod_state(f, 4, "panic: failed to open database",
                       "{\"running\":{\"startedAt\":\"2026-11-26T20:11:20Z\"}}");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);

        /* Two restarts only, or an exit that says nothing of damaged data: not damaged. */
        crash_looping(f, 2, "panic: failed to open database");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        crash_looping(f, 9, "listen tcp 10.0.0.11:2380: bind: address already in use");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);

        /* The CORRUPT alarm says so too; but not while another voter is down. */
        fixture_alarm(f, 2, "CORRUPT");
        fixture_member_set(f, 3, false, false);
        expect_kept(f, "has damaged data (it raised the CORRUPT alarm) and is kept");
        fixture_member_set(f, 3, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL)->member_id, 2);

        /* A healthy member is never removed as damaged, whatever its past exits say. */
        fixture_member_set(f, 2, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

/* A master whose address changed (issue 13, point 4), with or without the Machine API: its
 * member is kept while it answers, removed once it does not and the voters left are all
 * healthy (also while the new address rolls out), and the master joins again on its new
 * address as a learner. */
static void test_moved_master_replaced(void **state)
{
        Fixture *f = cluster();
        no_machine_api(f);
        fixture_master(f, "master-1", "10.0.0.21", true);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":4,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3,\"targetRevision\":4},"
                        "{\"nodeName\":\"master-2\",\"currentRevision\":3}]");

        /* Still answering on the old address: kept, and the master is not added twice. */
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member master-1 (https://10.0.0.11:2380) is kept while it serves: its master "
                            "master-1 has address 10.0.0.21 now; it is replaced once it stops answering");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);

        /* Down, and another voter too: kept. */
        fixture_member_set(f, 2, false, false);
        fixture_member_set(f, 3, false, false);
        expect_kept(f, "not removed while the voters left would not all be healthy");

        /* Down, the others healthy: removed while the revision still rolls, with a warning. */
        fixture_member_set(f, 3, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 2);
        const Intent *ev = fixture_find(f, INTENT_EVENT, NULL, NULL);
        assert_non_null(ev);
        assert_true(ev->warning);
        assert_non_null(strstr(ev->message, "master master-1 has address 10.0.0.21 now"));

        /* Gone: master-1 joins on its new address as a learner, once its etcd waits for that. */
        fixture_etcd_pod(f, "master-1", 4, false);
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.12", false, true, true);
        endpoints(f, "\"1\":\"10.0.0.10\",\"3\":\"10.0.0.12\"");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        const Intent *add = fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, NULL);
        assert_non_null(add);
        assert_string_equal(add->peer_url, "https://10.0.0.21:2380");
        fixture_free(f);
}

/* The member of master-1 (10.0.0.11) serves on the master's new address 10.0.0.21 (its
 * client URL there, as after a quorum restore onto the new address): its peer URL is
 * updated in place, not the member replaced, and only while every member is healthy. */
static void test_moved_member_serving_updated(void **state)
{
        Fixture *f = cluster();
        no_machine_api(f);
        fixture_master(f, "master-1", "10.0.0.21", true);
        EtcdMemberState *m = (EtcdMemberState *) etcd_view_find(f->snap, 2);
        EtcdMember *member = (EtcdMember *) m->member;
        free(member->client_urls[0]);
        member->client_urls[0] = strdup("https://10.0.0.21:2379");
        m->client_url = member->client_urls[0];

        /* Another member down: kept as it is, and said why. */
        fixture_member_set(f, 3, false, false);
        expect_kept(f, "is kept while it serves");
        assert_int_equal(fixture_count(f, INTENT_ETCD_UPDATE_PEER), 0);

        fixture_member_set(f, 3, false, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        const Intent *up = fixture_find(f, INTENT_ETCD_UPDATE_PEER, NULL, NULL);
        assert_non_null(up);
        assert_int_equal(up->member_id, 2);
        assert_string_equal(up->peer_url, "https://10.0.0.21:2380");
        const Intent *ev = fixture_find(f, INTENT_EVENT, NULL, NULL);
        assert_non_null(ev);
        assert_false(ev->warning);
        assert_string_equal(ev->message,
                            "member master-1 serves on the new address 10.0.0.21 of master master-1: "
                            "its peer URL https://10.0.0.11:2380 becomes https://10.0.0.21:2380");
        fixture_free(f);
}

/* Not a move: a master without an InternalIP, or one whose old address another master has
 * now (the member is that master's, by address). */
static void expect_no_move(Fixture *f)
{
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_true(!f->plan.waiting || !strstr(f->plan.waiting, "address"));
}

static void test_not_moved(void **state)
{
        Fixture *f = cluster();
        fixture_member_set(f, 2, false, false);
        fixture_addf(f, W_MASTER_NODES,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"master-1\","
                     "\"labels\":{\"node-role.kubernetes.io/master\":\"\"}},\"status\":{}}");
        expect_no_move(f);
        fixture_master(f, "master-1", "10.0.0.12", true);
        fixture_master(f, "master-2", "10.0.0.11", true);
        expect_no_move(f);
        fixture_free(f);
}

/* Two masters and an arbiter (HighlyAvailableArbiter, controlPlane.replicas 2 and arbiter.replicas
 * 1): members 1..3 healthy voters, revision 3 everywhere, a Machine per node, the arbiter's of role
 * arbiter as the installer labels it; the Machines without our hook. */
static Fixture *arbiter_cluster(const char *topology)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_arbiter(f, "arbiter-0", "10.0.0.20", true);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 3, "arbiter-0", "10.0.0.20", false, true, true);
        fixture_leader(f, 1);
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", false, false);
        machine(f, "cluster-master-1", "master-1", "10.0.0.11", false, false);
        role_machine(f, "arbiter", "cluster-arbiter-0", "arbiter-0", "10.0.0.20", false, false);
        endpoints(f, "\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\",\"3\":\"10.0.0.20\"");
        bootstrap_done(f, "controlPlane:\\n  name: master\\n  replicas: 2\\narbiter:\\n  name: arbiter\\n"
                          "  replicas: 1\\n");
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":3,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3},"
                        "{\"nodeName\":\"arbiter-0\",\"currentRevision\":3}]");
        fixture_addf(f, W_INFRASTRUCTURES,
                     "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                     "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"%s\"}}",
                     topology);
        return f;
}

/* On HighlyAvailableArbiter the arbiter's Machine is an etcd node's: it gets the hook, and
 * replacing it goes as a master's does (issue 36): the new arbiter's member joins, the old
 * one's member goes only after, and the hook is lifted only once it is gone. On any other
 * topology a Machine of role arbiter is nobody's. */
static void test_arbiter_machine_replaced(void **state)
{
        (void) state;
        Fixture *f = arbiter_cluster("HighlyAvailableArbiter");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 3);
        const Intent *u = update_of(f, "cluster-arbiter-0");
        assert_non_null(u);
        assert_int_equal(hooks_named_ours(u->object), 1);
        fixture_free(f);

        f = arbiter_cluster("HighlyAvailable");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 2);
        assert_null(update_of(f, "cluster-arbiter-0"));
        fixture_free(f);

        /* The arbiter's Machine is deleted: its healthy member waits for a replacement. */
        f = arbiter_cluster("HighlyAvailableArbiter");
        machine(f, "cluster-master-0", "master-0", "10.0.0.10", true, false);
        machine(f, "cluster-master-1", "master-1", "10.0.0.11", true, false);
        role_machine(f, "arbiter", "cluster-arbiter-0", "arbiter-0", "10.0.0.20", true, true);
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        assert_string_equal(f->plan.waiting,
                            "member arbiter-0 (its Machine is being deleted) is healthy and kept until its "
                            "replacement joins (3 voters, 3 masters and arbiters wanted)");
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 0);
        assert_string_equal(
                f->plan.waiting,
                "hook on Machine cluster-arbiter-0 kept: member arbiter-0 is still in the cluster");

        /* The new arbiter's node runs its etcd pod: added as a learner; none for the leaving one. */
        fixture_arbiter(f, "arbiter-1", "10.0.0.21", true);
        role_machine(f, "arbiter", "cluster-arbiter-1", "arbiter-1", "10.0.0.21", true, false);
        fixture_add(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-arbiter-1\","
                "\"namespace\":\"openshift-etcd\",\"labels\":{\"app\":\"etcd\",\"revision\":\"3\"}},"
                "\"spec\":{\"nodeName\":\"arbiter-1\"},\"status\":{\"phase\":\"Running\","
                "\"containerStatuses\":[{\"name\":\"etcd\",\"ready\":false,\"state\":{\"running\":{}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        const Intent *add = fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "arbiter-1");
        assert_non_null(add);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 1);

        /* It votes and etcd-endpoints publishes it: the old arbiter's member goes, alone. */
        fixture_member(f, 4, "arbiter-1", "10.0.0.21", false, true, true);
        endpoints(f, "\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\",\"3\":\"10.0.0.20\",\"4\":\"10.0.0.21\"");
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":3,\"nodeStatuses\":["
                        "{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":3},"
                        "{\"nodeName\":\"arbiter-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"arbiter-1\",\"currentRevision\":3}]");
        assert_int_equal(fixture_sync(f, &controller_member_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 1);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, NULL);
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 3);

        /* Its member gone: the hook is lifted from the arbiter's Machine alone. */
        fixture_no_etcd(f);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 4, "arbiter-1", "10.0.0.21", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_machine_hooks), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE), 1);
        u = update_of(f, "cluster-arbiter-0");
        assert_non_null(u);
        assert_int_equal(hooks_named_ours(u->object), 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hooks_added_and_repaired),
                cmocka_unit_test(test_no_machine_api_no_hooks),
                cmocka_unit_test(test_hook_lifted_only_when_member_gone),
                cmocka_unit_test(test_replacement_then_removal),
                cmocka_unit_test(test_leader_hands_over_first),
                cmocka_unit_test(test_unhealthy_leaving_member_first),
                cmocka_unit_test(test_orphaned_member),
                cmocka_unit_test(test_leaving_learner_removed),
                cmocka_unit_test(test_desired_replicas),
                cmocka_unit_test(test_damaged_member_remedy),
                cmocka_unit_test(test_moved_master_replaced),
                cmocka_unit_test(test_moved_member_serving_updated),
                cmocka_unit_test(test_not_moved),
                cmocka_unit_test(test_arbiter_machine_replaced),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
