/* PeriodicBackupController as a table: Backups and claims in, CronJobs and
 * PeriodicBackupControllerDegraded out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/timeutil.h"
#include "controller-fixture.h"
#include "controllers/controllers.h"

static void backup(Fixture *f, const char *name, const char *etcd)
{
        fixture_addf(f, W_BACKUPS,
                     "{\"apiVersion\":\"config.openshift.io/"
                     "v1alpha1\",\"kind\":\"Backup\",\"metadata\":{\"name\":"
                     "\"%s\",\"uid\":\"uid-%s\"},\"spec\":{\"etcd\":{%s}}}",
                     name, name, etcd);
}

static void claim(Fixture *f, const char *name)
{
        fixture_addf(
                f, W_ETCD_PVCS,
                "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"openshift-etcd\"}}",
                name);
}

/* The command of the CronJob's container `which` ("initContainers" or "containers"), space-joined. */
static char *command_of(const cJSON *cj, const char *which)
{
        char path[128];
        (void) snprintf(path, sizeof path, "spec.jobTemplate.spec.template.spec.%s", which);
        cJSON *c = cJSON_GetArrayItem(json_get_array(cj, path), 0), *a;
        char *out = strdup("");
        JSON_ARRAY_FOREACH (a, json_get_array(c, "command")) {
                char *next = strdup_printf("%s%s%s", out, *out ? " " : "", json_string(a));
                free(out);
                out = next;
        }
        return out;
}

static void test_cronjob_from_backup(void **state)
{
        Fixture *f = fixture_new();
        f->state.operator_image = "quay.io/openshift/ceo@sha256:1";
        claim(f, "backups");
        backup(f, "nightly",
               "\"schedule\":\"0 3 * * *\",\"timeZone\":\"Europe/Berlin\",\"pvcName\":\"backups\","
               "\"retentionPolicy\":{\"retentionType\":\"RetentionSize\",\"retentionSize\":{"
               "\"maxSizeOfBackupsGb\":20}}");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "False", "AsExpected");
        const Intent *apply = fixture_find(f, INTENT_APPLY, "cronjobs", "nightly");
        assert_non_null(apply);
        cJSON *cj = apply->object;
        assert_string_equal(json_get_string(cj, "metadata.namespace"), "openshift-etcd");
        assert_string_equal(json_get_string(cj, "spec.schedule"), "0 3 * * *");
        assert_string_equal(json_get_string(cj, "spec.timeZone"), "Europe/Berlin");
        assert_string_equal(json_get_string(cj, "spec.concurrencyPolicy"), "Forbid");
        assert_string_equal(
                json_get_string(cJSON_GetArrayItem(json_get_array(cj, "metadata.ownerReferences"), 0),
                                "uid"),
                "uid-nightly");
        assert_string_equal(json_get_string(cj, "spec.jobTemplate.spec.template.spec.serviceAccountName"),
                            "etcd-backup-sa");
        _cleanup_free_ char *prune = command_of(cj, "initContainers");
        _cleanup_free_ char *request = command_of(cj, "containers");
        assert_string_equal(
                prune, "cluster-etcd-operator prune-backups --type=RetentionSize --maxSizeOfBackupsGb=20 "
                       "--backup-dir=/etc/kubernetes/cluster-backup");
        assert_string_equal(request, "cluster-etcd-operator request-backup --pvc-name=backups");
        cJSON *env =
                cJSON_GetArrayItem(json_get_array(cj, "spec.jobTemplate.spec.template.spec.containers"), 0);
        assert_string_equal(json_get_string(cJSON_GetArrayItem(json_get_array(env, "env"), 0),
                                            "valueFrom.fieldRef.fieldPath"),
                            "metadata.labels['batch.kubernetes.io/job-name']");

        /* Fed back, nothing more to write; a changed schedule is applied again. */
        assert_int_equal(fixture_feed(f, W_BACKUP_CRONJOBS), 1);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_null(fixture_find(f, INTENT_APPLY, "cronjobs", "nightly"));
        backup(f, "nightly", "\"schedule\":\"@hourly\",\"pvcName\":\"backups\"");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        apply = fixture_find(f, INTENT_APPLY, "cronjobs", "nightly");
        assert_non_null(apply);
        assert_string_equal(json_get_string(apply->object, "spec.schedule"), "@hourly");
        assert_null(json_get(apply->object, "spec.timeZone"));
        /* No retention policy given: upstream's default, the newest 15. */
        _cleanup_free_ char *dflt = command_of(apply->object, "initContainers");
        assert_non_null(strstr(dflt, "--type=RetentionNumber --maxNumberOfBackups=15"));
        fixture_free(f);
}

