/* BackupController: an EtcdBackup (operator.openshift.io/v1alpha1, one
 * backup now) becomes a Job in openshift-etcd that writes the backup to the
 * claim spec.pvcName names, as upstream's (pkg/operator/backupcontroller):
 *
 * - One backup Job at a time. While one runs, new EtcdBackups wait. When
 *   none runs, the first unprocessed EtcdBackup by name gets its Job, and
 *   every other one is BackupSkipped (upstream skips, not queues).
 * - A finished Job makes its EtcdBackup BackupCompleted or BackupFailed
 *   (the Job's own reason in the message); the other conditions go False;
 *   then both are labelled state=processed and never looked at again.
 * - A claim that does not exist, or a name too long to be a label value,
 *   is BackupFailed at once, naming the fix; no Job is made.
 * - A backup Job whose EtcdBackup is gone is deleted (its pod with it).
 *
 * Better than upstream: the Job's name comes from the EtcdBackup's
 * (cluster-backup-<name>, a hash when that is too long), not a random
 * suffix, so a create whose answer was lost finds its Job instead of
 * making a second one; and the Job's pod also carries the EtcdBackup's
 * name, so a backup is traceable from the node's pod list.
 *
 * The Job: init container `verify backup-storage` (room for twice the
 * largest member's database, checked for 10 s), then `cluster-backup` into
 * <claim>/backup-<name>-<%Y-%m-%d_%H%M%S> with the etcd client
 * certificate, on a master (host network, the node's own member), deadline
 * 900 s, no retry (a failure is reported; a new EtcdBackup is the retry).
 * Without the EtcdBackup CRD (the feature is off) the informer is empty and
 * this controller has nothing to do. */
#include "base/json.h"
#include "base/log.h"
#include "controllers.h"
#include "facts.h"
#include "runtime/conditions.h"

#define JOB_APP_LABEL   JOB_APP_BACKUP
#define BACKUP_DIR      "/etc/kubernetes/cluster-backup"
#define HOST_CONFIG_DIR "/host/etc/kubernetes"
#define JOB_DEADLINE_S  900
#define COND_PENDING    "BackupPending"
#define COND_COMPLETED  "BackupCompleted"
#define COND_FAILED     "BackupFailed"
#define COND_SKIPPED    "BackupSkipped"
#define LABEL_VALUE_MAX 63
#define RECHECK_RUNNING (10 * USEC_PER_SEC)

static const char *const backup_conditions[] = {COND_PENDING, COND_COMPLETED, COND_FAILED, COND_SKIPPED};

static bool processed(const KubeObject *o)
{
        return streq_ptr(json_get_string(o->json, "metadata.labels.state"), "processed");
}

/* The Job's terminal condition type (Complete, Failed) and its reason and message; NULL while it runs. */
static const char *job_finished(const KubeObject *job, const char **ret_reason, const char **ret_message)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, json_get_array(job->json, "status.conditions")) {
                const char *type = json_get_string(c, "type");
                if ((streq_ptr(type, "Complete") || streq_ptr(type, "Failed")) &&
                    streq_ptr(json_get_string(c, "status"), "True")) {
                        *ret_reason = json_get_string(c, "reason");
                        *ret_message = json_get_string(c, "message");
                        return type;
                }
        }
        return NULL;
}

/* Why the Job's pod failed, in its own words: "container cluster-backup exited 1: <the
 * last line of its termination message>" (FallbackToLogsOnError: its log's tail), or
 * "" when no pod of the Job (label job-name) has a container that ended badly. */
