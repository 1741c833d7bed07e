/* ClusterMemberController and BootstrapTeardownController as tables: every
 * gate of a membership change, with the etcd view and caches as fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller-fixture.h"
#include "controllers/controllers.h"

/* The mirror pod of a master's etcd static pod at `revision`, with the etcd container's state. */
static void etcd_pod_at(Fixture *f, const char *node, unsigned revision, bool running, bool ready)
{
        char json[1024];
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-%s\",\"namespace\":"
                "\"openshift-etcd\",\"labels\":{\"app\":\"etcd\",\"revision\":\"%u\"}},\"spec\":{"
                "\"nodeName\":"
                "\"%s\"},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"etcd\","
                "\"ready\":%s,\"started\":%s,\"restartCount\":0,\"state\":{%s}}]}}",
                node, revision, node, ready ? "true" : "false", running ? "true" : "false",
                running ? "\"running\":{\"startedAt\":\"2026-11-22T00:00:00Z\"}"
                        : "\"waiting\":{\"reason\":\"PodInitializing\"}");
        fixture_add(f, W_ETCD_PODS, json);
}

static void etcd_pod(Fixture *f, const char *node, bool running, bool ready)
{
        etcd_pod_at(f, node, 2, running, ready);
}

/* etcds/cluster with `node` being rolled out from revision `current` to `target`. */
static void rolling_out(Fixture *f, const char *node, int current, int target)
{
        char statuses[256];
        (void) snprintf(
                statuses, sizeof statuses,
                "\"nodeStatuses\":[{\"nodeName\":\"%s\",\"currentRevision\":%d,\"targetRevision\":%d}]",
                node, current, target);
        fixture_etcd_cr(f, NULL, statuses);
}

static Fixture *bootstrap_phase(void)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_master(f, "master-2", "10.0.0.12", true);
        fixture_member(f, 100, "etcd-bootstrap", "10.0.0.5", false, true, true);
        fixture_add(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\",\"annotations\":{\"alpha.installer.openshift.io/"
                "etcd-bootstrap\":\"10.0.0.5\"}},\"data\":{}}");
        return f;
}

static void test_add_learner_gates(void **state)
{
        Fixture *f = bootstrap_phase();

        /* The masters' etcd containers are not running yet: nothing to add, and it says why. */
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_string_equal(f->plan.waiting, "master-0 not added: its etcd pod does not exist yet");
        etcd_pod(f, "master-0", false, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_string_equal(f->plan.waiting, "master-0 not added: its etcd container is not running");
        assert_string_equal(f->plan.waiting_reason, "MemberAddWaiting");

        /* Running but not ready (waiting in discover): added as a learner, by peer URL. */
        etcd_pod(f, "master-0", true, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        const Intent *add = fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "master-0");
        assert_non_null(add);
        assert_string_equal(add->peer_url, "https://10.0.0.10:2380");
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 1);

        /* Its node is being rolled out (target revision 3, its pod at 2): the installer replaces
         * the pod first, or the member would be restarted mid-join. Once the pod runs revision
         * 3, it is added. */
        rolling_out(f, "master-0", 2, 3);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_string_equal(f->plan.waiting,
                            "master-0 not added while its etcd pod (revision 2) is replaced by revision 3");
        etcd_pod_at(f, "master-0", 3, true, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 1);

        /* A ready pod means etcd already runs as a member somewhere: no add. */
        etcd_pod(f, "master-0", true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        fixture_free(f);
}

/* After a quorum restore on a master that moved, its member serves the certificate of
 * its old address: nobody joins before its new revision brings one for the new address. */
static void test_no_add_while_a_voter_has_an_old_certificate(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_member(f, 1, "master-1", "10.0.0.11", false, true, true);
        fixture_etcd_cr(f, NULL, "\"nodeStatuses\":[{\"nodeName\":\"master-1\",\"currentRevision\":4}]");
        etcd_pod(f, "master-0", true, false);
        const char *old_ip[] = {"127.0.0.1", "10.0.9.11", NULL},
                   *new_ip[] = {"127.0.0.1", "10.0.0.11", NULL};
        fixture_all_certs(f, "master-1", "etcd-all-certs-4", old_ip);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_string_equal(f->plan.waiting,
                            "no member is added while the member of master-1 serves a certificate for the "
                            "address it had (its new revision, with one for 10.0.0.11, comes first)");
        /* Its new revision runs: master-0 joins. */
        fixture_all_certs(f, "master-1", "etcd-all-certs-5", new_ip);
        fixture_etcd_cr(f, NULL, "\"nodeStatuses\":[{\"nodeName\":\"master-1\",\"currentRevision\":5}]");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "master-0"));
        fixture_free(f);
}

