/* PeriodicBackupController as a table: Backups and claims in, CronJobs and
 * PeriodicBackupControllerDegraded out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cronjob_from_backup),
                cmocka_unit_test(test_invalid_backups_degrade),
                cmocka_unit_test(test_orphaned_cronjob_deleted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