static void pod_failure(const SyncContext *ctx, const KubeObject *job, char *out, size_t n)
{
        static const char *const lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
        _cleanup_free_ const KubeObject **pods = NULL;
        size_t n_pods = 0;

        *out = 0;
        if (op_list(ctx, W_ETCD_PODS, &pods, &n_pods) < 0)
                return;
        for (size_t i = 0; i < n_pods && !*out; i++) {
                if (!streq_ptr(json_get_string(pods[i]->json, "metadata.labels.job-name"), job->name))
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(lists) && !*out; k++) {
                        cJSON *cs;
                        JSON_ARRAY_FOREACH (cs, json_get_array(pods[i]->json, lists[k])) {
                                const cJSON *t = json_get_object(cs, "state.terminated");
                                int64_t code = 0;
                                char line[400] = "";
                                if (!t || json_get_int64(t, "exitCode", &code) < 0 || code == 0)
                                        continue;
                                termination_line(strempty(json_get_string(t, "message")), line, sizeof line);
                                (void) snprintf(out, n, "container %s exited %" PRId64 "%s%s",
                                                strempty(json_get_string(cs, "name")), code,
                                                *line ? ": " : "", line);
                                break;
                        }
                }
        }
}

/* cluster-backup-<name>, or cluster-backup-<hash of name> when that would not fit the 63
 * characters a Job name may have (its pods' job-name label carries it). */
static char *job_name(const char *backup)
{
        if (strlen("cluster-backup-") + strlen(backup) <= LABEL_VALUE_MAX)
                return strdup_printf("cluster-backup-%s", backup);
        uint64_t h = 1469598103934665603ULL; /* FNV-1a */
        for (const char *c = backup; *c; c++)
                h = (h ^ (uint8_t) *c) * 1099511628211ULL;
        return strdup_printf("cluster-backup-%016" PRIx64, h);
}

/* The status the EtcdBackup should have: `type` True with reason `type`, the other
 * backup conditions False where present; NULL when it already says so. */
static cJSON *status_with(const SyncContext *ctx, const KubeObject *backup, const char *type,
                          const char *job, const char *fmt, ...) _printf_(5, 6);
static cJSON *status_with(const SyncContext *ctx, const KubeObject *backup, const char *type,
                          const char *job, const char *fmt, ...)
{
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Duplicate(backup->json, true);
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int changed = 0, r;

        va_start(ap, fmt);
        r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0 || !obj)
                return NULL;
        cJSON *status = json_ensure_object(obj, "status");
        cJSON *conds = status ? cJSON_GetObjectItemCaseSensitive(status, "conditions") : NULL;
        if (status && !cJSON_IsArray(conds)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "conditions");
                conds = cJSON_AddArrayToObject(status, "conditions");
        }
        if (!conds)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(backup_conditions); i++) {
                const char *t = backup_conditions[i];
                bool mine = streq(t, type);
                if (!mine && !conditions_find(conds, t))
                        continue;
                Condition c = {t, mine ? "True" : "False", t, mine ? message : ""};
                if ((r = conditions_set(conds, &c, ctx->now)) < 0)
                        return NULL;
                changed |= r;
        }
        if (job && !streq_ptr(json_get_string(status, "backupJob.name"), job)) {
                cJSON_DeleteItemFromObjectCaseSensitive(status, "backupJob");
                cJSON *ref = cJSON_AddObjectToObject(status, "backupJob");
                if (!ref || json_set_string(ref, "namespace", NS_ETCD) < 0 ||
                    json_set_string(ref, "name", job) < 0)
                        return NULL;
                changed = 1;
        }
        return changed ? TAKE_PTR(obj) : cJSON_CreateNull(); /* null: nothing to write */
}

/* Writes the status (when it differs: JSON null when not), then labels the EtcdBackup (and
 * its Job) processed when `finished`. Takes `status`. */
static int report(Plan *p, const KubeObject *backup, const KubeObject *job, bool finished, cJSON *status_in)
{
        _cleanup_(cJSON_Deletep) cJSON *status = status_in;
        if (!status)
                return -ENOMEM;
        if (!cJSON_IsNull(status))
                plan_update_status(p, &KUBE_ETCDBACKUPS, status);
        if (finished) {
                static const char processed_patch[] =
                        "{\"metadata\":{\"labels\":{\"state\":\"processed\"}}}";
                _cleanup_(cJSON_Deletep) cJSON *patch = NULL;
                if (json_parse(processed_patch, strlen(processed_patch), &patch) < 0)
                        return -ENOMEM;
                plan_patch(p, &KUBE_ETCDBACKUPS, NULL, backup->name, KUBE_PATCH_MERGE, patch);
                if (job)
                        plan_patch(p, &KUBE_JOBS, NS_ETCD, job->name, KUBE_PATCH_MERGE, patch);
        }
        return 0;
}

