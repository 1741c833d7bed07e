/* InstallerController as a table: node statuses, etcd membership and pods in;
 * target revisions, installer pods and failure records out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static const char *const names[] = {"master-0", "master-1", "master-2"};
static const char *const ips[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};

/* etcds/cluster at `latest`, with node statuses: current[i] (0: none),
 * and an optional extra JSON for each entry (e.g. a target). */
static void cr(Fixture *f, const char *spec, int latest, const int current[3], const char *const extra[3])
{
        char status[2048];
        size_t off = (size_t) snprintf(status, sizeof status,
                                       "\"latestAvailableRevision\":%d,\"nodeStatuses\":[", latest);
        for (size_t i = 0; i < 3; i++) {
                char cur[48] = "";
                if (current[i])
                        (void) snprintf(cur, sizeof cur, ",\"currentRevision\":%d", current[i]);
                off += (size_t) snprintf(status + off, sizeof status - off, "%s{\"nodeName\":\"%s\"%s%s%s}",
                                         i ? "," : "", names[i], cur, extra && extra[i] ? "," : "",
                                         extra && extra[i] ? extra[i] : "");
        }
        (void) snprintf(status + off, sizeof status - off, "]");
        fixture_etcd_cr(f, spec, status);
}

/* Three ready masters running ready etcd pods at their current revisions. */
static Fixture *masters(int latest, const int current[3])
{
        Fixture *f = fixture_new();
        for (size_t i = 0; i < 3; i++) {
                fixture_master(f, names[i], ips[i], true);
                if (current[i])
                        fixture_etcd_pod(f, names[i], (unsigned) current[i], true);
        }
        cr(f, NULL, latest, current, NULL);
        return f;
}

static void voters(Fixture *f, bool healthy0, bool healthy1, bool healthy2)
{
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, healthy0);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, healthy1);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, healthy2);
}

static const cJSON *entry_in(const cJSON *obj, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, json_get_array(obj, "status.nodeStatuses"))
                if (streq_ptr(json_get_string(e, "nodeName"), node))
                        return e;
        fail_msg("no node status for %s", node);
        return NULL;
}

static int64_t field(const cJSON *entry, const char *key)
{
        int64_t v = 0;
        return json_get_int64(entry, key, &v) >= 0 ? v : 0;
}

/* The plan is exactly one status write that targets `node` at `rev`. */
static void expect_target(Fixture *f, const char *node, int64_t rev)
{
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 1);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_int_equal(field(entry_in(i->object, node), "targetRevision"), rev);
        size_t targets = 0;
        for (size_t k = 0; k < 3; k++)
                targets += field(entry_in(i->object, names[k]), "targetRevision") != 0;
        assert_int_equal(targets, 1);
}

static void expect_waiting(Fixture *f)
{
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_true(f->plan.requeue_after > 0);
}

static const Intent *expect_pod(Fixture *f, const char *name)
{
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 1);
        const Intent *i = fixture_find(f, INTENT_CREATE, "pods", name);
        if (!i)
                fail_msg("no installer pod %s", name);
        return i;
}

static void installer_phase(Fixture *f, const char *name, const char *phase)
{
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\",\"labels\":{\"app\":\"installer\"}},\"status\":{\"phase\":\"%s\","
                "\"containerStatuses\":[{\"name\":\"installer\",\"state\":{\"terminated\":{\"exitCode\":1,"
                "\"reason\":\"Error\",\"message\":\"secret etcd-all-certs-2 not found\"}}}]}}",
                name, phase);
}