static void test_invalid_backups_degrade(void **state)
{
        static const struct {
                const char *name, *etcd, *message;
        } cases[] = {
                {"no-claim", "\"schedule\":\"@daily\",\"pvcName\":\"nope\"",
                 "backups/no-claim: spec.etcd.pvcName: persistentvolumeclaim openshift-etcd/nope not found"},
                {"empty-claim", "\"schedule\":\"@daily\"",
                 "backups/empty-claim: spec.etcd.pvcName is empty"},
                {"no-schedule", "\"pvcName\":\"backups\"",
                 "backups/no-schedule: spec.etcd.schedule is empty"},
                {"a-name-that-is-far-too-long-for-the-jobs-of-its-cronjob",
                 "\"schedule\":\"@daily\","
                 "\"pvcName\":\"backups\"",
                 "characters; the Jobs of its CronJob need it to be at most 52"},
                {"bad-type",
                 "\"schedule\":\"@daily\",\"pvcName\":\"backups\",\"retentionPolicy\":{"
                 "\"retentionType\":\"RetentionForever\"}",
                 "retentionType \"RetentionForever\" is not"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Fixture *f = fixture_new();
                claim(f, "backups");
                backup(f, cases[i].name, cases[i].etcd);
                assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
                fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "True", "InvalidBackup");
                const char *msg = fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message;
                if (!strstr(msg, cases[i].message))
                        fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].name, msg, cases[i].message);
                assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
                fixture_free(f);
        }
}

static void test_orphaned_cronjob_deleted(void **state)
{
        Fixture *f = fixture_new();
        fixture_add(f, W_BACKUP_CRONJOBS,
                    "{\"apiVersion\":\"batch/"
                    "v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"gone\",\"namespace\":"
                    "\"openshift-etcd\",\"uid\":\"cj-uid\",\"labels\":{\"app\":\"cluster-backup-cronjob\","
                    "\"backup-name\":\"gone\"}}}");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        const Intent *del = fixture_find(f, INTENT_DELETE, "cronjobs", "gone");
        assert_non_null(del);
        assert_string_equal(del->precondition_uid, "cj-uid");
        fixture_free(f);
}

#define ANN(extra)                                                                                          \
        "\"annotations\":{\"etcd.operator.openshift.io/s3-secret\":\"store\",\"etcd.operator.openshift.io/" \
        "s3-bucket\":\"etcd-backups\",\"etcd.operator.openshift.io/s3-prefix\":\"clusters/prod-1\"" extra   \
        "}"
#define GRACE_1H ",\"etcd.operator.openshift.io/s3-deletion-grace-period\":\"1h\""
#define SPEC                                                                                         \
        "\"spec\":{\"etcd\":{\"schedule\":\"@hourly\",\"pvcName\":\"backups\",\"retentionPolicy\":{" \
        "\"retentionType\":\"RetentionNumber\",\"retentionNumber\":{\"maxNumberOfBackups\":5}}}}"

static void store_secret(Fixture *f)
{
        fixture_add(
                f, W_ETCD_SECRETS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"store\",\"namespace\":"
                "\"openshift-etcd\"}}");
}

