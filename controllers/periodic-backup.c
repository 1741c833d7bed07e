/* PeriodicBackupController: each Backup (config.openshift.io/v1alpha1, a
 * schedule with a retention policy) becomes CronJob openshift-etcd/<name>,
 * as upstream's (pkg/operator/periodicbackupcontroller). At each scheduled time its pod
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
 * CronJob makes, a schedule that is not five cron fields or one of the
 * CRD's @-macros: base/cron.h) gets no CronJob and makes
 * PeriodicBackupControllerDegraded say which field to fix; one the API
 * server refuses (a time zone it does not know) does the same through the
 * failed write. The CRD's own pattern does not hold the schedule: its
 * @-macro branch is anchored only at the start. The objects are built from
 * constant skeletons with cJSON, never by printing a Backup's values into
 * JSON text. A
 * CronJob whose Backup is gone is deleted (the garbage collector would do
 * it through the owner reference; this does not wait for it). Without the
 * Backup CRD (the feature is off) the informer is empty and nothing
 * happens.
 *
 * Beyond upstream, a Backup may also send its backups to an S3-compatible
 * store (the etcd.operator.openshift.io/s3-* annotations, base/contract.h):
 * the CronJob passes the store on (request-backup), every upload is
 * followed by the store's garbage collection, and the Backup holds a
 * finalizer. Deleted, it takes no more backups (its CronJob goes at once)
 * and its objects stay for the grace period (s3-deletion-grace-period,
 * 72h by default, counted from the deletion; shortened by annotating the
 * terminating Backup), as Gardener's BackupEntry keeps a deleted shoot's
 * backups; then Job s3-purge-<name> deletes everything under the prefix and
 * the finalizer goes. A purge that fails is named in the Degraded
 * condition and retried after 5 minutes. */
#include "base/cron.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define CRON_APP_LABEL      JOB_APP_CRON_BACKUP
#define BACKUP_DIR          "/etc/kubernetes/cluster-backup"
#define DEGRADED_COND       "PeriodicBackupControllerDegraded"
#define DEFAULT_MAX_NUMBER  15
#define DEFAULT_MAX_SIZE_GB 10
#define CRONJOB_NAME_MAX    52 /* a CronJob's Jobs add 11 characters and must fit 63 */
#define SUCCESSFUL_HISTORY  5
#define FAILED_HISTORY      10
#define PURGE_APP_LABEL     JOB_APP_S3_PURGE
#define PURGE_DEADLINE_S    900
#define PURGE_RETRY         (5 * 60 * USEC_PER_SEC)
#define S3_CREDENTIALS_DIR  "/etc/etcd-backup-s3"

/* The prune-backups arguments for the Backup's retention policy, or an error naming the field. */
static int retention_args(const cJSON *policy, char *buf, size_t n, unsigned *ret_keep, char *why, size_t wn)
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
                *ret_keep = (unsigned) MIN(v, (int64_t) 100000);
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
                *ret_keep = DEFAULT_MAX_NUMBER; /* the store counts backups, not bytes */
                return 0;
        }
        (void) snprintf(
                why, wn,
                "spec.etcd.retentionPolicy.retentionType \"%s\" is not RetentionNumber or RetentionSize",
                type);
        return -EINVAL;
}

/* request-backup's store flags appended to `cmd` (nothing without a store). */
static int add_store_args(cJSON *cmd, const BackupStore *st, unsigned keep)
{
        if (!st)
                return 0;
        _cleanup_free_ char *a_secret = strdup_printf("--s3-secret=%s", st->secret),
                            *a_bucket = strdup_printf("--s3-bucket=%s", st->bucket),
                            *a_prefix = strdup_printf("--s3-prefix=%s", st->prefix),
                            *a_gc = strdup_printf("--s3-gc-policy=%s", st->gc_policy),
                            *a_max = strdup_printf("--s3-max-backups=%u",
                                                   st->max_backups ? st->max_backups : keep);
        const char *const args[] = {a_secret, a_bucket, a_prefix, a_gc, a_max};
        for (size_t i = 0; i < ELEMENTSOF(args); i++)
                if (!args[i] || !cJSON_AddItemToArray(cmd, cJSON_CreateString(args[i])))
                        return -ENOMEM;
        return 0;
}