/* The node's own member, with the etcd client certificate (etcd-client, etcd-ca-bundle). */
#define JOB_ENV                                                                                   \
        "[{\"name\":\"NODE_IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}," \
        "{\"name\":\"ETCDCTL_ENDPOINTS\",\"value\":\"https://$(NODE_IP):2379\"},"                 \
        "{\"name\":\"ETCDCTL_CACERT\",\"value\":\"/etc/etcd-ca/ca-bundle.crt\"},"                 \
        "{\"name\":\"ETCDCTL_CERT\",\"value\":\"/etc/etcd-client/tls.crt\"},"                     \
        "{\"name\":\"ETCDCTL_KEY\",\"value\":\"/etc/etcd-client/tls.key\"}]"
#define JOB_MOUNTS                                                                         \
        "[{\"name\":\"backup-dir\",\"mountPath\":\"" BACKUP_DIR "\"},"                     \
        "{\"name\":\"etcd-client\",\"mountPath\":\"/etc/etcd-client\",\"readOnly\":true}," \
        "{\"name\":\"etcd-ca\",\"mountPath\":\"/etc/etcd-ca\",\"readOnly\":true},"         \
        "{\"name\":\"host-config\",\"mountPath\":\"" HOST_CONFIG_DIR "\",\"readOnly\":true}]"

/* The Job's constant parts; the values of the EtcdBackup are set with cJSON, never printed
 * into JSON text. */
static const char job_skeleton[] =
        "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"\",\"namespace\":"
        "\"" NS_ETCD "\",\"labels\":{\"app\":\"" JOB_APP_LABEL "\",\"backup-name\":\"\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"operator.openshift.io/v1alpha1\",\"kind\":"
        "\"EtcdBackup\",\"name\":\"\",\"uid\":\"\"}]},\"spec\":{\"activeDeadlineSeconds\":0,"
        "\"backoffLimit\":0,\"template\":{\"metadata\":{\"labels\":{\"app\":\"" JOB_APP_LABEL
        "\",\"backup-name\":\"\"}},\"spec\":{\"restartPolicy\":\"Never\",\"hostNetwork\":true,"
        "\"automountServiceAccountToken\":false,"
        "\"priorityClassName\":\"system-node-critical\",\"nodeSelector\":{"
        "\"node-role.kubernetes.io/master\":\"\"},\"tolerations\":[{\"operator\":\"Exists\"}],"
        "\"initContainers\":[{\"name\":\"verify-storage\",\"image\":\"\",\"imagePullPolicy\":"
        "\"IfNotPresent\",\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"command\":["
        "\"cluster-etcd-operator\",\"verify\",\"backup-storage\",\"--backup-dir=" BACKUP_DIR
        "\"],\"env\":" JOB_ENV ",\"volumeMounts\":" JOB_MOUNTS "}],\"containers\":[{\"name\":"
        "\"cluster-backup\",\"image\":\"\",\"imagePullPolicy\":\"IfNotPresent\","
        "\"terminationMessagePolicy\":\"FallbackToLogsOnError\",\"command\":[\"cluster-etcd-operator\","
        "\"cluster-backup\",\"--config-dir=" HOST_CONFIG_DIR "\",\"\"],\"env\":" JOB_ENV
        ",\"volumeMounts\":" JOB_MOUNTS ",\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":"
        "\"80Mi\"}}}],\"volumes\":[{\"name\":\"backup-dir\",\"persistentVolumeClaim\":{"
        "\"claimName\":\"\"}},{\"name\":\"etcd-client\",\"secret\":{\"secretName\":\"etcd-client\"}},"
        "{\"name\":\"etcd-ca\",\"configMap\":{\"name\":\"etcd-ca-bundle\"}},{\"name\":"
        "\"host-config\",\"hostPath\":{\"path\":\"/etc/kubernetes\",\"type\":\"Directory\"}}]}}}}";