/* The finalizers a patch of Backup `name` sets; NULL when there is no such patch. */
static cJSON *patched_finalizers(Fixture *f, const char *name)
{
        const Intent *i = fixture_find(f, INTENT_PATCH, "backups", name);
        return i ? json_get(i->object, "metadata.finalizers") : NULL;
}

/* A terminating Backup with our finalizer, deleted `ago` before the fixture's now. */
static void deleted_backup(Fixture *f, usec_t ago)
{
        char when[64];
        (void) format_rfc3339(when, sizeof when, f->now - ago);
        fixture_addf(f, W_BACKUPS,
                     "{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\",\"metadata\":{"
                     "\"name\":\"nightly\",\"uid\":\"uid-nightly\",\"resourceVersion\":\"7\","
                     "\"deletionTimestamp\":\"%s\",\"finalizers\":[\"example.com/other\","
                     "\"etcd.operator.openshift.io/s3-backups\"]," ANN(GRACE_1H) "}," SPEC "}",
                     when);
}

static void purge_job(Fixture *f, const char *cond, usec_t finished_ago)
{
        char status[256] = "{}", when[64];
        if (cond)
                (void) snprintf(status, sizeof status,
                                "{\"conditions\":[{\"type\":\"%s\",\"status\":\"True\","
                                "\"lastTransitionTime\":\"%s\"}]}",
                                cond, format_rfc3339(when, sizeof when, f->now - finished_ago));
        fixture_addf(
                f, W_ETCD_JOBS,
                "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"s3-purge-nightly\","
                "\"namespace\":\"openshift-etcd\",\"uid\":\"puid\",\"labels\":{\"app\":\"etcd-backup-s3-"
                "purge\","
                "\"backup-name\":\"nightly\"}},\"status\":%s}",
                status);
}

static void test_backup_to_s3(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        fixture_addf(f, W_BACKUPS,
                     "{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\",\"metadata\":{"
                     "\"name\":\"nightly\",\"uid\":\"uid-nightly\",\"resourceVersion\":\"7\"," ANN(
                             "") "}," SPEC "}");
        /* The Secret missing: named, no CronJob; the finalizer is set all the same. */
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "True", "InvalidBackup");
        assert_non_null(strstr(fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message,
                               "secret openshift-etcd/store not found"));
        assert_null(fixture_find(f, INTENT_APPLY, "cronjobs", "nightly"));
        assert_true(json_array_has_string(patched_finalizers(f, "nightly"),
                                          "etcd.operator.openshift.io/s3-backups"));
        assert_string_equal(json_get_string(fixture_find(f, INTENT_PATCH, "backups", "nightly")->object,
                                            "metadata.resourceVersion"),
                            "7");

        store_secret(f);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "False", "AsExpected");
        const Intent *apply = fixture_find(f, INTENT_APPLY, "cronjobs", "nightly");
        assert_non_null(apply);
        _cleanup_free_ char *request = command_of(apply->object, "containers");
        /* LimitBased keeps what the retention policy keeps on the claim. */
        assert_string_equal(request,
                            "cluster-etcd-operator request-backup --pvc-name=backups --s3-secret=store "
                            "--s3-bucket=etcd-backups --s3-prefix=clusters/prod-1 "
                            "--s3-gc-policy=LimitBased --s3-max-backups=5");

        /* A bad annotation: named. */
        fixture_addf(f, W_BACKUPS,
                     "{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\",\"metadata\":{"
                     "\"name\":\"nightly\",\"uid\":\"uid-nightly\"," ANN(
                             ",\"etcd.operator.openshift.io/s3-deletion-grace-period\":\"soon\"") "}," SPEC
                                                                                                  "}");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_non_null(strstr(fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message,
                               "s3-deletion-grace-period \"soon\""));

        /* The store's annotations removed: the finalizer goes, the objects are kept. */
        fixture_addf(f, W_BACKUPS,
                     "{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\",\"metadata\":{"
                     "\"name\":\"nightly\",\"uid\":\"uid-nightly\",\"finalizers\":[\"example.com/other\","
                     "\"etcd.operator.openshift.io/s3-backups\"]}," SPEC "}");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        cJSON *fin = patched_finalizers(f, "nightly");
        assert_non_null(fin);
        assert_false(json_array_has_string(fin, "etcd.operator.openshift.io/s3-backups"));
        assert_true(json_array_has_string(fin, "example.com/other"));
        fixture_free(f);
}