static void test_non_member_first_then_pod(void **state)
{
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_member(f, 3, "master-2", "10.0.0.3", true, true, true); /* a learner */
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-2", 2);
        fixture_expect_condition(f, "NodeInstallerProgressing", "True", "NodeInstaller");
        assert_string_equal(fixture_condition(f, "NodeInstallerProgressing")->cond_message,
                            "3 nodes are at revision 1; latest revision is 2");

        /* The target is on record: now the pod, and nothing else. */
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        const Intent *pod = expect_pod(f, "installer-2-master-2");
        const cJSON *o = pod->object;
        assert_string_equal(json_get_string(o, "spec.nodeName"), "master-2");
        assert_string_equal(json_get_string(o, "spec.restartPolicy"), "Never");
        assert_string_equal(json_get_string(o, "spec.serviceAccountName"), "installer-sa");
        assert_string_equal(json_get_string(o, "metadata.namespace"), "openshift-etcd");
        cJSON *c = cJSON_GetArrayItem(json_get_array(o, "spec.containers"), 0);
        assert_string_equal(json_get_string(c, "image"),
                            "quay.io/openshift/cluster-etcd-operator@sha256:4567");
        _cleanup_free_ char *cmd = json_print(json_get_array(c, "command"));
        assert_string_equal(
                cmd,
                "[\"cluster-etcd-operator\",\"installer\",\"--revision=2\",\"--namespace=openshift-etcd\","
                "\"--pod=etcd-pod\",\"--resource-dir=/etc/kubernetes/static-pod-resources\","
                "\"--pod-manifest-dir=/etc/kubernetes/manifests\","
                "\"--cert-dir=/etc/kubernetes/static-pod-resources/etcd-certs\","
                "\"--configmaps=etcd-pod,etcd-endpoints,etcd-all-bundles\",\"--secrets=etcd-all-certs\","
                "\"--cert-configmaps=restore-etcd-pod,etcd-all-bundles,etcd-scripts\",\"--cert-secrets=etcd-"
                "all-certs\","
                "\"--node-name=master-2\","
                /* the quorum guard's seeds: every started member's client URL */
                "\"--etcd-endpoints=https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379\"]");
        _cleanup_free_ char *vols = json_print(json_get_array(o, "spec.volumes"));
        assert_non_null(strstr(vols, "\"path\":\"/etc/kubernetes/static-pod-resources\""));
        assert_non_null(strstr(vols, "\"path\":\"/etc/kubernetes/manifests\""));

        /* Never two at once: while it runs, nothing. */
        assert_int_equal(fixture_feed(f, W_ETCD_PODS), 1);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        installer_phase(f, "installer-2-master-2", "Running");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        /* Done, but the node does not run revision 2 yet: still nothing for the others. */
        installer_phase(f, "installer-2-master-2", "Succeeded");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);
}

/* The last two arguments of installer pod `name`'s command, in order. */
static void expect_last_args(Fixture *f, const char *name, const char *second_last, const char *last)
{
        const Intent *pod = expect_pod(f, name);
        cJSON *cmd = json_get_array(cJSON_GetArrayItem(json_get_array(pod->object, "spec.containers"), 0),
                                    "command");
        int n = cJSON_GetArraySize(cmd);
        assert_true(n >= 2);
        assert_string_equal(cJSON_GetArrayItem(cmd, n - 2)->valuestring, second_last);
        assert_string_equal(cJSON_GetArrayItem(cmd, n - 1)->valuestring, last);
}

/* The etcd pod as TargetConfigController renders it (rev 0: ConfigMap etcd-pod) and its copy
 * in revision `rev`, as far as a node's address goes. */
static void etcd_pod_rev(Fixture *f, int rev, const char *node_env, const char *ip)
{
        char name[32] = "etcd-pod";
        if (rev > 0)
                (void) snprintf(name, sizeof name, "etcd-pod-%d", rev);
        fixture_addf(f, W_ETCD_CONFIGMAPS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                     "\"namespace\":\"openshift-etcd\"},\"data\":{\"pod.yaml\":\"spec:\\n  containers:\\n"
                     "  - name: etcd\\n    env:\\n    - name: NODE_%s_IP\\n      value: %s\\n\"}}",
                     name, node_env, ip);
}

/* A master that moved (its Node has another address than the certificate of the
 * revision it runs names) goes first: nothing can join before it has certificates for
 * its address. The installer's quorum guard reaches its member where it serves,
 * checked for the address the certificate names. */