static cJSON *backup_job(const SyncContext *ctx, const KubeObject *backup, const char *name, const char *pvc)
{
        char ts[32] = "";
        time_t t = (time_t) (ctx->now / USEC_PER_SEC);
        struct tm tm;
        _cleanup_(cJSON_Deletep) cJSON *job = NULL;

        if (!gmtime_r(&t, &tm) || strftime(ts, sizeof ts, "%Y-%m-%d_%H%M%S", &tm) == 0)
                return NULL;
        const char *image = strempty(op_state(ctx)->operator_image);
        _cleanup_free_ char *dir =
                strdup_printf("--backup-dir=" BACKUP_DIR "/backup-%s-%s", backup->name, ts);
        if (!dir || json_parse(job_skeleton, strlen(job_skeleton), &job) < 0)
                return NULL;
        if (json_set_path_string(job, "metadata.name", name) < 0 ||
            json_set_path_string(job, "metadata.labels.backup-name", backup->name) < 0 ||
            json_set_path_string(job, "metadata.ownerReferences.0.name", backup->name) < 0 ||
            json_set_path_string(job, "metadata.ownerReferences.0.uid", strempty(kube_object_uid(backup))) <
                    0 ||
            json_set_path_number(job, "spec.activeDeadlineSeconds", JOB_DEADLINE_S) < 0 ||
            json_set_path_string(job, "spec.template.metadata.labels.backup-name", backup->name) < 0 ||
            json_set_path_string(job, "spec.template.spec.initContainers.0.image", image) < 0 ||
            json_set_path_string(job, "spec.template.spec.containers.0.image", image) < 0 ||
            json_set_path_string(job, "spec.template.spec.containers.0.command.3", dir) < 0 ||
            json_set_path_string(job, "spec.template.spec.volumes.0.persistentVolumeClaim.claimName", pvc) <
                    0)
                return NULL;
        return TAKE_PTR(job);
}

#define S3_CREDENTIALS_DIR  "/etc/etcd-backup-s3"
#define S3_DEFAULT_MAX_KEEP 15

/* The store's part of the Job: its Secret mounted, cluster-backup told to upload there and
 * collect the store after (the flags go before the backup directory, the last argument). */
static int add_store(cJSON *job, const BackupStore *st)
{
        cJSON *pod = json_get_object(job, "spec.template.spec");
        cJSON *c = cJSON_GetArrayItem(json_get_array(pod, "containers"), 0);
        cJSON *cmd = json_get_array(c, "command"), *mounts = json_get_array(c, "volumeMounts"),
              *vols = json_get_array(pod, "volumes");
        _cleanup_free_ char *a_bucket = strdup_printf("--s3-bucket=%s", st->bucket),
                            *a_prefix = strdup_printf("--s3-prefix=%s", st->prefix),
                            *a_gc = strdup_printf("--s3-gc-policy=%s", st->gc_policy),
                            *a_max = strdup_printf("--s3-max-backups=%u",
                                                   st->max_backups ? st->max_backups : S3_DEFAULT_MAX_KEEP);
        cJSON *m = cJSON_CreateObject(), *v = cJSON_CreateObject(), *sec = cJSON_CreateObject();

        if (!cmd || !mounts || !vols || !a_bucket || !a_prefix || !a_gc || !a_max || !m || !v || !sec ||
            !cJSON_AddStringToObject(m, "name", "s3-credentials") ||
            !cJSON_AddStringToObject(m, "mountPath", S3_CREDENTIALS_DIR) ||
            !cJSON_AddTrueToObject(m, "readOnly") || !cJSON_AddStringToObject(v, "name", "s3-credentials") ||
            !cJSON_AddStringToObject(sec, "secretName", st->secret) ||
            !cJSON_AddNumberToObject(sec, "defaultMode", 0400)) {
                cJSON_Delete(m);
                cJSON_Delete(v);
                cJSON_Delete(sec);
                return -ENOMEM;
        }
        cJSON_AddItemToObject(v, "secret", sec);
        cJSON_AddItemToArray(mounts, m);
        cJSON_AddItemToArray(vols, v);
        static const char dir_arg[] = "--s3-credentials-dir=" S3_CREDENTIALS_DIR;
        const char *const args[] = {dir_arg, a_bucket, a_prefix, a_gc, a_max};
        int n = cJSON_GetArraySize(cmd);
        cJSON *last = cJSON_DetachItemFromArray(cmd, n - 1);
        if (!last)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(args); i++)
                cJSON_AddItemToArray(cmd, cJSON_CreateString(args[i]));
        cJSON_AddItemToArray(cmd, last);
        if (cJSON_GetArraySize(cmd) != n + (int) ELEMENTSOF(args)) /* a string not made */
                return -ENOMEM;
        return 0;
}