/* The CronJob's constant parts; every value from a Backup is set with cJSON, never printed into
 * JSON text (a schedule or a prefix holding `"` would otherwise add fields of its own). */
static const char cronjob_skeleton[] =
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{\"name\":\"\",\"namespace\":"
        "\"" NS_ETCD "\",\"labels\":{\"app\":\"" CRON_APP_LABEL "\",\"backup-name\":\"\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"config.openshift.io/v1alpha1\",\"kind\":\"Backup\","
        "\"name\":\"\",\"uid\":\"\"}]},\"spec\":{\"schedule\":\"\",\"concurrencyPolicy\":\"Forbid\","
        "\"successfulJobsHistoryLimit\":0,\"failedJobsHistoryLimit\":0,\"jobTemplate\":{\"metadata\":{"
        "\"labels\":{\"app\":\"" CRON_APP_LABEL "\",\"backup-name\":\"\"}},\"spec\":{\"backoffLimit\":0,"
        "\"template\":{\"metadata\":{\"labels\":{\"app\":\"" CRON_APP_LABEL "\",\"backup-name\":\"\"}},"
        "\"spec\":{\"serviceAccountName\":\"etcd-backup-sa\",\"restartPolicy\":\"Never\","
        "\"priorityClassName\":\"system-cluster-critical\",\"nodeSelector\":{"
        "\"node-role.kubernetes.io/master\":\"\"},\"tolerations\":[{\"operator\":\"Exists\"}],"
        "\"initContainers\":[{\"name\":\"prune\",\"image\":\"\",\"imagePullPolicy\":\"IfNotPresent\","
        "\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"command\":[],\"volumeMounts\":[{"
        "\"name\":\"backup-dir\",\"mountPath\":\"" BACKUP_DIR "\"}]}],\"containers\":[{\"name\":"
        "\"request-backup\",\"image\":\"\",\"imagePullPolicy\":\"IfNotPresent\","
        "\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"command\":[],\"env\":[{\"name\":"
        "\"MY_JOB_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "\"metadata.labels['batch.kubernetes.io/job-name']\"}}},{\"name\":\"MY_JOB_UID\",\"valueFrom\":{"
        "\"fieldRef\":{\"fieldPath\":\"metadata.labels['batch.kubernetes.io/controller-uid']\"}}}],"
        "\"resources\":{\"requests\":{\"cpu\":\"5m\",\"memory\":\"30Mi\"}}}],\"volumes\":[{\"name\":"
        "\"backup-dir\",\"persistentVolumeClaim\":{\"claimName\":\"\"}}]}}}}}}";

#define POD_SPEC "spec.jobTemplate.spec.template.spec"

static cJSON *cronjob_for(const SyncContext *ctx, const KubeObject *backup, const char *schedule,
                          const char *tz, const char *pvc, const char *retention, const BackupStore *st,
                          unsigned keep)
{
        _cleanup_(cJSON_Deletep) cJSON *cj = NULL;
        _cleanup_free_ char *copy = strdup(retention);
        _cleanup_free_ char *pvc_arg = strdup_printf("--pvc-name=%s", pvc);
        const char *image = strempty(op_state(ctx)->operator_image);

        if (!copy || !pvc_arg || json_parse(cronjob_skeleton, strlen(cronjob_skeleton), &cj) < 0)
                return NULL;
        cJSON *prune = json_get_array(cJSON_GetArrayItem(json_get_array(cj, POD_SPEC ".initContainers"), 0),
                                      "command");
        cJSON *request =
                json_get_array(cJSON_GetArrayItem(json_get_array(cj, POD_SPEC ".containers"), 0), "command");
        if (!prune || !request)
                return NULL;
        /* prune-backups --type=... --max...=N --backup-dir=DIR */
        const char *const prune_head[] = {"cluster-etcd-operator", "prune-backups"};
        for (size_t i = 0; i < ELEMENTSOF(prune_head); i++)
                if (!cJSON_AddItemToArray(prune, cJSON_CreateString(prune_head[i])))
                        return NULL;
        for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
                if (!cJSON_AddItemToArray(prune, cJSON_CreateString(tok)))
                        return NULL;
        const char *const request_head[] = {"cluster-etcd-operator", "request-backup", pvc_arg};
        for (size_t i = 0; i < ELEMENTSOF(request_head); i++)
                if (!cJSON_AddItemToArray(request, cJSON_CreateString(request_head[i])))
                        return NULL;
        if (!cJSON_AddItemToArray(prune, cJSON_CreateString("--backup-dir=" BACKUP_DIR)) ||
            add_store_args(request, st, keep) < 0)
                return NULL;
        if (json_set_path_string(cj, "metadata.name", backup->name) < 0 ||
            json_set_path_string(cj, "metadata.labels.backup-name", backup->name) < 0 ||
            json_set_path_string(cj, "metadata.ownerReferences.0.name", backup->name) < 0 ||
            json_set_path_string(cj, "metadata.ownerReferences.0.uid", strempty(kube_object_uid(backup))) <
                    0 ||
            json_set_path_string(cj, "spec.schedule", schedule) < 0 ||
            (tz && json_set_path_string(cj, "spec.timeZone", tz) < 0) ||
            json_set_path_number(cj, "spec.successfulJobsHistoryLimit", SUCCESSFUL_HISTORY) < 0 ||
            json_set_path_number(cj, "spec.failedJobsHistoryLimit", FAILED_HISTORY) < 0 ||
            json_set_path_string(cj, "spec.jobTemplate.metadata.labels.backup-name", backup->name) < 0 ||
            json_set_path_string(cj, "spec.jobTemplate.spec.template.metadata.labels.backup-name",
                                 backup->name) < 0 ||
            json_set_path_string(cj, POD_SPEC ".initContainers.0.image", image) < 0 ||
            json_set_path_string(cj, POD_SPEC ".containers.0.image", image) < 0 ||
            json_set_path_string(cj, POD_SPEC ".volumes.0.persistentVolumeClaim.claimName", pvc) < 0)
                return NULL;
        return TAKE_PTR(cj);
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

static bool has_finalizer(const KubeObject *b)
{
        return json_array_has_string(json_get_array(b->json, "metadata.finalizers"), FINALIZER_S3_BACKUPS);
}

/* Adds (or removes) our finalizer, keeping the others; the resourceVersion makes it a
 * precondition, so a change made meanwhile is not lost. */
static int set_finalizer(Plan *p, const KubeObject *b, bool on)
{
        _cleanup_(cJSON_Deletep) cJSON *patch = cJSON_CreateObject();
        cJSON *md = patch ? cJSON_AddObjectToObject(patch, "metadata") : NULL;
        cJSON *list = md ? cJSON_AddArrayToObject(md, "finalizers") : NULL, *f;
        char rv[24];
        (void) snprintf(rv, sizeof rv, "%" PRIu64, b->resource_version);
        if (!list || !cJSON_AddStringToObject(md, "resourceVersion", rv))
                return -ENOMEM;
        JSON_ARRAY_FOREACH (f, json_get_array(b->json, "metadata.finalizers"))
                if (!streq_ptr(json_string(f), FINALIZER_S3_BACKUPS))
                        cJSON_AddItemToArray(list, cJSON_Duplicate(f, true));
        if (on)
                cJSON_AddItemToArray(list, cJSON_CreateString(FINALIZER_S3_BACKUPS));
        plan_patch(p, &KUBE_BACKUPS, NULL, b->name, KUBE_PATCH_MERGE, patch);
        return 0;
}

static char *purge_job_name(const char *backup)
{
        return strdup_printf("s3-purge-%s", backup); /* a Backup with a store has at most 52 */
}

static const char purge_skeleton[] =
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"\",\"namespace\":"
        "\"" NS_ETCD "\",\"labels\":{\"app\":\"" PURGE_APP_LABEL "\",\"backup-name\":\"\"}},"
        "\"spec\":{\"activeDeadlineSeconds\":0,\"backoffLimit\":0,\"template\":{\"metadata\":{"
        "\"labels\":{\"app\":\"" PURGE_APP_LABEL "\",\"backup-name\":\"\"}},\"spec\":{"
        "\"restartPolicy\":\"Never\",\"automountServiceAccountToken\":false,"
        "\"priorityClassName\":\"system-cluster-critical\","
        "\"nodeSelector\":{\"node-role.kubernetes.io/master\":\"\"},\"tolerations\":[{"
        "\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"purge\",\"image\":\"\","
        "\"imagePullPolicy\":\"IfNotPresent\",\"terminationMessagePolicy\":\"FallbackToLogsOnError\","
        "\"command\":[\"cluster-etcd-operator\",\"s3\",\"purge\",\"--credentials-dir=" S3_CREDENTIALS_DIR
        "\",\"--bucket=\",\"--prefix=\"],\"volumeMounts\":[{\"name\":\"s3-credentials\","
        "\"mountPath\":\"" S3_CREDENTIALS_DIR "\",\"readOnly\":true}],\"resources\":{\"requests\":{"
        "\"cpu\":\"5m\",\"memory\":\"30Mi\"}}}],\"volumes\":[{\"name\":\"s3-credentials\","
        "\"secret\":{\"secretName\":\"\",\"defaultMode\":256}}]}}}}";

static cJSON *purge_job(const SyncContext *ctx, const KubeObject *backup, const char *name,
                        const BackupStore *st)
{
        _cleanup_(cJSON_Deletep) cJSON *job = NULL;
        _cleanup_free_ char *bucket = strdup_printf("--bucket=%s", st->bucket),
                            *prefix = strdup_printf("--prefix=%s", st->prefix);
        const char *pod = "spec.template.spec";
        char path[96];

        if (!bucket || !prefix || json_parse(purge_skeleton, strlen(purge_skeleton), &job) < 0)
                return NULL;
        if (json_set_path_string(job, "metadata.name", name) < 0 ||
            json_set_path_string(job, "metadata.labels.backup-name", backup->name) < 0 ||
            json_set_path_number(job, "spec.activeDeadlineSeconds", PURGE_DEADLINE_S) < 0 ||
            json_set_path_string(job, "spec.template.metadata.labels.backup-name", backup->name) < 0)
                return NULL;
        (void) snprintf(path, sizeof path, "%s.containers.0.image", pod);
        if (json_set_path_string(job, path, strempty(op_state(ctx)->operator_image)) < 0)
                return NULL;
        (void) snprintf(path, sizeof path, "%s.containers.0.command.4", pod);
        if (json_set_path_string(job, path, bucket) < 0)
                return NULL;
        (void) snprintf(path, sizeof path, "%s.containers.0.command.5", pod);
        if (json_set_path_string(job, path, prefix) < 0)
                return NULL;
        (void) snprintf(path, sizeof path, "%s.volumes.0.secret.secretName", pod);
        if (json_set_path_string(job, path, st->secret) < 0)
                return NULL;
        return TAKE_PTR(job);
}

/* The Job's finished condition (Complete, Failed) and when; NULL while it runs. */
static const char *job_done(const KubeObject *job, usec_t *ret_when)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, json_get_array(job->json, "status.conditions")) {
                const char *type = json_get_string(c, "type");
                if ((streq_ptr(type, "Complete") || streq_ptr(type, "Failed")) &&
                    streq_ptr(json_get_string(c, "status"), "True")) {
                        if (parse_rfc3339(json_get_string(c, "lastTransitionTime"), ret_when) < 0)
                                *ret_when = 0;
                        return type;
                }
        }
        return NULL;
}