static void test_moved_master_alias(void **state)
{
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        const char *old_ip[] = {"127.0.0.1", "10.0.9.3", NULL}, *same[] = {"127.0.0.1", "10.0.0.1", NULL};
        const char *now[] = {"127.0.0.1", "10.0.0.3", NULL};
        fixture_all_certs(f, "master-2", "etcd-all-certs-1", old_ip);
        fixture_all_certs(f, "master-0", "etcd-all-certs-2", same);
        fixture_all_certs(f, "master-2", "etcd-all-certs-2", now);
        etcd_pod_rev(f, 0, "master_2", "10.0.0.3");
        etcd_pod_rev(f, 2, "master_2", "10.0.0.3");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-2", 2);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_last_args(
                f, "installer-2-master-2",
                "--etcd-endpoints=https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379",
                "--etcd-address-alias=10.0.0.3=10.0.9.3");
        fixture_free(f);
}

/* After a quorum restore on a master that moved, its member is the only voter: it
 * restarts (with certificates for its address) only under the runbook's unsafe non-HA
 * override, and before the masters that have no member. */
static const char *const sole_old_ip[] = {"127.0.0.1", "10.0.9.2", NULL};
static const char *const sole_now_ip[] = {"127.0.0.1", "10.0.0.2", NULL};

/* master-1's member is the only voter, on a certificate of revision 1 for its old address
 * 10.0.9.2; its Node says 10.0.0.2; the runbook's unsafe non-HA override is set; revision 2
 * certifies master-1 for `certs2` and its etcd pod gives it `pod2` (the one rendered now: 10.0.0.2). */
static Fixture *moved_sole_voter(const int current[3], const char *const *certs2, const char *pod2)
{
        Fixture *f = masters(2, current);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_all_certs(f, "master-1", "etcd-all-certs-1", sole_old_ip);
        cr(f, "\"unsupportedConfigOverrides\":{\"useUnsupportedUnsafeNonHANonProductionUnstableEtcd\":true}",
           2, current, NULL);
        fixture_all_certs(f, "master-1", "etcd-all-certs-2", certs2);
        etcd_pod_rev(f, 0, "master_1", "10.0.0.2");
        etcd_pod_rev(f, 2, "master_1", pod2);
        return f;
}

static void test_moved_sole_voter(void **state)
{
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_all_certs(f, "master-1", "etcd-all-certs-1", sole_old_ip);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2); /* without the override: a node with no member */
        fixture_free(f);

        /* Revision 2 made before the Node said where master-1 is now (e2e/dr met it: a forced
         * redeployment right after the quorum restore, while the kubelet could not yet report
         * the new address): its certificate and its pod still have the old address. Restarted
         * into it, the only voter could not start, and nothing could bring it back. */
        f = moved_sole_voter((const int[]){1, 1, 1}, sole_old_ip, "10.0.9.2");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2); /* a node that has no member costs nothing */
        fixture_free(f);
        /* The others at revision 2 already: nothing to do but wait, and say why. */
        f = moved_sole_voter((const int[]){2, 1, 2}, sole_old_ip, "10.0.9.2");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_non_null(
                strstr(strempty(f->plan.waiting),
                       "revision 2 certifies master-1 for 10.0.9.2, not for its address 10.0.0.2 now"));
        fixture_free(f);

        /* Its certificate renewed but its pod still the old address: waits too. */
        f = moved_sole_voter((const int[]){1, 1, 1}, sole_now_ip, "10.0.9.2");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_free(f);

        /* Revision 2 made for where it is now: it restarts first. */
        f = moved_sole_voter((const int[]){1, 1, 1}, sole_now_ip, "10.0.0.2");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 2);
        /* Its installer's quorum guard is told so too (it would refuse 0 of 1 voters up). */
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_last_args(f, "installer-2-master-1", "--etcd-address-alias=10.0.0.2=10.0.9.2",
                         "--etcd-sole-voter-may-restart");
        fixture_free(f);
}

/* master-0 alone, its member the only voter, at revision 1 of 2. */
static Fixture *sole_voter_at_revision_1(void)
{
        Fixture *f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_etcd_pod(f, "master-0", 1, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":2,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                        "\"currentRevision\":1}]");
        return f;
}