/* "" or " and in s3://bucket/prefix", for messages. */
static const char *store_words(const KubeObject *backup, char *buf, size_t n)
{
        BackupStore st;
        char why[8];
        if (backup_store_of(backup->json, &st, why, sizeof why) < 0)
                return "";
        (void) snprintf(buf, n, " and in s3://%s/%s", st.bucket, st.prefix);
        return buf;
}

/* The claim of an EtcdBackup that can be backed up, or NULL with it reported BackupFailed. */
static int start_backup(const SyncContext *ctx, Plan *p, const KubeObject *backup)
{
        const char *pvc = json_get_string(backup->json, "spec.pvcName");
        _cleanup_free_ char *name = job_name(backup->name);

        if (!name)
                return -ENOMEM;
        if (strlen(backup->name) > LABEL_VALUE_MAX)
                return report(p, backup, NULL, true,
                              status_with(ctx, backup, COND_FAILED, NULL,
                                          "the name is %zu characters; a backup's Job is labelled with it, "
                                          "which allows %d: make a new EtcdBackup with a shorter name",
                                          strlen(backup->name), LABEL_VALUE_MAX));
        if (!pvc || !*pvc)
                return report(
                        p, backup, NULL, true,
                        status_with(ctx, backup, COND_FAILED, NULL,
                                    "spec.pvcName is empty: name a PersistentVolumeClaim in " NS_ETCD));
        if (!op_get(ctx, W_ETCD_PVCS, NS_ETCD, pvc))
                return report(p, backup, NULL, true,
                              status_with(ctx, backup, COND_FAILED, NULL,
                                          "spec.pvcName: persistentvolumeclaim %s/%s not found: create it "
                                          "(ReadWriteOnce is enough) and make a new EtcdBackup",
                                          NS_ETCD, pvc));
        BackupStore store;
        char why[512], where[700];
        int r = backup_store_of(backup->json, &store, why, sizeof why);
        if (r == -EINVAL)
                return report(p, backup, NULL, true,
                              status_with(ctx, backup, COND_FAILED, NULL, "%s; make a new EtcdBackup", why));
        if (r >= 0 && !op_get(ctx, W_ETCD_SECRETS, NS_ETCD, store.secret))
                return report(p, backup, NULL, true,
                              status_with(ctx, backup, COND_FAILED, NULL,
                                          "annotation " ANN_S3_SECRET ": secret %s/%s not found: create it "
                                          "(accessKeyID, secretAccessKey, and optionally region, endpoint, "
                                          "s3ForcePathStyle) and make a new EtcdBackup",
                                          NS_ETCD, store.secret));
        _cleanup_(cJSON_Deletep) cJSON *job = backup_job(ctx, backup, name, pvc);
        if (!job || (r >= 0 && add_store(job, &store) < 0))
                return -ENOMEM;
        plan_create(p, &KUBE_JOBS, job);
        plan_event(p, false, "BackupJobCreated", "EtcdBackup %s: job %s/%s backs up etcd to claim %s%s",
                   backup->name, NS_ETCD, name, pvc, store_words(backup, where, sizeof where));
        return report(p, backup, NULL, false,
                      status_with(ctx, backup, COND_PENDING, name,
                                  "job %s/%s is backing up etcd to claim %s%s", NS_ETCD, name, pvc,
                                  store_words(backup, where, sizeof where)));
}

