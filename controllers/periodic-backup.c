/* PeriodicBackupController: each Backup (config.openshift.io/v1alpha1, a
 * schedule with a retention policy) becomes CronJob openshift-etcd/<name>,
 * as upstream's (dr-and-day2.md section 3). At each scheduled time its pod
 * (service account etcd-backup-sa, on a master) prunes the claim to the
 * retention policy (`prune-backups`) and then asks for one backup
 * (`request-backup`: an EtcdBackup named after the pod's Job and owned by
 * it), which the BackupController carries out. One Job at a time
 * (concurrencyPolicy Forbid), the last 5 successful and 10 failed Jobs
 * kept.
 *
 * Every scheduled backup has a retention policy: none given is upstream's
 * default, the newest 15 (the removed upgrade backups filled disks for
 * want of one). A Backup this controller cannot turn into a CronJob (no
 * claim, a claim that does not exist, a name too long for the Jobs the
 * CronJob makes) gets no CronJob and makes PeriodicBackupControllerDegraded
 * say which field to fix; one the API server refuses (a schedule or time
 * zone it does not accept) does the same through the failed write. A
 * CronJob whose Backup is gone is deleted (the garbage collector would do
 * it through the owner reference; this does not wait for it). Without the
 * Backup CRD (the feature is off) the informer is empty and nothing
 * happens. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define CRON_APP_LABEL      "cluster-backup-cronjob"
#define BACKUP_DIR          "/etc/kubernetes/cluster-backup"
#define DEGRADED_COND       "PeriodicBackupControllerDegraded"
#define DEFAULT_MAX_NUMBER  15
#define DEFAULT_MAX_SIZE_GB 10
#define CRONJOB_NAME_MAX    52 /* a CronJob's Jobs add 11 characters and must fit 63 */
#define SUCCESSFUL_HISTORY  5
#define FAILED_HISTORY      10

/* The prune-backups arguments for the Backup's retention policy, or an error naming the field. */
static int retention_args(const cJSON *policy, char *buf, size_t n, char *why, size_t wn)
{
        const char *type = json_get_string(policy, "retentionType");
        int64_t v = 0;

        if (!type || !*type || streq(type, "RetentionNumber")) {
                if (json_get_int64(policy, "retentionNumber.maxNumberOfBackups", &v) < 0)
                        v = DEFAULT_MAX_NUMBER;
                if (v < 1) {
                        (void) snprintf(why, wn,
                                        "spec.etcd.retentionPolicy.retentionNumber.maxNumberOfBackups "
                                        "is %" PRId64 ": keep at least 1",
                                        v);
                        return -EINVAL;
                }
                (void) snprintf(buf, n, "--type=RetentionNumber --maxNumberOfBackups=%" PRId64, v);
                return 0;
        }
        if (streq(type, "RetentionSize")) {
                if (json_get_int64(policy, "retentionSize.maxSizeOfBackupsGb", &v) < 0)
                        v = DEFAULT_MAX_SIZE_GB;
                if (v < 1) {
                        (void) snprintf(why, wn,
                                        "spec.etcd.retentionPolicy.retentionSize.maxSizeOfBackupsGb "
                                        "is %" PRId64 ": keep at least 1 GiB",
                                        v);
                        return -EINVAL;
                }
                (void) snprintf(buf, n, "--type=RetentionSize --maxSizeOfBackupsGb=%" PRId64, v);
                return 0;
        }
        (void) snprintf(
                why, wn,
                "spec.etcd.retentionPolicy.retentionType \"%s\" is not RetentionNumber or RetentionSize",
                type);
        return -EINVAL;
}