/* One master by design (SingleReplica, or installed in place): its only member restarts into each
 * revision, nothing else could keep quorum, and its installer's own guard is told so. The same
 * single voter on a cluster meant for three waits (the member that would keep quorum is missing). */
static void test_single_node_restarts_its_only_member(void **state)
{
        static const char *const topologies[] = {"SingleReplica", NULL};
        (void) state;
        for (size_t k = 0; k < ELEMENTSOF(topologies); k++) {
                Fixture *f = sole_voter_at_revision_1();
                if (topologies[k])
                        fixture_addf(
                                f, W_INFRASTRUCTURES,
                                "{\"apiVersion\":\"config.openshift.io/v1\",\"kind\":\"Infrastructure\","
                                "\"metadata\":{\"name\":\"cluster\"},\"status\":{\"controlPlaneTopology\":"
                                "\"%s\"}}",
                                topologies[k]);
                else /* installed in place: the install-config says so */
                        fixture_addf(
                                f, W_KUBE_SYSTEM_CONFIGMAPS,
                                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                                "\"cluster-config-v1\",\"namespace\":\"kube-system\"},\"data\":{"
                                "\"install-config\":\"controlPlane:\\n  replicas: 1\\nbootstrapInPlace:\\n"
                                "  installationDisk: /dev/vda\\n\"}}");
                assert_int_equal(fixture_sync(f, &controller_installer), 0);
                const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
                assert_non_null(i);
                assert_int_equal(field(entry_in(i->object, "master-0"), "targetRevision"), 2);
                assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
                assert_int_equal(fixture_sync(f, &controller_installer), 0);
                const Intent *pod = expect_pod(f, "installer-2-master-0");
                cJSON *cmd = json_get_array(
                        cJSON_GetArrayItem(json_get_array(pod->object, "spec.containers"), 0), "command");
                assert_string_equal(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1)->valuestring,
                                    "--etcd-sole-voter-may-restart");
                fixture_free(f);
        }

        /* HighlyAvailable with a single voter left: restarting it would cost quorum; it waits. */
        Fixture *f = sole_voter_at_revision_1();
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        assert_non_null(strstr(strempty(f->plan.waiting), "would leave 0 of 1 voting members up"));
        fixture_free(f);
}