static int sync_backup(const SyncContext *ctx, Plan *p)
{
        _cleanup_free_ const KubeObject **backups = NULL, **jobs = NULL;
        size_t n_backups = 0, n_jobs = 0;
        const KubeObject *next = NULL;
        bool running = false;
        int r;

        if ((r = op_list(ctx, W_ETCD_BACKUPS, &backups, &n_backups)) < 0 ||
            (r = op_list_jobs(ctx, JOB_APP_LABEL, &jobs, &n_jobs)) < 0)
                return r;

        /* Jobs first: finished ones report to their EtcdBackup, orphans go. */
        for (size_t i = 0; i < n_jobs; i++) {
                const KubeObject *job = jobs[i];
                const char *owner = json_get_string(job->json, "metadata.labels.backup-name");
                const KubeObject *backup = owner ? op_get(ctx, W_ETCD_BACKUPS, NULL, owner) : NULL;
                const char *reason = NULL, *message = NULL;
                const char *done = job_finished(job, &reason, &message);

                if (json_get_string(job->json, "metadata.deletionTimestamp"))
                        continue;
                if (!backup) {
                        log_info("job %s/%s belongs to no EtcdBackup (%s): deleting it", NS_ETCD, job->name,
                                 strempty(owner));
                        plan_delete(p, &KUBE_JOBS, NS_ETCD, job->name, kube_object_uid(job));
                        continue;
                }
                if (!done) {
                        running = true;
                        continue;
                }
                if (processed(backup) && processed(job))
                        continue;
                bool ok = streq(done, "Complete");
                char where[700], why[480] = "";
                if (!ok)
                        pod_failure(ctx, job, why, sizeof why);
                if (!processed(backup)) {
                        plan_event(p, !ok, ok ? "BackupCompleted" : "BackupFailed",
                                   "EtcdBackup %s: job %s/%s %s", backup->name, NS_ETCD, job->name,
                                   ok ? "completed" : "failed");
                        r = report(p, backup, job, true,
                                   ok ? status_with(ctx, backup, COND_COMPLETED, job->name,
                                                    "job %s/%s completed: the backup is on claim %s%s",
                                                    NS_ETCD, job->name,
                                                    strempty(json_get_string(backup->json, "spec.pvcName")),
                                                    store_words(backup, where, sizeof where))
                                      : status_with(ctx, backup, COND_FAILED, job->name,
                                                    "job %s/%s failed (%s: %s)%s%s", NS_ETCD, job->name,
                                                    strempty(reason), strempty(message),
                                                    *why ? ": " : "; its pod's log says why", why));
                } else
                        r = report(p, backup, job, true, cJSON_CreateNull());
                if (r < 0)
                        return r;
        }
        if (running) {
                plan_requeue_after(p, RECHECK_RUNNING);
                return 0;
        }

        /* The first unprocessed EtcdBackup without a Job runs; the others are skipped. */
        for (size_t i = 0; i < n_backups; i++) {
                const KubeObject *b = backups[i];
                _cleanup_free_ char *name = job_name(b->name);
                if (!name)
                        return -ENOMEM;
                if (processed(b) || json_get_string(b->json, "metadata.deletionTimestamp") ||
                    op_get_job(ctx, JOB_APP_LABEL, name))
                        continue;
                if (!next) {
                        next = b;
                        if ((r = start_backup(ctx, p, b)) < 0)
                                return r;
                        continue;
                }
                r = report(p, b, NULL, true,
                           status_with(ctx, b, COND_SKIPPED, NULL,
                                       "skipped: EtcdBackup %s was taken first and backups run one at a "
                                       "time; make a new EtcdBackup once it is done",
                                       next->name));
                if (r < 0)
                        return r;
        }
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_BACKUPS), OP_WATCH(W_ETCD_JOBS),
                                           OP_WATCH(W_ETCD_PVCS), OP_WATCH(W_ETCD_SECRETS),
                                           OP_WATCH(W_ETCD_PODS)};