static void test_deleted_backup_grace_then_purge(void **state)
{
        Fixture *f = fixture_new();
        f->state.operator_image = "quay.io/openshift/ceo@sha256:1";
        claim(f, "backups");
        store_secret(f);
        fixture_add(f, W_BACKUP_CRONJOBS,
                    "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"nightly\","
                    "\"namespace\":\"openshift-etcd\",\"uid\":\"cj-uid\",\"labels\":{\"app\":"
                    "\"cluster-backup-cronjob\",\"backup-name\":\"nightly\"}}}");

        /* Deleted 30 minutes ago, grace 1h: the CronJob goes at once, the objects stay. */
        deleted_backup(f, 30 * 60 * USEC_PER_SEC);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "cronjobs", "nightly"));
        assert_null(fixture_find(f, INTENT_CREATE, "jobs", "s3-purge-nightly"));
        assert_null(patched_finalizers(f, "nightly"));
        assert_true(f->plan.requeue_after >= 29 * 60 * USEC_PER_SEC &&
                    f->plan.requeue_after <= 30 * 60 * USEC_PER_SEC);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "False", "AsExpected");

        /* Past the grace period: the purge Job, then nothing more while it runs. */
        fixture_delete(f, W_BACKUP_CRONJOBS, "openshift-etcd", "nightly");
        deleted_backup(f, 61 * 60 * USEC_PER_SEC);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        const Intent *create = fixture_find(f, INTENT_CREATE, "jobs", "s3-purge-nightly");
        assert_non_null(create);
        cJSON *pod = json_get(create->object, "spec.template.spec");
        cJSON *c = cJSON_GetArrayItem(json_get_array(pod, "containers"), 0), *a;
        assert_true(cJSON_IsFalse(json_get(pod, "automountServiceAccountToken"))); /* review L13 */
        _cleanup_free_ char *cmd = strdup("");
        JSON_ARRAY_FOREACH (a, json_get_array(c, "command")) {
                char *next = strdup_printf("%s%s%s", cmd, *cmd ? " " : "", json_string(a));
                free(cmd);
                cmd = next;
        }
        assert_string_equal(cmd, "cluster-etcd-operator s3 purge --credentials-dir=/etc/etcd-backup-s3 "
                                 "--bucket=etcd-backups --prefix=clusters/prod-1");
        assert_string_equal(
                json_get_string(cJSON_GetArrayItem(json_get_array(pod, "volumes"), 0), "secret.secretName"),
                "store");
        assert_null(patched_finalizers(f, "nightly"));

        purge_job(f, NULL, 0);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_null(patched_finalizers(f, "nightly"));

        /* Failed a minute ago: said, retried 5 minutes after. */
        purge_job(f, "Failed", 60 * USEC_PER_SEC);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "True", "InvalidBackup");
        assert_null(fixture_find(f, INTENT_DELETE, "jobs", "s3-purge-nightly"));
        purge_job(f, "Failed", 6 * 60 * USEC_PER_SEC);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "jobs", "s3-purge-nightly"));

        /* Complete: the Job goes and the finalizer is lifted, the others kept. */
        purge_job(f, "Complete", 0);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_non_null(fixture_find(f, INTENT_DELETE, "jobs", "s3-purge-nightly"));
        cJSON *fin = patched_finalizers(f, "nightly");
        assert_non_null(fin);
        assert_false(json_array_has_string(fin, "etcd.operator.openshift.io/s3-backups"));
        assert_true(json_array_has_string(fin, "example.com/other"));
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "False", "AsExpected");

        /* The Secret gone before the purge: named, with the way out. */
        fixture_delete(f, W_ETCD_JOBS, "openshift-etcd", "s3-purge-nightly");
        fixture_delete(f, W_ETCD_SECRETS, "openshift-etcd", "store");
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        assert_int_equal(fixture_count(f, INTENT_CREATE), 0);
        assert_non_null(strstr(fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message,
                               "removing the finalizer"));
        fixture_free(f);
}