static void test_no_add_while_unhealthy(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-2", "10.0.0.12", true);
        etcd_pod(f, "master-2", true, false);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_true(f->plan.requeue_after > 0);
        assert_non_null(f->plan.waiting);
        assert_non_null(strstr(f->plan.waiting, "no member is added while member master-1 is unhealthy"));
        fixture_free(f);
}

static void test_one_learner_at_a_time(void **state)
{
        Fixture *f = bootstrap_phase();
        etcd_pod(f, "master-0", true, false);
        etcd_pod(f, "master-1", true, false);
        /* master-0 was added and has not started: no second learner, no promote. */
        fixture_member(f, 10, NULL, "10.0.0.10", true, false, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_PROMOTE), 0);
        assert_string_equal(f->plan.waiting,
                            "learner https://10.0.0.10:2380 not promoted: it has not started yet");
        fixture_free(f);
}

static void test_promote_existing_learner(void **state)
{
        /* After a restart mid-way: the learner exists and runs; promote it, never add again. */
        Fixture *f = bootstrap_phase();
        etcd_pod(f, "master-0", true, false);
        etcd_pod(f, "master-1", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", true, true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        const Intent *pr = fixture_find(f, INTENT_ETCD_PROMOTE, NULL, "master-0");
        assert_non_null(pr);
        assert_int_equal(pr->member_id, 10);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        fixture_free(f);
}

static void test_no_promotion_while_a_voter_is_unhealthy(void **state)
{
        /* The learner is in sync, but a voter stopped answering (frozen, or down): a promotion
         * changes the quorum, so it waits, naming the voter; it goes once the voter is back. */
        Fixture *f = bootstrap_phase();
        etcd_pod(f, "master-0", true, true);
        etcd_pod(f, "master-1", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, false);
        fixture_member(f, 11, "master-1", "10.0.0.11", true, true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_PROMOTE), 0);
        assert_non_null(f->plan.waiting);
        assert_true(startswith(f->plan.waiting,
                               "learner master-1 not promoted while member master-0 is unhealthy"));
        fixture_free(f);
        f = bootstrap_phase();
        etcd_pod(f, "master-0", true, true);
        etcd_pod(f, "master-1", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", true, true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_PROMOTE, NULL, "master-1"));
        fixture_free(f);
}

static void test_no_promotion_while_its_node_rolls_out(void **state)
{
        /* Early in the bootstrap (the bootstrap member the only voter), the installer is taking
         * master-0 to revision 3 (target recorded, not reached): its etcd restarts any moment,
         * and promoted it would be one of two voters down. The rollout goes first. */
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_member(f, 100, "etcd-bootstrap", "10.0.0.5", false, true, true);
        etcd_pod(f, "master-0", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", true, true, true);
        rolling_out(f, "master-0", 2, 3);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_PROMOTE), 0);
        assert_string_equal(f->plan.waiting,
                            "learner master-0 not promoted while node master-0 rolls out revision 3 "
                            "(it restarts its etcd)");
        /* Once its node runs the target (cleared or not): promoted. */
        fixture_etcd_cr(f, NULL,
                        "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":3,"
                        "\"targetRevision\":3}]");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_PROMOTE, NULL, "master-0"));
        fixture_free(f);

        /* With two healthy voters, the next learner is promoted though its node rolls out: its
         * restart then leaves two of three voters, a quorum. */
        f = bootstrap_phase();
        etcd_pod(f, "master-0", true, true);
        etcd_pod(f, "master-1", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", true, true, true);
        fixture_etcd_cr(f, NULL,
                        "\"nodeStatuses\":[{\"nodeName\":\"master-0\",\"currentRevision\":3},"
                        "{\"nodeName\":\"master-1\",\"currentRevision\":2,\"targetRevision\":3}]");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_PROMOTE, NULL, "master-1"));
        fixture_free(f);
}