static void test_unready_before_ready(void **state)
{
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        /* master-1's Node is NotReady, its etcd still serves. */
        fixture_master(f, "master-1", "10.0.0.2", false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 2);
        fixture_free(f);

        /* master-2's etcd pod is not ready (and so not counted as up). */
        f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        fixture_etcd_pod(f, "master-2", 1, false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-2", 2);
        fixture_free(f);

        /* All ready and healthy: name order, quorum to spare. */
        f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_free(f);
}

static void test_voter_restart_needs_quorum_to_spare(void **state)
{
        /* master-2 is done but down: restarting master-0 or master-1 would leave 1 of 3. */
        Fixture *f = masters(2, (const int[]){1, 1, 2});
        voters(f, true, true, false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_expect_condition(f, "NodeInstallerProgressing", "True", "NodeInstaller");
        assert_string_equal(
                fixture_condition(f, "NodeInstallerProgressing")->cond_message,
                "2 nodes are at revision 1; 1 node is at revision 2; latest revision is 2; waiting: "
                "restarting master-1 would leave 1 of 3 voting members up, quorum is 2");
        fixture_free(f);

        /* An etcd that still looks healthy but whose pod is not ready counts as down too. */

        f = masters(2, (const int[]){1, 1, 2});
        voters(f, true, true, true);
        fixture_etcd_pod(f, "master-2", 2, false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        /* Once it is back, go on. */
        fixture_etcd_pod(f, "master-2", 2, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_free(f);

        /* A chosen node whose installer has not started yet gives way to an unready one. */
        f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        cr(f, NULL, 2, (const int[]){1, 1, 1}, (const char *const[]){"\"targetRevision\":2", NULL, NULL});
        fixture_etcd_pod(f, "master-1", 1, false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 2);
        fixture_free(f);

        /* Pods not ready while etcd still answers: both count as up for their own restart,
         * neither as the spare for the other's. */
        f = masters(2, (const int[]){1, 1, 2});
        voters(f, true, true, true);
        fixture_etcd_pod(f, "master-0", 1, false);
        fixture_etcd_pod(f, "master-1", 1, false);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);
}

static void test_stale_view_after_promotion(void **state)
{
        /* master-0 ran revision 1 and was just promoted; the view still shows a learner.
         * Revision 2 is out: master-0 must not restart (one of two voters by now), and the
         * target moves on to a node that is no member. */
        Fixture *f = masters(2, (const int[]){1, 0, 0});
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", true, true, true);
        cr(f, NULL, 2, (const int[]){1, 0, 0}, (const char *const[]){"\"targetRevision\":1", NULL, NULL});
        installer_phase(f, "installer-1-master-0", "Succeeded");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 2);
        const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_null(json_get(entry_in(i->object, "master-0"), "targetRevision"));
        /* With master-1 and master-2 done, master-0 alone is left and waits. */
        fixture_free(f);
        f = masters(2, (const int[]){1, 2, 2});
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", true, true, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);
}

static void test_bootstrap_waits_for_third_voter(void **state)
{
        Fixture *f = fixture_new();
        for (size_t i = 0; i < 3; i++)
                fixture_master(f, names[i], ips[i], true);
        fixture_etcd_pod(f, "master-0", 1, true);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        /* master-1 and master-2 are no members yet: they go first. */
        cr(f, NULL, 2, (const int[]){1, 0, 0}, NULL);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 2);

        /* Both installed; master-0 is the last one, and with the bootstrap member
         * it is one of two voters: restarting it would lose quorum. */
        fixture_etcd_pod(f, "master-1", 2, false);
        fixture_etcd_pod(f, "master-2", 2, false);
        cr(f, NULL, 2, (const int[]){1, 2, 2}, NULL);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);

        /* master-1 joins as a learner: still not a voter. */
        fixture_member(f, 2, "master-1", "10.0.0.2", true, true, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);

        /* Promoted, healthy and ready: three voters, one to spare. */
        f = fixture_new();
        for (size_t i = 0; i < 3; i++)
                fixture_master(f, names[i], ips[i], true);
        fixture_etcd_pod(f, "master-0", 1, true);
        fixture_etcd_pod(f, "master-1", 2, true);
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        cr(f, NULL, 2, (const int[]){1, 2, 2}, NULL);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_free(f);
}

static void test_bootstrap_member_leaving(void **state)
{
        /* Bootstrap is complete, so its member may be removed any moment: it is no
         * spare. Restarting master-0 still leaves master-1 and master-2, 2 of 3. */
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        voters(f, true, true, true);
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_free(f);

        /* Bootstrap, master-0 and master-1 are the voters (master-2 is done and a learner). Before
         * bootstrap completes, master-0 may restart: the bootstrap member and master-1 hold quorum.
         * Once it is complete, the bootstrap member is no spare: master-0 waits. */
        f = masters(2, (const int[]){1, 1, 2});
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 2);
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);

        /* Delayed HA, two masters: master-0 was given its target before bootstrap completed, its
         * installer pod not made yet. The teardown waits for that rollout, so the bootstrap member
         * stays and votes: master-0's installer goes ahead (bootstrap and master-1 hold quorum).
         * Counted out, neither would ever move (seen in e2e/topology-delayed-ha). */
        f = fixture_new();
        for (size_t i = 0; i < 2; i++) {
                fixture_master(f, names[i], ips[i], true);
                fixture_etcd_pod(f, names[i], 1, true);
        }
        fixture_member(f, 9, "etcd-bootstrap", "10.0.0.10", false, true, true);
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", false, true, true);
        fixture_etcd_cr(f, NULL,
                        "\"latestAvailableRevision\":2,\"nodeStatuses\":[{\"nodeName\":\"master-0\","
                        "\"currentRevision\":1,\"targetRevision\":2},{\"nodeName\":\"master-1\","
                        "\"currentRevision\":1}]");
        fixture_add(f, W_KUBE_SYSTEM_CONFIGMAPS,
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bootstrap\","
                    "\"namespace\":\"kube-system\"},\"data\":{\"status\":\"complete\"}}");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_pod(f, "installer-2-master-0");
        fixture_free(f);
}