/* Every character that ends a JSON string or opens a member of its own: a value holding it
 * must come out as that one string, where it was meant to go, and add nothing (review H1). */
#define HOSTILE "x\"}]},\"evil\":{\"a\":[1,\":\"]},\"y\":\"{"

static cJSON *backup_object(const char *name, const char *uid, const char *schedule, const char *tz,
                            const char *pvc, const char *prefix)
{
        cJSON *b = cJSON_CreateObject();
        assert_non_null(b);
        assert_int_equal(json_set_path_string(b, "apiVersion", "config.openshift.io/v1alpha1"), 0);
        assert_int_equal(json_set_path_string(b, "kind", "Backup"), 0);
        assert_int_equal(json_set_path_string(b, "metadata.name", name), 0);
        assert_int_equal(json_set_path_string(b, "metadata.uid", uid), 0);
        if (prefix) {
                cJSON *ann = json_ensure_object(b, "metadata.annotations");
                assert_non_null(ann);
                assert_int_equal(json_set_string(ann, "etcd.operator.openshift.io/s3-secret", "store"), 0);
                assert_int_equal(
                        json_set_string(ann, "etcd.operator.openshift.io/s3-bucket", "etcd-backups"), 0);
                assert_int_equal(json_set_string(ann, "etcd.operator.openshift.io/s3-prefix", prefix), 0);
        }
        assert_int_equal(json_set_path_string(b, "spec.etcd.schedule", schedule), 0);
        if (tz)
                assert_int_equal(json_set_path_string(b, "spec.etcd.timeZone", tz), 0);
        assert_int_equal(json_set_path_string(b, "spec.etcd.pvcName", pvc), 0);
        return b;
}

static void claim_object(Fixture *f, const char *name)
{
        cJSON *c = cJSON_CreateObject();
        assert_non_null(c);
        assert_int_equal(json_set_path_string(c, "apiVersion", "v1"), 0);
        assert_int_equal(json_set_path_string(c, "kind", "PersistentVolumeClaim"), 0);
        assert_int_equal(json_set_path_string(c, "metadata.name", name), 0);
        assert_int_equal(json_set_path_string(c, "metadata.namespace", "openshift-etcd"), 0);
        fixture_add_object(f, W_ETCD_PVCS, c);
}

typedef struct Fields {
        const char *name, *uid, *tz, *pvc, *image;
} Fields;

/* The CronJob of a Backup with these fields (and a store), or a failure. */
static char *cronjob_shape(const Fields *v, cJSON **ret)
{
        Fixture *f = fixture_new();
        f->state.operator_image = v->image;
        claim_object(f, v->pvc);
        store_secret(f);
        fixture_add_object(f, W_BACKUPS, backup_object(v->name, v->uid, "0 3 * * *", v->tz, v->pvc, "p/q"));
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "False", "AsExpected");
        const Intent *apply = fixture_find(f, INTENT_APPLY, "cronjobs", v->name);
        assert_non_null(apply);
        char *shape = fixture_shape(apply->object);
        *ret = cJSON_Duplicate(apply->object, true);
        fixture_free(f);
        return shape;
}