static void test_next_master_after_promotion(void **state)
{
        Fixture *f = bootstrap_phase();
        etcd_pod(f, "master-0", true, true);
        etcd_pod(f, "master-1", true, false);
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "master-1"));
        /* A master without an InternalIP is skipped. */
        fixture_add(
                f, W_MASTER_NODES,
                "{\"metadata\":{\"name\":\"master-1\",\"labels\":{\"node-role.kubernetes.io/master\":\"\"}},"
                "\"status\":{}}");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_string_equal(f->plan.waiting, "master-1 not added: it has no InternalIP");
        /* Every master a member: nothing to add and nothing to say. */
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 12, "master-2", "10.0.0.12", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_null(f->plan.waiting);
        fixture_free(f);
}

static void test_no_view(void **state)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        etcd_pod(f, "master-0", true, false);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_etcd_error(f, -ECONNREFUSED);
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        fixture_free(f);
}

/* Split brain (issue 37): while the view sees members reporting different cluster IDs,
 * neither side's member list is acted on. master-2's etcd pod runs and waits for its
 * membership; with the view whole it is added. Split: no member is added and it says why,
 * etcd-endpoints is left as it is, and EtcdMembersController (which only reports) names
 * both sides in EtcdMembersDegraded/SplitBrain. */
static void test_split_brain_holds_everything(void **state)
{
        (void) state;
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.10", true);
        fixture_master(f, "master-1", "10.0.0.11", true);
        fixture_master(f, "master-2", "10.0.0.12", true);
        fixture_member(f, 1, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.11", false, true, true);
        etcd_pod(f, "master-2", true, false);
        fixture_add(
                f, W_ETCD_CONFIGMAPS,
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"etcd-endpoints\","
                "\"namespace\":\"openshift-etcd\"},\"data\":{\"1\":\"10.0.0.10\",\"2\":\"10.0.0.11\","
                "\"3\":\"10.0.0.12\"}}");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_ADD_LEARNER, NULL, "master-2"));
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_int_equal(fixture_count(f, INTENT_APPLY), 1); /* it would drop "3": not a member */

        f->snap->split_brain = true;
        f->snap->split_brain_detail = strdup("members report 2 cluster IDs: 0000000000001234 (the member "
                                             "list's): master-0, master-1; 00000000000abcde: endpoint "
                                             "https://10.0.0.12:2379");
        assert_int_equal(fixture_sync(f, &controller_cluster_member), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_ADD_LEARNER), 0);
        assert_string_equal(f->plan.waiting, "no member is added or promoted: the etcd members report "
                                             "different cluster IDs (split brain)");
        assert_int_equal(fixture_sync(f, &controller_etcd_endpoints), 0);
        assert_int_equal(f->plan.n, 0);
        assert_int_equal(fixture_sync(f, &controller_etcd_members), 0);
        fixture_expect_condition(f, "EtcdMembersDegraded", "True", "SplitBrain");
        assert_string_equal(fixture_condition(f, "EtcdMembersDegraded")->cond_message,
                            f->snap->split_brain_detail);
        fixture_expect_condition(f, "EtcdMembersAvailable", "True", "EtcdQuorate");
        fixture_free(f);
}

/* ---- bootstrap teardown ---- */

#define STABLE_AT_4                                                                               \
        "\"latestAvailableRevision\":4,\"nodeStatuses\":[{\"nodeName\":\"master-0\","             \
        "\"currentRevision\":4},{\"nodeName\":\"master-1\",\"currentRevision\":4},{\"nodeName\":" \
        "\"master-2\",\"currentRevision\":4}]"

static Fixture *four_members(void)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 12, "master-2", "10.0.0.12", false, true, true);
        fixture_etcd_cr(f, NULL, STABLE_AT_4);
        return f;
}