/* A deleted Backup with a store: its objects kept for the grace period, then purged, then the
 * finalizer lifted. `why` gets a problem for the Degraded condition. */
static int finish_deleted(const SyncContext *ctx, Plan *p, const KubeObject *b, char *why, size_t wn)
{
        BackupStore st;
        usec_t deleted = 0, finished = 0;
        char until[64];

        if (!has_finalizer(b))
                return 0;
        if (backup_store_of(b->json, &st, why, wn) < 0) {
                why[0] = 0;
                log_info("backup %s names no valid store any more: lifting its finalizer, objects are kept",
                         b->name);
                return set_finalizer(p, b, false);
        }
        (void) parse_rfc3339(json_get_string(b->json, "metadata.deletionTimestamp"), &deleted);
        usec_t deadline = deleted + st.grace;
        if (ctx->now < deadline) {
                plan_requeue_after(p, deadline - ctx->now);
                return 0;
        }
        _cleanup_free_ char *name = purge_job_name(b->name);
        if (!name)
                return -ENOMEM;
        const KubeObject *job = op_get_job(ctx, PURGE_APP_LABEL, name);
        if (job && json_get_string(job->json, "metadata.deletionTimestamp")) {
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        const char *done = job ? job_done(job, &finished) : NULL;
        if (job && !done) {
                plan_requeue_after(p, 10 * USEC_PER_SEC);
                return 0;
        }
        if (done && streq(done, "Complete")) {
                log_info("backup %s: s3://%s/%s/ purged (job %s/%s): lifting its finalizer", b->name,
                         st.bucket, st.prefix, NS_ETCD, name);
                plan_event(p, false, "S3BackupsPurged",
                           "Backup %s: its objects under s3://%s/%s/ are deleted", b->name, st.bucket,
                           st.prefix);
                plan_delete(p, &KUBE_JOBS, NS_ETCD, name, kube_object_uid(job));
                return set_finalizer(p, b, false);
        }
        if (done) {
                (void) snprintf(
                        why, wn,
                        "deleting the objects of deleted Backup %s under s3://%s/%s/ failed (job %s/%s; "
                        "its pod's log says why); retried %s",
                        b->name, st.bucket, st.prefix, NS_ETCD, name,
                        finished + PURGE_RETRY > ctx->now ? "in 5 minutes" : "now");
                if (finished + PURGE_RETRY > ctx->now)
                        plan_requeue_after(p, finished + PURGE_RETRY - ctx->now);
                else
                        plan_delete(p, &KUBE_JOBS, NS_ETCD, name, kube_object_uid(job));
                return 0;
        }
        if (!op_get(ctx, W_ETCD_SECRETS, NS_ETCD, st.secret)) {
                (void) snprintf(
                        why, wn,
                        "deleted Backup %s: its objects under s3://%s/%s/ cannot be deleted, secret %s/%s "
                        "is gone: create it again, or keep the objects by removing the "
                        "finalizer " FINALIZER_S3_BACKUPS,
                        b->name, st.bucket, st.prefix, NS_ETCD, st.secret);
                return 0;
        }
        _cleanup_(cJSON_Deletep) cJSON *want = purge_job(ctx, b, name, &st);
        if (!want)
                return -ENOMEM;
        log_info("backup %s: its grace period ended at %s: job %s/%s deletes s3://%s/%s/", b->name,
                 format_rfc3339(until, sizeof until, deadline), NS_ETCD, name, st.bucket, st.prefix);
        plan_create(p, &KUBE_JOBS, want);
        return 0;
}

static int sync_periodic_backup(const SyncContext *ctx, Plan *p)
{
        _cleanup_free_ const KubeObject **backups = NULL, **cronjobs = NULL;
        size_t n_backups = 0, n_cronjobs = 0;
        char problem[1024] = "";
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
                char retention[128], why[512] = "", cron_why[160] = "";
                unsigned keep = DEFAULT_MAX_NUMBER;
                BackupStore st;

                if (json_get_string(b->json, "metadata.deletionTimestamp")) {
                        if ((r = finish_deleted(ctx, p, b, why, sizeof why)) < 0)
                                return r;
                        if (why[0] && n_problems++ == 0)
                                (void) snprintf(problem, sizeof problem, "backups/%s: %s", b->name, why);
                        continue;
                }
                int store = backup_store_of(b->json, &st, why, sizeof why);
                if (store == -EINVAL)
                        ; /* why says it */
                else if (strlen(b->name) > CRONJOB_NAME_MAX)
                        (void) snprintf(
                                why, sizeof why,
                                "the name is %zu characters; the Jobs of its CronJob need it to be at "
                                "most %d: make the Backup again with a shorter name",
                                strlen(b->name), CRONJOB_NAME_MAX);
                else if (!schedule || !*schedule)
                        (void) snprintf(why, sizeof why,
                                        "spec.etcd.schedule is empty: give a cron schedule "
                                        "(\"0 */2 * * *\", \"@daily\")");
                else if (cron_schedule_check(schedule, cron_why, sizeof cron_why) < 0)
                        (void) snprintf(why, sizeof why,
                                        "spec.etcd.schedule is not a cron schedule (%s): give five fields, "
                                        "minute hour day-of-month month day-of-week (\"0 */2 * * *\"), or "
                                        "one of @hourly, @daily, @weekly, @monthly, @yearly",
                                        cron_why);
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
                else if (store == 0 && !op_get(ctx, W_ETCD_SECRETS, NS_ETCD, st.secret))
                        (void) snprintf(why, sizeof why,
                                        "annotation " ANN_S3_SECRET ": secret %s/%s not found: create it "
                                        "(accessKeyID, secretAccessKey, and optionally region, endpoint, "
                                        "s3ForcePathStyle)",
                                        NS_ETCD, st.secret);
                else
                        (void) retention_args(json_get_object(b->json, "spec.etcd.retentionPolicy"),
                                              retention, sizeof retention, &keep, why, sizeof why);
                /* The finalizer follows the store's annotations (a store no longer named keeps its
                 * objects), also while the Backup has a problem. */
                if (store == 0 && !has_finalizer(b) && (r = set_finalizer(p, b, true)) < 0)
                        return r;
                if (store == -ENOENT && has_finalizer(b) && (r = set_finalizer(p, b, false)) < 0)
                        return r;
                if (why[0]) {
                        if (n_problems++ == 0)
                                (void) snprintf(problem, sizeof problem, "backups/%s: %s", b->name, why);
                        continue;
                }
                _cleanup_(cJSON_Deletep) cJSON *want =
                        cronjob_for(ctx, b, schedule, tz, pvc, retention, store == 0 ? &st : NULL, keep);
                if (!want)
                        return -ENOMEM;
                const KubeObject *have = op_get(ctx, W_BACKUP_CRONJOBS, NS_ETCD, b->name);
                if (!have || !cronjob_current(have, want)) {
                        log_info("%s cronjob %s/%s (schedule \"%s\"%s%s, claim "
                                 "%s, %s%s%s%s%s)",
                                 have ? "updating" : "creating", NS_ETCD, b->name, schedule,
                                 tz ? " in " : "", strempty(tz), pvc, retention,
                                 store == 0 ? ", to s3://" : "", store == 0 ? st.bucket : "",
                                 store == 0 ? "/" : "", store == 0 ? st.prefix : "");
                        plan_apply(p, &KUBE_CRONJOBS, want);
                }
        }
        /* CronJobs of Backups that are gone, or going (no backup is taken after the deletion). */
        for (size_t i = 0; i < n_cronjobs; i++) {
                const char *owner = json_get_string(cronjobs[i]->json, "metadata.labels.backup-name");
                const KubeObject *b = owner ? op_get(ctx, W_BACKUPS, NULL, owner) : NULL;
                if (json_get_string(cronjobs[i]->json, "metadata.deletionTimestamp") ||
                    (b && !json_get_string(b->json, "metadata.deletionTimestamp")))
                        continue;
                BackupStore st;
                char why[8], until[64];
                usec_t deleted = 0;
                if (b && has_finalizer(b) && backup_store_of(b->json, &st, why, sizeof why) == 0 &&
                    parse_rfc3339(json_get_string(b->json, "metadata.deletionTimestamp"), &deleted) >= 0)
                        plan_event(
                                p, false, "S3BackupsKept",
                                "Backup %s is deleted: its CronJob goes; its objects under s3://%s/%s/ are "
                                "kept until %s (" ANN_S3_GRACE ")",
                                b->name, st.bucket, st.prefix,
                                format_rfc3339(until, sizeof until, deleted + st.grace));
                log_info("cronjob %s/%s belongs to no Backup%s: deleting it", NS_ETCD, cronjobs[i]->name,
                         b ? " that stays" : "");
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
                                           OP_WATCH(W_ETCD_PVCS), OP_WATCH(W_ETCD_SECRETS),
                                           OP_WATCH(W_ETCD_JOBS)};

const ControllerSpec controller_periodic_backup = {
        .name = "PeriodicBackupController",
        .degraded_condition = DEGRADED_COND,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_periodic_backup,
};