static void test_values_stay_values(void **state)
{
        static const Fields plain = {"nightly", "uid-1", "Europe/Berlin", "backups", "quay.io/ceo@sha256:1"};
        static const Fields cases[] = {
                {HOSTILE, "uid-1", "Europe/Berlin", "backups", "quay.io/ceo@sha256:1"},
                {"nightly", HOSTILE, "Europe/Berlin", "backups", "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", HOSTILE, "backups", "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", "Europe/Berlin", HOSTILE, "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", "Europe/Berlin", "backups", HOSTILE},
                /* Still JSON when printed into the text: a member of its own, not a parse error. */
                {"nightly", "uid-1", "UTC\",\"evil\":\"1", "backups", "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1\",\"evil\":\"1", "Europe/Berlin", "backups", "quay.io/ceo@sha256:1"},
        };
        cJSON *want_obj = NULL;
        _cleanup_free_ char *want = cronjob_shape(&plain, &want_obj);
        cJSON_Delete(want_obj);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Fields *v = &cases[i];
                _cleanup_(cJSON_Deletep) cJSON *cj = NULL;
                _cleanup_free_ char *got = cronjob_shape(v, &cj);
                if (!streq(got, want))
                        fail_msg("case %zu: the CronJob's shape changed:\n%s\nwanted:\n%s", i, got, want);
                assert_string_equal(json_get_string(cj, "metadata.name"), v->name);
                assert_string_equal(json_get_string(cj, "metadata.labels.backup-name"), v->name);
                assert_string_equal(
                        json_get_string(
                                cJSON_GetArrayItem(json_get_array(cj, "metadata.ownerReferences"), 0),
                                "uid"),
                        v->uid);
                assert_string_equal(json_get_string(cj, "spec.timeZone"), v->tz);
                assert_string_equal(json_get_string(cj, "spec.schedule"), "0 3 * * *");
                cJSON *vol = cJSON_GetArrayItem(
                        json_get_array(cj, "spec.jobTemplate.spec.template.spec.volumes"), 0);
                assert_string_equal(json_get_string(vol, "persistentVolumeClaim.claimName"), v->pvc);
                cJSON *c = cJSON_GetArrayItem(
                        json_get_array(cj, "spec.jobTemplate.spec.template.spec.containers"), 0);
                assert_string_equal(json_get_string(c, "image"), v->image);
                _cleanup_free_ char *arg = strdup_printf("--pvc-name=%s", v->pvc);
                assert_string_equal(json_string(cJSON_GetArrayItem(json_get_array(c, "command"), 2)), arg);
        }
}

/* The purge Job of a deleted Backup past its grace period, built from these fields. */
static char *purge_shape(const Fields *v, cJSON **ret)
{
        Fixture *f = fixture_new();
        char when[64];
        f->state.operator_image = v->image;
        store_secret(f);
        cJSON *b = backup_object(v->name, v->uid, "@daily", NULL, "backups", "clusters/prod-1");
        assert_int_equal(
                json_set_path_string(b, "metadata.deletionTimestamp",
                                     format_rfc3339(when, sizeof when, f->now - 2 * 3600 * USEC_PER_SEC)),
                0);
        cJSON *fin = cJSON_AddArrayToObject(json_get_object(b, "metadata"), "finalizers");
        assert_non_null(fin);
        cJSON_AddItemToArray(fin, cJSON_CreateString("etcd.operator.openshift.io/s3-backups"));
        assert_int_equal(json_set_string(json_get_object(b, "metadata.annotations"),
                                         "etcd.operator.openshift.io/s3-deletion-grace-period", "1h"),
                         0);
        fixture_add_object(f, W_BACKUPS, b);
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        _cleanup_free_ char *name = strdup_printf("s3-purge-%s", v->name);
        const Intent *create = fixture_find(f, INTENT_CREATE, "jobs", name);
        assert_non_null(create);
        char *shape = fixture_shape(create->object);
        *ret = cJSON_Duplicate(create->object, true);
        fixture_free(f);
        return shape;
}