static void kas_at(Fixture *f, int rev, const char *servers)
{
        char json[2048];
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"KubeAPIServer\",\"metadata\":{"
                "\"name\":\"cluster\"},\"status\":{\"latestAvailableRevision\":%d,\"nodeStatuses\":[{"
                "\"nodeName\":\"master-0\",\"currentRevision\":%d}]}}",
                rev, rev);
        fixture_add(f, W_KUBEAPISERVERS, json);
        (void) snprintf(json, sizeof json,
                        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"config-%d\","
                        "\"namespace\":\"openshift-kube-apiserver\"},\"data\":{\"config.yaml\":"
                        "\"{\\\"apiServerArguments\\\":{\\\"etcd-servers\\\":[%s]}}\"}}",
                        rev, servers);
        fixture_add(f, W_KAS_CONFIGMAPS, json);
}

#define ALL_MASTERS                                                                                    \
        "\\\"https://10.0.0.5:2379\\\",\\\"https://10.0.0.10:2379\\\",\\\"https://10.0.0.11:2379\\\"," \
        "\\\"https://10.0.0.12:2379\\\""

static void complete(Fixture *f)
{
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
}

static void test_teardown_count_gate(void **state)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        kas_at(f, 3, ALL_MASTERS);
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "False", "NotEnoughEtcdMembers");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_teardown_waits_for_kube_apiserver(void **state)
{
        Fixture *f = four_members();
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "True", "EnoughEtcdMembers");
        fixture_expect_condition(f, "EtcdBootstrapMemberRemoved", "False", "WaitingForKubeAPIServer");
        /* A revision that does not list every master yet is not enough either. */
        kas_at(f, 2, "\\\"https://10.0.0.5:2379\\\",\\\"https://10.0.0.10:2379\\\"");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdBootstrapMemberRemoved", "False", "WaitingForKubeAPIServer");
        assert_non_null(
                strstr(fixture_condition(f, "EtcdBootstrapMemberRemoved")->cond_message, "10.0.0.11"));
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_teardown_waits_for_bootstrap_complete(void **state)
{
        Fixture *f = four_members();
        kas_at(f, 3, ALL_MASTERS);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdBootstrapMemberRemoved", "False", "WaitingForBootstrapComplete");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        /* The seed's alternative signal: the bootstrap-finished event. */
        fixture_add(
                f, W_KUBE_SYSTEM_EVENTS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"bootstrap-finished\","
                "\"namespace\":\"kube-system\"},\"reason\":\"BootstrapFinished\"}");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap"));
        fixture_free(f);
}

static void test_teardown_removes_when_safe(void **state)
{
        Fixture *f = four_members();
        kas_at(f, 3, ALL_MASTERS);
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        const Intent *rm = fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap");
        assert_non_null(rm);
        assert_int_equal(rm->member_id, 100);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 1);
        fixture_free(f);
}

static void test_teardown_waits_for_rollout(void **state)
{
        /* Every gate holds but master-1 is being taken to revision 5 (its etcd restarts any
         * moment): a bootstrap removal then could see one voter fewer than it checked. */
        Fixture *f = four_members();
        kas_at(f, 3, ALL_MASTERS);
        complete(f);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":5,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                        "\"currentRevision\":5},{\"nodeName\":\"master-1\",\"currentRevision\":4,"
                        "\"targetRevision\":5},{\"nodeName\":\"master-2\",\"currentRevision\":4}]");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdBootstrapMemberRemoved", "False", "WaitingForRollout");
        assert_string_equal(fixture_condition(f, "EtcdBootstrapMemberRemoved")->cond_message,
                            "node master-1 is being rolled out to etcd revision 5 (its etcd restarts any "
                            "moment)");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        /* Between two nodes of the rollout no restart is pending: removed. */
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":5,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                        "\"currentRevision\":5},{\"nodeName\":\"master-1\",\"currentRevision\":5,"
                        "\"targetRevision\":5},{\"nodeName\":\"master-2\",\"currentRevision\":4}]");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap"));
        fixture_free(f);
}

