/* BackupController as a table: EtcdBackups, backup Jobs and claims in, the
 * Job it makes and the status it writes out. One Job at a time, the others
 * skipped; a missing claim failed at once; a finished Job reported and both
 * labelled processed; an orphaned Job deleted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"
#include "runtime/conditions.h"

static void backup(Fixture *f, const char *name, const char *pvc, const char *labels)
{
        fixture_addf(
                f, W_ETCD_BACKUPS,
                "{\"apiVersion\":\"operator.openshift.io/v1alpha1\",\"kind\":\"EtcdBackup\",\"metadata\":"
                "{\"name\":\"%s\",\"uid\":\"uid-%s\"%s%s%s},\"spec\":{\"pvcName\":\"%s\"}}",
                name, name, labels ? ",\"labels\":{" : "", labels ? labels : "", labels ? "}" : "", pvc);
}

static void claim(Fixture *f, const char *name)
{
        fixture_addf(
                f, W_ETCD_PVCS,
                "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"openshift-etcd\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]}}",
                name);
}

/* A backup Job for EtcdBackup `owner`; `cond` its terminal condition type or NULL while running. */
static void job(Fixture *f, const char *name, const char *owner, const char *cond, const char *reason)
{
        char status[256] = "{}";
        if (cond)
                (void) snprintf(status, sizeof status,
                                "{\"conditions\":[{\"type\":\"%s\",\"status\":\"True\",\"reason\":\"%s\","
                                "\"message\":\"it %s\"}]}",
                                cond, reason, cond);
        fixture_addf(
                f, W_ETCD_JOBS,
                "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"openshift-etcd\",\"uid\":\"juid-%s\",\"labels\":{\"app\":\"cluster-backup-job\","
                "\"backup-name\":\"%s\"}},\"status\":%s}",
                name, name, owner, status);
}

/* The status the plan writes for EtcdBackup `name`, NULL when none. */
static cJSON *written_status(Fixture *f, const char *name)
{
        const Intent *i = fixture_find(f, INTENT_UPDATE_STATUS, "etcdbackups", name);
        return i ? json_get(i->object, "status") : NULL;
}

static void expect_condition(Fixture *f, const char *name, const char *type, const char *status,
                             const char *substr)
{
        cJSON *st = written_status(f, name);
        assert_non_null(st);
        cJSON *c = conditions_find(json_get_array(st, "conditions"), type);
        assert_non_null(c);
        assert_string_equal(json_get_string(c, "status"), status);
        assert_string_equal(json_get_string(c, "reason"), type);
        if (substr && !strstr(strempty(json_get_string(c, "message")), substr))
                fail_msg("%s %s: message \"%s\" lacks \"%s\"", name, type, json_get_string(c, "message"),
                         substr);
}

static bool labelled_processed(Fixture *f, const char *plural, const char *name)
{
        for (size_t k = 0; k < f->plan.n; k++) {
                const Intent *i = &f->plan.intents[k];
                if (i->type == INTENT_PATCH && streq_ptr(i->res->plural, plural) &&
                    streq_ptr(i->name, name) &&
                    streq_ptr(json_get_string(i->object, "metadata.labels.state"), "processed"))
                        return true;
        }
        return false;
}