static void test_purge_job_values_stay_values(void **state)
{
        static const Fields plain = {"nightly", "uid-1", NULL, NULL, "quay.io/ceo@sha256:1"};
        static const Fields cases[] = {
                {HOSTILE, "uid-1", NULL, NULL, "quay.io/ceo@sha256:1"},
                {"nightly", "uid-1", NULL, NULL, HOSTILE},
        };
        cJSON *want_obj = NULL;
        _cleanup_free_ char *want = purge_shape(&plain, &want_obj);
        cJSON_Delete(want_obj);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(cJSON_Deletep) cJSON *job = NULL;
                _cleanup_free_ char *got = purge_shape(&cases[i], &job);
                if (!streq(got, want))
                        fail_msg("case %zu: the purge Job's shape changed:\n%s\nwanted:\n%s", i, got, want);
                assert_string_equal(json_get_string(job, "metadata.labels.backup-name"), cases[i].name);
                cJSON *c = cJSON_GetArrayItem(json_get_array(job, "spec.template.spec.containers"), 0);
                assert_string_equal(json_get_string(c, "image"), cases[i].image);
                assert_string_equal(json_string(cJSON_GetArrayItem(json_get_array(c, "command"), 5)),
                                    "--prefix=clusters/prod-1");
        }
}

/* A schedule that is not five cron fields or a macro of the CRD never reaches a CronJob; the
 * condition names the field and the fix. The first is the review's: it passes the CRD's
 * pattern (whose @-branch is anchored only at the start). */
static void test_bad_schedule_refused(void **state)
{
        static const char *const schedules[] = {
                "@daily\",\"jobTemplate\":{\"spec\":{}},\"x\":{\"y\":\"",
                "@daily ",
                "@midnight",
                "@every 1h",
                "0 3 * *",
                "0 3 * * * *",
                "60 * * * *",
                "* 24 * * *",
                "0 0 0 * *",
                "0 0 * 13 *",
                "0 0 * * 7",
                "*/0 * * * *",
                "5-1 * * * *",
                "0 3 * * MON-FRI\n",
                "0 3 * * \"",
        };
        for (size_t i = 0; i < ELEMENTSOF(schedules); i++) {
                Fixture *f = fixture_new();
                claim(f, "backups");
                fixture_add_object(f, W_BACKUPS,
                                   backup_object("nightly", "uid-1", schedules[i], NULL, "backups", NULL));
                assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
                fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "True", "InvalidBackup");
                const char *msg = fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message;
                if (!strstr(msg, "backups/nightly: spec.etcd.schedule is not a cron schedule") ||
                    !strstr(msg, "give five fields"))
                        fail_msg("schedule %zu: \"%s\"", i, msg);
                assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
                fixture_free(f);
        }
}

/* A prefix with a quote (which the old check let through) is named, and makes no CronJob. */
static void test_unsafe_prefix_refused(void **state)
{
        Fixture *f = fixture_new();
        claim(f, "backups");
        store_secret(f);
        fixture_add_object(f, W_BACKUPS,
                           backup_object("nightly", "uid-1", "@daily", NULL, "backups", "p\",\"--evil=1"));
        assert_int_equal(fixture_sync(f, &controller_periodic_backup), 0);
        fixture_expect_condition(f, "PeriodicBackupControllerDegraded", "True", "InvalidBackup");
        assert_non_null(strstr(fixture_condition(f, "PeriodicBackupControllerDegraded")->cond_message,
                               "annotation etcd.operator.openshift.io/s3-prefix"));
        assert_int_equal(fixture_count(f, INTENT_APPLY), 0);
        fixture_free(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cronjob_from_backup),
                cmocka_unit_test(test_invalid_backups_degrade),
                cmocka_unit_test(test_orphaned_cronjob_deleted),
                cmocka_unit_test(test_backup_to_s3),
                cmocka_unit_test(test_deleted_backup_grace_then_purge),
                cmocka_unit_test(test_values_stay_values),
                cmocka_unit_test(test_purge_job_values_stay_values),
                cmocka_unit_test(test_bad_schedule_refused),
                cmocka_unit_test(test_unsafe_prefix_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