/* BackupRemovalController: an EtcdBackup a scheduled backup's Job asked for (request-backup)
 * is owned by that Job, but a cluster-scoped object cannot be garbage collected through a
 * namespaced owner, so once the CronJob's history drops the Job, this deletes the
 * EtcdBackup. Only a finished one (processed), and only when it is older than a minute (a
 * Job just made may not be in the cache yet). Upstream's filter has && where || was meant
 * and misses some; this reads each owner reference. */
usec_t backups_newest_completed(const KubeObject *const *backups, size_t n)
{
        usec_t newest = 0;
        for (size_t i = 0; i < n; i++) {
                cJSON *c;
                JSON_ARRAY_FOREACH (c, json_get_array(backups[i]->json, "status.conditions")) {
                        usec_t t;
                        if (streq_ptr(json_get_string(c, "type"), COND_COMPLETED) &&
                            streq_ptr(json_get_string(c, "status"), "True") &&
                            parse_rfc3339(json_get_string(c, "lastTransitionTime"), &t) >= 0 && t > newest)
                                newest = t;
                }
        }
        return newest;
}

int backup_last_completed(InformerFactory *f, usec_t *ret)
{
        _cleanup_free_ const KubeObject **backups = NULL;
        Informer *inf;
        size_t n = 0;
        int r;

        assert_return(f && ret, -EINVAL);
        inf = informer_factory_find(f, &KUBE_ETCDBACKUPS, NULL, NULL, NULL);
        if (!inf)
                return -ENOENT;
        if ((r = informer_list(inf, &backups, &n)) < 0)
                return r;
        usec_t newest = backups_newest_completed(backups, n);
        if (newest == 0)
                return -ENOENT;
        *ret = newest;
        return 0;
}

#define REMOVAL_MIN_AGE (60 * USEC_PER_SEC)

static int sync_backup_removal(const SyncContext *ctx, Plan *p)
{
        _cleanup_free_ const KubeObject **backups = NULL;
        size_t n = 0;
        int r;

        if ((r = op_list(ctx, W_ETCD_BACKUPS, &backups, &n)) < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const KubeObject *b = backups[i];
                usec_t created = 0;
                cJSON *ref;
                if (!processed(b) || json_get_string(b->json, "metadata.deletionTimestamp") ||
                    parse_rfc3339(json_get_string(b->json, "metadata.creationTimestamp"), &created) < 0 ||
                    created + REMOVAL_MIN_AGE > ctx->now)
                        continue;
                JSON_ARRAY_FOREACH (ref, json_get_array(b->json, "metadata.ownerReferences")) {
                        const char *name = json_get_string(ref, "name");
                        if (!streq_ptr(json_get_string(ref, "kind"), "Job") ||
                            !streq_ptr(json_get_string(ref, "apiVersion"), "batch/v1") || !name)
                                continue;
                        const KubeObject *job = op_get_job(ctx, JOB_APP_CRON_BACKUP, name);
                        if (job && streq_ptr(kube_object_uid(job), json_get_string(ref, "uid")))
                                continue;
                        log_info(
                                "BackupRemovalController: EtcdBackup %s: its job %s/%s is gone: deleting it",
                                b->name, NS_ETCD, name);
                        plan_delete(p, &KUBE_ETCDBACKUPS, NULL, b->name, kube_object_uid(b));
                        break;
                }
        }
        plan_requeue_after(p, REMOVAL_MIN_AGE);
        return 0;
}

static const WatchSpec *const removal_watches[] = {OP_WATCH(W_ETCD_BACKUPS), OP_WATCH(W_ETCD_JOBS)};

const ControllerSpec controller_backup_removal = {
        .name = "BackupRemovalController",
        .degraded_condition = "BackupRemovalControllerDegraded",
        .watches = removal_watches,
        .n_watches = ELEMENTSOF(removal_watches),
        .resync = 5 * 60 * USEC_PER_SEC,
        .sync = sync_backup_removal,
};

const ControllerSpec controller_backup = {
        .name = "BackupController",
        .degraded_condition = "BackupControllerDegraded",
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_backup,
};