static cJSON *cronjob_for(const SyncContext *ctx, const KubeObject *backup, const char *schedule,
                          const char *tz, const char *pvc, const char *retention)
{
        _cleanup_(cJSON_Deletep) cJSON *args = cJSON_CreateArray();
        _cleanup_free_ char *copy = strdup(retention);
        const char *image = strempty(op_state(ctx)->operator_image);
        cJSON *cj = NULL;

        if (!args || !copy)
                return NULL;
        /* prune-backups --type=... --max...=N --backup-dir=DIR */
        cJSON_AddItemToArray(args, cJSON_CreateString("cluster-etcd-operator"));
        cJSON_AddItemToArray(args, cJSON_CreateString("prune-backups"));
        for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
                cJSON_AddItemToArray(args, cJSON_CreateString(tok));
        cJSON_AddItemToArray(args, cJSON_CreateString("--backup-dir=" BACKUP_DIR));
        _cleanup_free_ char *prune = cJSON_PrintUnformatted(args);
        _cleanup_free_ char *json = strdup_printf(
                "{\"apiVersion\":\"batch/"
                "v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                "\"" NS_ETCD "\",\"labels\":{\"app\":\"" CRON_APP_LABEL "\",\"backup-name\":\"%s\"},"
                "\"ownerReferences\":[{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\","
                "\"name\":\"%s\",\"uid\":\"%s\"}]},\"spec\":{\"schedule\":\"%s\",%s%s%s"
                "\"concurrencyPolicy\":\"Forbid\",\"successfulJobsHistoryLimit\":%d,"
                "\"failedJobsHistoryLimit\":%d,\"jobTemplate\":{\"metadata\":{\"labels\":{\"app\":"
                "\"" CRON_APP_LABEL "\",\"backup-name\":\"%s\"}},\"spec\":{\"backoffLimit\":0,\"template\":{"
                "\"metadata\":{\"labels\":{\"app\":\"" CRON_APP_LABEL
                "\",\"backup-name\":\"%s\"}},\"spec\":{"
                "\"serviceAccountName\":\"etcd-backup-sa\",\"restartPolicy\":\"Never\","
                "\"priorityClassName\":"
                "\"system-cluster-critical\",\"nodeSelector\":{\"node-role.kubernetes.io/master\":\"\"},"
                "\"tolerations\":[{\"operator\":\"Exists\"}],\"initContainers\":[{\"name\":\"prune\","
                "\"image\":\"%s\",\"imagePullPolicy\":\"IfNotPresent\",\"terminationMessagePolicy\":"
                "\"FallbackToLogsOnError\",\"command\":%s,\"volumeMounts\":[{\"name\":\"backup-dir\","
                "\"mountPath\":\"" BACKUP_DIR
                "\"}]}],\"containers\":[{\"name\":\"request-backup\",\"image\":"
                "\"%s\",\"imagePullPolicy\":\"IfNotPresent\",\"terminationMessagePolicy\":"
                "\"FallbackToLogsOnError\",\"command\":[\"cluster-etcd-operator\",\"request-backup\","
                "\"--pvc-name=%s\"],\"env\":[{\"name\":\"MY_JOB_NAME\",\"valueFrom\":{\"fieldRef\":{"
                "\"fieldPath\":\"metadata.labels['batch.kubernetes.io/job-name']\"}}},{\"name\":"
                "\"MY_JOB_UID\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
                "\"metadata.labels['batch.kubernetes.io/controller-uid']\"}}}],\"resources\":{\"requests\":"
                "{\"cpu\":\"5m\",\"memory\":\"30Mi\"}}}],\"volumes\":[{\"name\":\"backup-dir\","
                "\"persistentVolumeClaim\":{\"claimName\":\"%s\"}}]}}}}}}",
                backup->name, backup->name, backup->name, strempty(kube_object_uid(backup)), schedule,
                tz ? "\"timeZone\":\"" : "", tz ? tz : "", tz ? "\"," : "", SUCCESSFUL_HISTORY,
                FAILED_HISTORY, backup->name, backup->name, image, strempty(prune), image, pvc, pvc);
        if (json && prune)
                (void) json_parse(json, strlen(json), &cj);
        return cj;
}

/* Both absent, or equal (cJSON_Compare calls two absent fields different). */
static bool same(const cJSON *a, const cJSON *b)
{
        return (!a && !b) || cJSON_Compare(a, b, true);
}

/* The cached CronJob already has the spec we want (the server adds defaults of its own). */
static bool cronjob_current(const KubeObject *have, const cJSON *want)
{
        static const char *const fields[] = {"schedule", "timeZone", "concurrencyPolicy",
                                             "successfulJobsHistoryLimit", "failedJobsHistoryLimit"};
        cJSON *hs = json_get_object(have->json, "spec"), *ws = json_get_object(want, "spec");
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (!same(cJSON_GetObjectItemCaseSensitive(hs, fields[i]),
                          cJSON_GetObjectItemCaseSensitive(ws, fields[i])))
                        return false;
        cJSON *hp = json_get_object(hs, "jobTemplate.spec.template.spec"),
              *wp = json_get_object(ws, "jobTemplate.spec.template.spec");
        static const char *const pod_fields[] = {"initContainers", "containers", "volumes"};
        for (size_t i = 0; i < ELEMENTSOF(pod_fields); i++) {
                cJSON *h = cJSON_GetObjectItemCaseSensitive(hp, pod_fields[i]),
                      *w = cJSON_GetObjectItemCaseSensitive(wp, pod_fields[i]);
                /* Compare what we set, container by container, by name and command and image. */
                if (cJSON_GetArraySize(h) != cJSON_GetArraySize(w))
                        return false;
                for (int k = 0; k < cJSON_GetArraySize(w); k++) {
                        cJSON *hc = cJSON_GetArrayItem(h, k), *wc = cJSON_GetArrayItem(w, k);
                        static const char *const keys[] = {"name", "image", "command",
                                                           "persistentVolumeClaim"};
                        for (size_t j = 0; j < ELEMENTSOF(keys); j++)
                                if (!same(cJSON_GetObjectItemCaseSensitive(hc, keys[j]),
                                          cJSON_GetObjectItemCaseSensitive(wc, keys[j])))
                                        return false;
                }
        }
        return true;
}