static void test_first_backup_gets_a_job(void **state)
{
        Fixture *f = fixture_new();
        f->state.operator_image = "quay.io/openshift/ceo@sha256:1";
        claim(f, "backups");
        backup(f, "nightly", "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);

        const Intent *create = fixture_find(f, INTENT_CREATE, "jobs", "cluster-backup-nightly");
        assert_non_null(create);
        cJSON *j = create->object;
        assert_string_equal(json_get_string(j, "metadata.namespace"), "openshift-etcd");
        assert_string_equal(json_get_string(j, "metadata.labels.app"), "cluster-backup-job");
        assert_string_equal(json_get_string(j, "metadata.labels.backup-name"), "nightly");
        assert_string_equal(json_get_string(j, "spec.template.metadata.labels.backup-name"), "nightly");
        assert_string_equal(
                json_get_string(cJSON_GetArrayItem(json_get_array(j, "metadata.ownerReferences"), 0), "uid"),
                "uid-nightly");
        int64_t deadline = 0, backoff = -1;
        assert_int_equal(json_get_int64(j, "spec.activeDeadlineSeconds", &deadline), 0);
        assert_int_equal(deadline, 900);
        assert_int_equal(json_get_int64(j, "spec.backoffLimit", &backoff), 0);
        assert_int_equal(backoff, 0);
        cJSON *pod = json_get(j, "spec.template.spec");
        assert_true(json_get_bool(pod, "hostNetwork", false));
        /* Review L13: neither container talks to the API. */
        assert_true(cJSON_IsFalse(json_get(pod, "automountServiceAccountToken")));
        assert_string_equal(json_get_string(pod, "restartPolicy"), "Never");
        assert_non_null(cJSON_GetObjectItemCaseSensitive(json_get_object(pod, "nodeSelector"),
                                                         "node-role.kubernetes.io/master"));
        cJSON *init = cJSON_GetArrayItem(json_get_array(pod, "initContainers"), 0);
        cJSON *main = cJSON_GetArrayItem(json_get_array(pod, "containers"), 0);
        assert_string_equal(json_get_string(init, "image"), "quay.io/openshift/ceo@sha256:1");
        assert_string_equal(json_string(cJSON_GetArrayItem(json_get_array(init, "command"), 1)), "verify");
        assert_string_equal(json_string(cJSON_GetArrayItem(json_get_array(init, "command"), 2)),
                            "backup-storage");
        assert_string_equal(json_string(cJSON_GetArrayItem(json_get_array(main, "command"), 1)),
                            "cluster-backup");
        const char *dir = json_string(cJSON_GetArrayItem(json_get_array(main, "command"), 3));
        assert_non_null(dir);
        assert_true(startswith(dir, "--backup-dir=/etc/kubernetes/cluster-backup/backup-nightly-"));
        cJSON *vol;
        bool has_claim = false;
        JSON_ARRAY_FOREACH (vol, json_get_array(pod, "volumes"))
                has_claim |= streq_ptr(json_get_string(vol, "persistentVolumeClaim.claimName"), "backups");
        assert_true(has_claim);

        expect_condition(f, "nightly", "BackupPending", "True", "cluster-backup-nightly");
        assert_string_equal(json_get_string(written_status(f, "nightly"), "backupJob.name"),
                            "cluster-backup-nightly");
        assert_false(labelled_processed(f, "etcdbackups", "nightly"));
        fixture_free(f);
}

static void test_one_at_a_time(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        backup(f, "a-first", "backups", NULL);
        backup(f, "b-second", "backups", NULL);
        backup(f, "c-third", "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 1);
        assert_non_null(fixture_find(f, INTENT_CREATE, "jobs", "cluster-backup-a-first"));
        expect_condition(f, "b-second", "BackupSkipped", "True", "a-first");
        expect_condition(f, "c-third", "BackupSkipped", "True", "a-first");
        assert_true(labelled_processed(f, "etcdbackups", "b-second"));
        assert_true(labelled_processed(f, "etcdbackups", "c-third"));

        /* While a-first's Job runs, a new EtcdBackup waits (neither run nor skipped). */
        fixture_delete(f, W_ETCD_BACKUPS, NULL, "b-second");
        fixture_delete(f, W_ETCD_BACKUPS, NULL, "c-third");
        job(f, "cluster-backup-a-first", "a-first", NULL, NULL);
        backup(f, "d-fourth", "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_null(written_status(f, "d-fourth"));
        assert_true(f->plan.requeue_after > 0);
        fixture_free(f);
}

static void test_missing_claim_fails_at_once(void **state)
{
        Fixture *f = fixture_new();
        backup(f, "nightly", "nope", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        expect_condition(f, "nightly", "BackupFailed", "True",
                         "persistentvolumeclaim openshift-etcd/nope not found");
        assert_true(labelled_processed(f, "etcdbackups", "nightly"));
        fixture_free(f);
}

/* An EtcdBackup with a store (annotations) and its Secret. */
static void s3_backup(Fixture *f, const char *name, const char *annotations)
{
        fixture_addf(
                f, W_ETCD_BACKUPS,
                "{\"apiVersion\":\"operator.openshift.io/v1alpha1\",\"kind\":\"EtcdBackup\",\"metadata\":"
                "{\"name\":\"%s\",\"uid\":\"uid-%s\",\"annotations\":{%s}},\"spec\":{\"pvcName\":"
                "\"backups\"}}",
                name, name, annotations);
}

#define S3_ANN(secret, bucket, prefix)                                                                      \
        "\"etcd.operator.openshift.io/s3-secret\":\"" secret "\",\"etcd.operator.openshift.io/s3-bucket\":" \
        "\"" bucket "\",\"etcd.operator.openshift.io/s3-prefix\":\"" prefix "\""

static void test_backup_to_s3(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        fixture_addf(f, W_ETCD_SECRETS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"store\","
                     "\"namespace\":\"openshift-etcd\"},\"data\":{}}");
        s3_backup(f, "a-to-s3",
                  S3_ANN("store", "etcd-backups", "clusters/prod-1") ",\"etcd.operator.openshift.io/"
                                                                     "s3-max-backups\":\"4\"");
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        const Intent *create = fixture_find(f, INTENT_CREATE, "jobs", "cluster-backup-a-to-s3");
        assert_non_null(create);
        cJSON *pod = json_get(create->object, "spec.template.spec");
        cJSON *main = cJSON_GetArrayItem(json_get_array(pod, "containers"), 0);
        cJSON *cmd = json_get_array(main, "command");
        assert_true(json_array_has_string(cmd, "--s3-credentials-dir=/etc/etcd-backup-s3"));
        assert_true(json_array_has_string(cmd, "--s3-bucket=etcd-backups"));
        assert_true(json_array_has_string(cmd, "--s3-prefix=clusters/prod-1"));
        assert_true(json_array_has_string(cmd, "--s3-gc-policy=LimitBased"));
        assert_true(json_array_has_string(cmd, "--s3-max-backups=4"));
        /* the backup directory stays the last argument */
        assert_true(startswith(json_string(cJSON_GetArrayItem(cmd, cJSON_GetArraySize(cmd) - 1)),
                               "--backup-dir="));
        cJSON *v;
        bool vol = false, mount = false;
        JSON_ARRAY_FOREACH (v, json_get_array(pod, "volumes"))
                vol |= streq_ptr(json_get_string(v, "secret.secretName"), "store");
        JSON_ARRAY_FOREACH (v, json_get_array(main, "volumeMounts"))
                mount |= streq_ptr(json_get_string(v, "mountPath"), "/etc/etcd-backup-s3");
        assert_true(vol && mount);
        expect_condition(f, "a-to-s3", "BackupPending", "True", "s3://etcd-backups/clusters/prod-1");
        fixture_free(f);

        /* Wrong or missing: failed at once, naming the annotation or the Secret; no Job. */
        static const struct {
                const char *annotations, *want;
        } bad[] = {
                {S3_ANN("missing", "etcd-backups", "clusters/prod-1"),
                 "secret openshift-etcd/missing not found"},
                {S3_ANN("store", "Bad_Bucket", "clusters/prod-1"), "s3-bucket \"Bad_Bucket\""},
                {S3_ANN("store", "etcd-backups", "/abs"), "s3-prefix \"/abs\""},
                {S3_ANN("store", "etcd-backups", "a/../b"), "s3-prefix"},
                {"\"etcd.operator.openshift.io/s3-bucket\":\"etcd-backups\"", "s3-secret \"\""},
                {S3_ANN("store", "etcd-backups",
                        "p") ",\"etcd.operator.openshift.io/s3-gc-policy\":\"Newest\"",
                 "s3-gc-policy \"Newest\""},
                {S3_ANN("store", "etcd-backups", "p") ",\"etcd.operator.openshift.io/s3-max-backups\":\"0\"",
                 "s3-max-backups \"0\""},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                f = fixture_new();
                claim(f, "backups");
                fixture_addf(f, W_ETCD_SECRETS,
                             "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"store\","
                             "\"namespace\":\"openshift-etcd\"},\"data\":{}}");
                s3_backup(f, "bad", bad[i].annotations);
                assert_int_equal(fixture_sync(f, &controller_backup), 0);
                assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
                expect_condition(f, "bad", "BackupFailed", "True", bad[i].want);
                fixture_free(f);
        }
}

/* A failed Job's condition says why in its pod's words: the last line of the container
 * that ended badly (a store whose name stopped resolving, here), not "see the log". */
static void test_failure_named_from_pod(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        backup(f, "bad", "backups", NULL);
        job(f, "cluster-backup-bad", "bad", "Failed", "BackoffLimitExceeded");
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"cluster-backup-bad-x7\","
                "\"namespace\":\"openshift-etcd\",\"labels\":{\"job-name\":\"cluster-backup-bad\"}},"
                "\"status\":{\"initContainerStatuses\":[{\"name\":\"verify-storage\",\"state\":{"
                "\"terminated\":{\"exitCode\":0,\"message\":\"room for 2 backups\"}}}],"
                "\"containerStatuses\":[{\"name\":\"cluster-backup\",\"state\":{\"terminated\":{"
                "\"exitCode\":1,\"message\":\"I snapshot saved\\nE1127 14:02:16.690485       2 "
                "backup.c:344] S3 PUT s3://b/k at https://s3.invalid: cannot resolve s3.invalid: "
                "Domain name not found (after 4 attempts)\\n\"}}}]}}");
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        expect_condition(
                f, "bad", "BackupFailed", "True",
                "job openshift-etcd/cluster-backup-bad failed (BackoffLimitExceeded: it Failed): container "
                "cluster-backup exited 1: S3 PUT s3://b/k at https://s3.invalid: cannot resolve "
                "s3.invalid: Domain name not found (after 4 attempts)");
        fixture_free(f);
}

static void test_finished_jobs_reported(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        backup(f, "good", "backups", NULL);
        backup(f, "bad", "backups", NULL);
        job(f, "cluster-backup-good", "good", "Complete", "CompletionsReached");
        job(f, "cluster-backup-bad", "bad", "Failed", "DeadlineExceeded");
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        expect_condition(f, "good", "BackupCompleted", "True", "claim backups");
        expect_condition(f, "bad", "BackupFailed", "True", "DeadlineExceeded");
        expect_condition(f, "bad", "BackupFailed", "True", "its pod's log says why"); /* no pod cached */
        assert_true(labelled_processed(f, "etcdbackups", "good"));
        assert_true(labelled_processed(f, "jobs", "cluster-backup-good"));
        assert_true(labelled_processed(f, "etcdbackups", "bad"));
        assert_true(labelled_processed(f, "jobs", "cluster-backup-bad"));
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);

        /* Fed back: the Pending condition an earlier sync wrote goes False. */
        fixture_free(f);
        f = fixture_new();
        claim(f, "backups");
        backup(f, "good", "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_feed(f, W_ETCD_BACKUPS), 1);
        job(f, "cluster-backup-good", "good", "Complete", "CompletionsReached");
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        expect_condition(f, "good", "BackupCompleted", "True", NULL);
        expect_condition(f, "good", "BackupPending", "False", NULL);
        assert_int_equal(fixture_feed(f, W_ETCD_BACKUPS), 2);
        assert_int_equal(fixture_feed(f, W_ETCD_JOBS), 1);
        /* Processed: nothing more to do. */
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(f->plan.n - fixture_count(f, INTENT_CONDITION), 0);
        fixture_free(f);
}

static void test_orphaned_job_deleted(void **state)
{
        Fixture *f = fixture_new();
        job(f, "cluster-backup-gone", "gone", NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        const Intent *del = fixture_find(f, INTENT_DELETE, "jobs", "cluster-backup-gone");
        assert_non_null(del);
        assert_string_equal(del->precondition_uid, "juid-cluster-backup-gone");
        fixture_free(f);
}

/* One watch holds every Job the operator runs in openshift-etcd: a periodic backup's and an S3
 * purge's have no EtcdBackup of BackupController's, and are not its orphans to delete. */
static void test_other_jobs_left_alone(void **state)
{
        Fixture *f = fixture_new();
        const char *apps[] = {JOB_APP_CRON_BACKUP, JOB_APP_S3_PURGE};
        for (size_t i = 0; i < ELEMENTSOF(apps); i++)
                fixture_addf(f, W_ETCD_JOBS,
                             "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                             "\"other-%zu\",\"namespace\":\"openshift-etcd\",\"uid\":\"juid-other-%zu\","
                             "\"labels\":{\"app\":\"%s\",\"backup-name\":\"gone\"}}}",
                             i, i, apps[i]);
        job(f, "cluster-backup-gone", "gone", NULL, NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 1);
        assert_non_null(fixture_find(f, INTENT_DELETE, "jobs", "cluster-backup-gone"));
        fixture_free(f);
}

static void test_long_names(void **state)
{
        /* 60 characters: a valid label value, but cluster-backup-<name> is too long for a Job
         * name; the Job gets a hashed name, the same on every sync. */
        Fixture *f = fixture_new();
        const char *name = "a-rather-long-backup-name-for-the-nightly-run-of-the-cluster";
        claim(f, "backups");
        backup(f, name, "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        const Intent *create = NULL;
        for (size_t k = 0; k < f->plan.n; k++)
                if (f->plan.intents[k].type == INTENT_CREATE)
                        create = &f->plan.intents[k];
        assert_non_null(create);
        _cleanup_free_ char *first = strdup(create->name);
        assert_true(strlen(first) <= 63);
        assert_true(startswith(first, "cluster-backup-"));
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_non_null(fixture_find(f, INTENT_CREATE, "jobs", first));
        fixture_free(f);

        /* Over 63: cannot label its Job; failed, with the fix. */
        f = fixture_new();
        claim(f, "backups");
        backup(f, "x123456789x123456789x123456789x123456789x123456789x123456789xyzw", "backups", NULL);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        expect_condition(f, "x123456789x123456789x123456789x123456789x123456789x123456789xyzw",
                         "BackupFailed", "True", "shorter name");
        fixture_free(f);
}

static void scheduled(Fixture *f, const char *name, const char *created, const char *job_uid)
{
        fixture_addf(
                f, W_ETCD_BACKUPS,
                "{\"apiVersion\":\"operator.openshift.io/v1alpha1\",\"kind\":\"EtcdBackup\",\"metadata\":"
                "{\"name\":\"%s\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"%s\",\"labels\":{\"state\":"
                "\"processed\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","
                "\"name\":\"%s\",\"uid\":\"%s\"}]},\"spec\":{\"pvcName\":\"backups\"}}",
                name, name, created, name, job_uid);
}

static void test_removal_of_backups_whose_job_is_gone(void **state)
{
        Fixture *f = fixture_new();
        usec_t now = 0;
        assert_int_equal(parse_rfc3339("2026-11-26T10:00:00Z", &now), 0);
        f->now = now;
        /* Its Job is there: kept. Its Job is gone: deleted. A Job of that name with another uid
         * (made again) is not its owner: deleted. Gone but made 30 s ago: kept (the cache may
         * not show a new Job yet). */
        scheduled(f, "nightly-1", "2026-11-26T09:00:00Z", "juid-nightly-1");
        scheduled(f, "nightly-2", "2026-11-26T09:10:00Z", "juid-nightly-2");
        scheduled(f, "nightly-3", "2026-11-26T09:20:00Z", "old-uid");
        scheduled(f, "nightly-4", "2026-11-26T09:59:30Z", "juid-nightly-4");
        /* nightly-2's name on a Job of another kind: not its Job, so it is gone. */
        fixture_addf(f, W_ETCD_JOBS,
                     "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                     "\"nightly-2\",\"namespace\":\"openshift-etcd\",\"uid\":\"juid-nightly-2\","
                     "\"labels\":{\"app\":\"" JOB_APP_S3_PURGE "\"}}}");
        for (int k = 1; k <= 3; k += 2)
                fixture_addf(f, W_ETCD_JOBS,
                             "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
                             "\"nightly-%d\",\"namespace\":\"openshift-etcd\",\"uid\":\"juid-nightly-%d\","
                             "\"labels\":{\"app\":\"cluster-backup-cronjob\"}}}",
                             k, k);
        assert_int_equal(fixture_sync(f, &controller_backup_removal), 0);
        assert_null(fixture_find(f, INTENT_DELETE, "etcdbackups", "nightly-1"));
        assert_non_null(fixture_find(f, INTENT_DELETE, "etcdbackups", "nightly-2"));
        assert_string_equal(fixture_find(f, INTENT_DELETE, "etcdbackups", "nightly-2")->precondition_uid,
                            "uid-nightly-2");
        assert_non_null(fixture_find(f, INTENT_DELETE, "etcdbackups", "nightly-3"));
        assert_null(fixture_find(f, INTENT_DELETE, "etcdbackups", "nightly-4"));
        /* An EtcdBackup someone made by hand (no owner) is never removed. */
        fixture_free(f);
        f = fixture_new();
        f->now = now;
        backup(f, "by-hand", "backups", "\"state\":\"processed\"");
        assert_int_equal(fixture_sync(f, &controller_backup_removal), 0);
        assert_int_equal(fixture_count(f, INTENT_DELETE), 0);
        fixture_free(f);
}

/* Every character that ends a JSON string or opens a member of its own (review H1, L4). */
#define HOSTILE "x\"}]},\"evil\":{\"a\":[1,\":\"]},\"y\":\"{"

/* The Job made for an EtcdBackup with these values: its shape, and the object. */
static char *job_shape(const char *name, const char *uid, const char *pvc, const char *image, cJSON **ret)
{
        Fixture *f = fixture_new();
        f->state.operator_image = image;
        cJSON *c = cJSON_CreateObject(), *b = cJSON_CreateObject();
        assert_non_null(c);
        assert_non_null(b);
        assert_int_equal(json_set_path_string(c, "apiVersion", "v1"), 0);
        assert_int_equal(json_set_path_string(c, "kind", "PersistentVolumeClaim"), 0);
        assert_int_equal(json_set_path_string(c, "metadata.name", pvc), 0);
        assert_int_equal(json_set_path_string(c, "metadata.namespace", "openshift-etcd"), 0);
        fixture_add_object(f, W_ETCD_PVCS, c);
        assert_int_equal(json_set_path_string(b, "apiVersion", "operator.openshift.io/v1alpha1"), 0);
        assert_int_equal(json_set_path_string(b, "kind", "EtcdBackup"), 0);
        assert_int_equal(json_set_path_string(b, "metadata.name", name), 0);
        assert_int_equal(json_set_path_string(b, "metadata.uid", uid), 0);
        assert_int_equal(json_set_path_string(b, "spec.pvcName", pvc), 0);
        fixture_add_object(f, W_ETCD_BACKUPS, b);
        assert_int_equal(fixture_sync(f, &controller_backup), 0);
        _cleanup_free_ char *job = strdup_printf("cluster-backup-%s", name);
        const Intent *create = fixture_find(f, INTENT_CREATE, "jobs", job);
        assert_non_null(create);
        char *shape = fixture_shape(create->object);
        *ret = cJSON_Duplicate(create->object, true);
        fixture_free(f);
        return shape;
}

static void test_values_stay_values(void **state)
{
        static const struct {
                const char *name, *uid, *pvc, *image;
        } cases[] = {
                {HOSTILE, "uid-1", "backups", "quay.io/ceo@sha256:1"},
                {"nightly", HOSTILE, "backups", "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", HOSTILE, "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", "backups", HOSTILE},
                /* Still JSON when printed into the text: a member of its own, not a parse error. */
                {"nightly", "uid-1\",\"evil\":\"1", "backups", "quay.io/ceo@sha256:1"},
        };
        cJSON *plain = NULL;
        _cleanup_free_ char *want = job_shape("nightly", "uid-1", "backups", "quay.io/ceo@sha256:1", &plain);
        cJSON_Delete(plain);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(cJSON_Deletep) cJSON *j = NULL;
                _cleanup_free_ char *got =
                        job_shape(cases[i].name, cases[i].uid, cases[i].pvc, cases[i].image, &j);
                if (!streq(got, want))
                        fail_msg("case %zu: the Job's shape changed:\n%s\nwanted:\n%s", i, got, want);
                assert_string_equal(json_get_string(j, "metadata.labels.backup-name"), cases[i].name);
                assert_string_equal(
                        json_get_string(cJSON_GetArrayItem(json_get_array(j, "metadata.ownerReferences"), 0),
                                        "uid"),
                        cases[i].uid);
                cJSON *pod = json_get(j, "spec.template.spec");
                assert_string_equal(json_get_string(cJSON_GetArrayItem(json_get_array(pod, "volumes"), 0),
                                                    "persistentVolumeClaim.claimName"),
                                    cases[i].pvc);
                cJSON *c = cJSON_GetArrayItem(json_get_array(pod, "containers"), 0);
                assert_string_equal(json_get_string(c, "image"), cases[i].image);
                const char *dir = json_string(cJSON_GetArrayItem(json_get_array(c, "command"), 3));
                _cleanup_free_ char *dir_want = strdup_printf(
                        "--backup-dir=/etc/kubernetes/cluster-backup/backup-%s-", cases[i].name);
                assert_true(dir && startswith(dir, dir_want));
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_backup_gets_a_job),
                cmocka_unit_test(test_one_at_a_time),
                cmocka_unit_test(test_missing_claim_fails_at_once),
                cmocka_unit_test(test_backup_to_s3),
                cmocka_unit_test(test_finished_jobs_reported),
                cmocka_unit_test(test_failure_named_from_pod),
                cmocka_unit_test(test_orphaned_job_deleted),
                cmocka_unit_test(test_other_jobs_left_alone),
                cmocka_unit_test(test_long_names),
                cmocka_unit_test(test_removal_of_backups_whose_job_is_gone),
                cmocka_unit_test(test_values_stay_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