static void test_teardown_never_with_unhealthy_master(void **state)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 12, "master-2", "10.0.0.12", false, true, false);
        kas_at(f, 3, ALL_MASTERS);
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "False", "NotEnoughEtcdMembers");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_teardown_done(void **state)
{
        Fixture *f = fixture_new();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        fixture_member(f, 12, "master-2", "10.0.0.12", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        /* upstream's reasons, as the console and must-gather show them */
        fixture_expect_condition(f, "EtcdBootstrapMemberRemoved", "True", "BootstrapMemberRemoved");
        fixture_expect_condition(f, "EtcdRunningInCluster", "True", "BootstrapAlreadyRemoved");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

static void test_unsafe_single_replica(void **state)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_add(f, W_ETCD_CR,
                    "{\"apiVersion\":\"operator.openshift.io/"
                    "v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":\"cluster\"},"
                    "\"spec\":{\"unsupportedConfigOverrides\":{"
                    "\"useUnsupportedUnsafeNonHANonProductionUnstableEtcd\":"
                    "true}},\"status\":{\"latestAvailableRevision\":2,\"nodeStatuses\":[{\"nodeName\":"
                    "\"master-0\",\"currentRevision\":2}]}}");
        kas_at(f, 3, "\\\"https://10.0.0.10:2379\\\"");
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "True", "EnoughEtcdMembers");
        /* Removing the bootstrap member of a 2-voter cluster keeps the master as the one healthy voter. */
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap"));
        fixture_free(f);
}

/* controlPlaneTopology SingleReplica is a one-master cluster by design, as
 * upstream's scaling strategy says: the bootstrap member goes once that one
 * master is a healthy voter, without the override (it used to wait for 4). */
static void test_single_replica_topology(void **state)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_etcd_cr(f, NULL, STABLE_AT_4);
        fixture_add(f, W_INFRASTRUCTURES,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                    "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"SingleReplica\"}}");
        kas_at(f, 3, "\\\"https://10.0.0.10:2379\\\"");
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "True", "EnoughEtcdMembers");
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap"));
        /* The same cluster as HighlyAvailable waits for three masters. */
        fixture_add(f, W_INFRASTRUCTURES,
                    "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\",\"metadata\":{"
                    "\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":\"HighlyAvailable\"}}");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "False", "NotEnoughEtcdMembers");
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_free(f);
}

/* The assisted installer's delayed-HA annotation: two masters are enough to
 * finish the bootstrap (the third joins later). */
static void test_delayed_ha(void **state)
{
        Fixture *f = bootstrap_phase();
        fixture_member(f, 10, "master-0", "10.0.0.10", false, true, true);
        fixture_member(f, 11, "master-1", "10.0.0.11", false, true, true);
        fixture_etcd_cr(f, NULL, STABLE_AT_4);
        kas_at(f, 3, ALL_MASTERS);
        complete(f);
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        assert_int_equal(fixture_count(f, INTENT_ETCD_REMOVE), 0);
        fixture_add(
                f, W_NAMESPACES,
                "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"openshift-etcd\","
                "\"annotations\":{\"openshift.io/delayed-ha-bootstrap\":\"\"}}}");
        assert_int_equal(fixture_sync(f, &controller_bootstrap_teardown), 0);
        fixture_expect_condition(f, "EtcdRunningInCluster", "True", "EnoughEtcdMembers");
        assert_non_null(fixture_find(f, INTENT_ETCD_REMOVE, NULL, "etcd-bootstrap"));
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_learner_gates),
                cmocka_unit_test(test_no_add_while_a_voter_has_an_old_certificate),
                cmocka_unit_test(test_no_add_while_unhealthy),
                cmocka_unit_test(test_one_learner_at_a_time),
                cmocka_unit_test(test_promote_existing_learner),
                cmocka_unit_test(test_no_promotion_while_a_voter_is_unhealthy),
                cmocka_unit_test(test_no_promotion_while_its_node_rolls_out),
                cmocka_unit_test(test_next_master_after_promotion),
                cmocka_unit_test(test_no_view),
                cmocka_unit_test(test_split_brain_holds_everything),
                cmocka_unit_test(test_teardown_count_gate),
                cmocka_unit_test(test_single_replica_topology),
                cmocka_unit_test(test_delayed_ha),
                cmocka_unit_test(test_teardown_waits_for_kube_apiserver),
                cmocka_unit_test(test_teardown_waits_for_bootstrap_complete),
                cmocka_unit_test(test_teardown_removes_when_safe),
                cmocka_unit_test(test_teardown_waits_for_rollout),
                cmocka_unit_test(test_teardown_never_with_unhealthy_master),
                cmocka_unit_test(test_teardown_done),
                cmocka_unit_test(test_unsafe_single_replica),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