static int sync_periodic_backup(const SyncContext *ctx, Plan *p)
{
        _cleanup_free_ const KubeObject **backups = NULL, **cronjobs = NULL;
        size_t n_backups = 0, n_cronjobs = 0;
        char problem[512] = "";
        size_t n_problems = 0;
        int r;

        if ((r = op_list(ctx, W_BACKUPS, &backups, &n_backups)) < 0 ||
            (r = op_list(ctx, W_BACKUP_CRONJOBS, &cronjobs, &n_cronjobs)) < 0)
                return r;

        for (size_t i = 0; i < n_backups; i++) {
                const KubeObject *b = backups[i];
                const char *schedule = json_get_string(b->json, "spec.etcd.schedule");
                const char *tz = json_get_string(b->json, "spec.etcd.timeZone");
                const char *pvc = json_get_string(b->json, "spec.etcd.pvcName");
                char retention[128], why[384] = "";

                if (json_get_string(b->json, "metadata.deletionTimestamp"))
                        continue;
                if (strlen(b->name) > CRONJOB_NAME_MAX)
                        (void) snprintf(
                                why, sizeof why,
                                "the name is %zu characters; the Jobs of its CronJob need it to be at "
                                "most %d: make the Backup again with a shorter name",
                                strlen(b->name), CRONJOB_NAME_MAX);
                else if (!schedule || !*schedule)
                        (void) snprintf(why, sizeof why,
                                        "spec.etcd.schedule is empty: give a cron schedule "
                                        "(\"0 */2 * * *\", \"@daily\")");
                else if (!pvc || !*pvc)
                        (void) snprintf(
                                why, sizeof why,
                                "spec.etcd.pvcName is empty: name a PersistentVolumeClaim in " NS_ETCD
                                " (backups without a claim are not supported)");
                else if (!op_get(ctx, W_ETCD_PVCS, NS_ETCD, pvc))
                        (void) snprintf(
                                why, sizeof why,
                                "spec.etcd.pvcName: persistentvolumeclaim %s/%s not found: create it",
                                NS_ETCD, pvc);
                else
                        (void) retention_args(json_get_object(b->json, "spec.etcd.retentionPolicy"),
                                              retention, sizeof retention, why, sizeof why);
                if (why[0]) {
                        if (n_problems++ == 0)
                                (void) snprintf(problem, sizeof problem, "backups/%s: %s", b->name, why);
                        continue;
                }
                _cleanup_(cJSON_Deletep) cJSON *want = cronjob_for(ctx, b, schedule, tz, pvc, retention);
                if (!want)
                        return -ENOMEM;
                const KubeObject *have = op_get(ctx, W_BACKUP_CRONJOBS, NS_ETCD, b->name);
                if (!have || !cronjob_current(have, want)) {
                        log_info("%s cronjob %s/%s (schedule \"%s\"%s%s, claim "
                                 "%s, %s)",
                                 have ? "updating" : "creating", NS_ETCD, b->name, schedule,
                                 tz ? " in " : "", strempty(tz), pvc, retention);
                        plan_apply(p, &KUBE_CRONJOBS, want);
                }
        }
        /* CronJobs of Backups that are gone. */
        for (size_t i = 0; i < n_cronjobs; i++) {
                const char *owner = json_get_string(cronjobs[i]->json, "metadata.labels.backup-name");
                if (json_get_string(cronjobs[i]->json, "metadata.deletionTimestamp") ||
                    (owner && op_get(ctx, W_BACKUPS, NULL, owner)))
                        continue;
                log_info("cronjob %s/%s belongs to no Backup: deleting it", NS_ETCD, cronjobs[i]->name);
                plan_delete(p, &KUBE_CRONJOBS, NS_ETCD, cronjobs[i]->name, kube_object_uid(cronjobs[i]));
        }
        if (n_problems)
                plan_condition(p, DEGRADED_COND, "True", "InvalidBackup", "%s%s", problem,
                               n_problems > 1 ? " (and more Backups)" : "");
        else
                plan_condition(p, DEGRADED_COND, "False", "AsExpected", "%s", "");
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_BACKUPS), OP_WATCH(W_BACKUP_CRONJOBS),
                                           OP_WATCH(W_ETCD_PVCS)};

const ControllerSpec controller_periodic_backup = {
        .name = "PeriodicBackupController",
        .degraded_condition = DEGRADED_COND,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_periodic_backup,
};