/* The plan's status write records `node`'s first failed attempt at `rev`, still its target. */
static const cJSON *expect_first_failure(Fixture *f, const char *node, int64_t rev, const char *reason,
                                         const char *error)
{
        const cJSON *e = entry_in(fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster")->object, node);
        assert_int_equal(field(e, "lastFailedRevision"), rev);
        assert_int_equal(field(e, "lastFailedCount"), 1);
        assert_int_equal(field(e, "targetRevision"), rev);
        assert_string_equal(json_get_string(e, "lastFailedReason"), reason);
        assert_string_equal(
                cJSON_GetStringValue(cJSON_GetArrayItem(json_get_array(e, "lastFailedRevisionErrors"), 0)),
                error);
        return e;
}

static void test_failed_installer_retried(void **state)
{
        const char *const target[] = {"\"targetRevision\":2", NULL, NULL};
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        voters(f, true, true, true);
        cr(f, "\"failedRevisionLimit\":2", 2, (const int[]){1, 1, 1}, target);
        installer_phase(f, "installer-2-master-0", "Failed");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 1);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        const cJSON *e = expect_first_failure(f, "master-0", 2, "InstallerFailed",
                                              "installer: secret etcd-all-certs-2 not found");
        assert_string_equal(json_get_string(e, "lastFailedTime"), "2026-11-22T00:00:00Z");
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);

        /* Backoff first, then the retry under a new name. */
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        assert_true(f->plan.requeue_after <= 10 * USEC_PER_SEC);
        f->now += 11 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_pod(f, "installer-2-retry-1-master-0");

        /* The second failure reaches failedRevisionLimit: no more tries. */
        installer_phase(f, "installer-2-retry-1-master-0", "Failed");
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        e = entry_in(fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster")->object, "master-0");
        assert_int_equal(field(e, "lastFailedCount"), 2);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        f->now += 3600 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        fixture_expect_condition(f, "NodeInstallerDegraded", "True", "InstallerPodFailed");

        /* A new revision (e.g. forceRedeploymentReason) retargets the node and starts over. */
        _cleanup_(cJSON_Deletep) cJSON *obj =
                cJSON_Duplicate(fixture_get(f, W_ETCD_CR, NULL, "cluster")->json, true);
        cJSON_ReplaceItemInObjectCaseSensitive(json_get_object(obj, "status"), "latestAvailableRevision",
                                               cJSON_CreateNumber(3));
        _cleanup_free_ char *text = json_print(obj);
        fixture_add(f, W_ETCD_CR, text);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 3);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_pod(f, "installer-3-master-0");
        fixture_free(f);
}

static void test_stale_target_cleared(void **state)
{
        /* master-2 reached its target; NodeStatusController has not cleared it yet. */
        Fixture *f = masters(3, (const int[]){2, 2, 3});
        voters(f, true, true, true);
        cr(f, NULL, 3, (const int[]){2, 2, 3}, (const char *const[]){NULL, NULL, "\"targetRevision\":3"});
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-0", 3);
        const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcds", "cluster");
        assert_null(json_get(entry_in(i->object, "master-2"), "targetRevision"));
        assert_int_equal(field(entry_in(i->object, "master-2"), "currentRevision"), 3);
        fixture_free(f);
}

/* Installer pod `name` Succeeded, its container finished `ago_s` seconds before f->now. */
static void installer_succeeded(Fixture *f, const char *name, unsigned ago_s)
{
        char finished[64];
        (void) format_rfc3339(finished, sizeof finished, f->now - ago_s * USEC_PER_SEC);
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\",\"labels\":{\"app\":\"installer\"}},\"status\":{\"phase\":\"Succeeded\","
                "\"containerStatuses\":[{\"name\":\"installer\",\"state\":{\"terminated\":{\"exitCode\":0,"
                "\"finishedAt\":\"%s\"}}}]}}",
                name, finished);
}

static void test_newer_revision_waits_for_a_restarting_node(void **state)
{
        /* master-1's installer for revision 4 finished 30 s ago: its etcd restarts now, though
         * the view still says healthy. Revision 5 appears meanwhile: no other node is chosen
         * until master-1 runs 4 (CI caught master-0 and master-1 restarting together). */
        Fixture *f = masters(5, (const int[]){4, 3, 4});
        voters(f, true, true, true);
        cr(f, NULL, 5, (const int[]){4, 3, 4}, (const char *const[]){NULL, "\"targetRevision\":4", NULL});
        installer_succeeded(f, "installer-4-master-1", 30);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        assert_non_null(strstr(strempty(f->plan.waiting), "node master-1 is restarting etcd at revision 4"));
        /* Three minutes on, master-1 never came up at 4: the hold ends, revision 5 goes on. */
        f->now += 3 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 1);
        fixture_free(f);

        /* A node that is no voter (its etcd may not even start before the newer revision)
         * holds nothing: it takes revision 5 at once. */
        f = masters(5, (const int[]){4, 3, 4});
        fixture_member(f, 1, "master-0", "10.0.0.1", false, true, true);
        fixture_member(f, 2, "master-1", "10.0.0.2", true, false, false);
        fixture_member(f, 3, "master-2", "10.0.0.3", false, true, true);
        cr(f, NULL, 5, (const int[]){4, 3, 4}, (const char *const[]){NULL, "\"targetRevision\":4", NULL});
        installer_succeeded(f, "installer-4-master-1", 30);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_target(f, "master-1", 5);
        fixture_free(f);
}

/* Revision 5 exists while master-1 targets 4, whose installer finished 30 s ago; master-1's
 * etcd pod runs `rev` (ready or not) and its member answers healthy or not. */
static Fixture *restarting_master_1(unsigned rev, bool pod_ready, bool healthy)
{
        Fixture *f = masters(5, (const int[]){4, 3, 4});
        fixture_etcd_pod(f, "master-1", rev, pod_ready);
        voters(f, true, healthy, true);
        cr(f, NULL, 5, (const int[]){4, 3, 4}, (const char *const[]){NULL, "\"targetRevision\":4", NULL});
        installer_succeeded(f, "installer-4-master-1", 30);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        return f;
}

static void test_newer_revision_goes_to_a_node_down_at_its_target(void **state)
{
        /* master-1's etcd runs 4 but is down (a release whose etcd image the setup container
         * refuses). Revision 5, the fixed release, goes to master-1 at once: the restart is
         * over, and the other two keep quorum. */
        Fixture *f = restarting_master_1(4, false, false);
        expect_target(f, "master-1", 5);
        fixture_free(f);

        /* Down, but still at revision 3 (the kubelet has not restarted it into 4 yet): the hold
         * stands. */
        f = restarting_master_1(3, false, false);
        expect_waiting(f);
        assert_non_null(strstr(strempty(f->plan.waiting), "node master-1 is restarting etcd at revision 4"));
        fixture_free(f);

        /* At revision 4 and not ready, but its member answers healthy (etcd is up, the probe
         * lags): the hold stands as well. */
        f = restarting_master_1(4, false, true);
        expect_waiting(f);
        fixture_free(f);
}

/* master-1 targets revision 4, whose installer succeeded 10 minutes ago: the rollout only waits. */
static void still_waits_10_min_on(Fixture *f)
{
        voters(f, true, true, true);
        cr(f, NULL, 4, (const int[]){4, 3, 4}, (const char *const[]){NULL, "\"targetRevision\":4", NULL});
        installer_succeeded(f, "installer-4-master-1", 600);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);
}

static void test_operand_not_at_revision_retried(void **state)
{
        /* master-1's installer of revision 4 succeeded; its Ready node's etcd pod still runs 3. */
        const char *const target[] = {NULL, "\"targetRevision\":4", NULL};
        Fixture *f = masters(4, (const int[]){4, 3, 4});
        voters(f, true, true, true);
        cr(f, NULL, 4, (const int[]){4, 3, 4}, target);
        installer_succeeded(f, "installer-4-master-1", 60);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f); /* within the kubelet's time: nothing yet */
        assert_true(f->plan.requeue_after <= 10 * USEC_PER_SEC);

        /* Three minutes after the installer finished: that attempt failed, the installer runs again. */
        f->now += 2 * 60 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        (void) expect_first_failure(f, "master-1", 4, "OperandNotAtRevision",
                                    "installer-4-master-1 succeeded but etcd on node master-1 still runs "
                                    "revision 3 180 s later");
        bool said = false;
        for (size_t k = 0; k < f->plan.n; k++)
                said |= f->plan.intents[k].type == INTENT_EVENT &&
                        streq_ptr(f->plan.intents[k].reason, "OperandNotAtRevision");
        assert_true(said);
        assert_int_equal(fixture_feed(f, W_ETCD_CR), 1);
        f->now += 11 * USEC_PER_SEC;
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_pod(f, "installer-4-retry-1-master-1");
        fixture_free(f);

        /* The same with the node NotReady (its kubelet may be the one that is down): wait. */
        f = masters(4, (const int[]){4, 3, 4});
        fixture_master(f, "master-1", "10.0.0.2", false);
        still_waits_10_min_on(f);
        /* No etcd pod at all (a restore runbook moved the manifest aside): not ours to rewrite. */
        still_waits_10_min_on(masters(4, (const int[]){4, 0, 4}));
        /* At the revision but not ready (etcd starting on a large database): not this. */
        f = masters(4, (const int[]){4, 3, 4});
        fixture_etcd_pod(f, "master-1", 4, false);
        still_waits_10_min_on(f);
}

static void test_all_done(void **state)
{
        Fixture *f = masters(3, (const int[]){3, 3, 3});
        voters(f, true, true, true);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(fixture_count(f, INTENT_UPDATE_STATUS), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        fixture_expect_condition(f, "NodeInstallerProgressing", "False", "AllNodesAtLatestRevision");
        assert_string_equal(fixture_condition(f, "NodeInstallerProgressing")->cond_message,
                            "3 nodes are at revision 3");
        fixture_free(f);
}

static void test_nothing_without_etcd_view_or_revision(void **state)
{
        Fixture *f = masters(2, (const int[]){1, 1, 1});
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_etcd_error(f, -ECONNREFUSED);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        expect_waiting(f);
        fixture_free(f);

        f = fixture_new();
        fixture_master(f, "master-0", "10.0.0.1", true);
        fixture_etcd_cr(f, NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_installer), 0);
        assert_int_equal(f->plan.n, 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_non_member_first_then_pod),
                cmocka_unit_test(test_moved_master_alias),
                cmocka_unit_test(test_moved_sole_voter),
                cmocka_unit_test(test_single_node_restarts_its_only_member),
                cmocka_unit_test(test_unready_before_ready),
                cmocka_unit_test(test_voter_restart_needs_quorum_to_spare),
                cmocka_unit_test(test_stale_view_after_promotion),
                cmocka_unit_test(test_bootstrap_waits_for_third_voter),
                cmocka_unit_test(test_bootstrap_member_leaving),
                cmocka_unit_test(test_failed_installer_retried),
                cmocka_unit_test(test_stale_target_cleared),
                cmocka_unit_test(test_newer_revision_goes_to_a_node_down_at_its_target),
                cmocka_unit_test(test_newer_revision_waits_for_a_restarting_node),
                cmocka_unit_test(test_operand_not_at_revision_retried),
                cmocka_unit_test(test_all_done),
                cmocka_unit_test(test_nothing_without_etcd_view_or_revision),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
