/* `cluster-etcd-operator request-backup --pvc-name=NAME`: what a scheduled
 * backup's CronJob runs (upstream's command of the same name): it asks for
 * one backup by creating an EtcdBackup (operator.openshift.io/v1alpha1)
 * named after its own Job and owned by it, so the backup's record goes when
 * the CronJob's history drops the Job. The Job's name and uid come from
 * MY_JOB_NAME and MY_JOB_UID (the pod's labels batch.kubernetes.io/job-name
 * and controller-uid, through the downward API). A pod the Job runs again
 * finds its EtcdBackup there already: that is success, not a second backup. */
#include <getopt.h>

#include "base/contract.h"
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "kube-sync.h"
#include "kube/resource.h"
#include "node-util.h"
#include "node.h"

#define CALL_TIMEOUT (30 * USEC_PER_SEC)

static void help(FILE *f)
{
        (void) fprintf(
                f, "Usage: cluster-etcd-operator request-backup --pvc-name=NAME [--kubeconfig=FILE]\n"
                   "\n"
                   "Creates an EtcdBackup named after this pod's Job (MY_JOB_NAME, MY_JOB_UID), owned\n"
                   "by it, backing up to the PersistentVolumeClaim NAME in openshift-etcd.\n"
                   "\n"
                   "  --pvc-name=NAME     the claim the backup goes to\n"
                   "  --s3-secret=NAME --s3-bucket=NAME --s3-prefix=P [--s3-gc-policy=P]\n"
                   "  [--s3-max-backups=N]\n"
                   "                      also upload it to an S3-compatible store (the Backup's\n"
                   "                      etcd.operator.openshift.io/s3-* annotations, passed on)\n"
                   "  --kubeconfig=FILE   default: $KUBECONFIG, else the pod's service account\n"
                   "  -v=N                log verbosity\n"
                   "\n"
                   "Exit codes: 0 requested (or already), 1 the API refused or failed, 2 usage error.\n");
}

/* The store's annotations a Backup's CronJob passes on (the EtcdBackup CRD has no field for
 * them); the BackupController checks their values. */
static const char *const s3_annotations[] = {ANN_S3_SECRET, ANN_S3_BUCKET, ANN_S3_PREFIX, ANN_S3_GC,
                                             ANN_S3_MAX};
#define N_S3 (sizeof s3_annotations / sizeof s3_annotations[0])

static cJSON *etcd_backup(const char *job, const char *uid, const char *pvc, const char *const s3[N_S3])
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        cJSON *md = o ? cJSON_AddObjectToObject(o, "metadata") : NULL;
        cJSON *refs = md ? cJSON_AddArrayToObject(md, "ownerReferences") : NULL;
        cJSON *ref = cJSON_CreateObject();
        cJSON *spec = o ? cJSON_AddObjectToObject(o, "spec") : NULL;
        if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
                cJSON_Delete(ref);
                return NULL;
        }
        if (!spec || !cJSON_AddStringToObject(o, "apiVersion", "operator.openshift.io/v1alpha1") ||
            !cJSON_AddStringToObject(o, "kind", "EtcdBackup") || !cJSON_AddStringToObject(md, "name", job) ||
            !cJSON_AddStringToObject(ref, "apiVersion", "batch/v1") ||
            !cJSON_AddStringToObject(ref, "kind", "Job") || !cJSON_AddStringToObject(ref, "name", job) ||
            !cJSON_AddStringToObject(ref, "uid", uid) || !cJSON_AddStringToObject(spec, "pvcName", pvc))
                return NULL;
        cJSON *ann = NULL;
        for (size_t i = 0; i < N_S3; i++)
                if (s3[i] && (!(ann = ann ? ann : cJSON_AddObjectToObject(md, "annotations")) ||
                              !cJSON_AddStringToObject(ann, s3_annotations[i], s3[i])))
                        return NULL;
        return TAKE_PTR(o);
}

static int request_main(int argc, char *argv[])
{
        enum { ARG_PVC = 0x100, ARG_KUBECONFIG, ARG_S3 };
        static const struct option options[] = {
                {"pvc-name", required_argument, NULL, ARG_PVC},
                {"s3-secret", required_argument, NULL, ARG_S3 + 0},
                {"s3-bucket", required_argument, NULL, ARG_S3 + 1},
                {"s3-prefix", required_argument, NULL, ARG_S3 + 2},
                {"s3-gc-policy", required_argument, NULL, ARG_S3 + 3},
                {"s3-max-backups", required_argument, NULL, ARG_S3 + 4},
                {"kubeconfig", required_argument, NULL, ARG_KUBECONFIG},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *pvc = NULL, *kubeconfig = NULL, *s3[N_S3] = {};
        const char *job = getenv("MY_JOB_NAME"), *uid = getenv("MY_JOB_UID");
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_PVC:
                        pvc = optarg;
                        break;
                case ARG_KUBECONFIG:
                        kubeconfig = optarg;
                        break;
                case ARG_S3 + 0:
                case ARG_S3 + 1:
                case ARG_S3 + 2:
                case ARG_S3 + 3:
                case ARG_S3 + 4:
                        s3[c - ARG_S3] = optarg;
                        break;
                default:
                        nodecmd_flag_error("request-backup", c, argv);
                        return EXIT_USAGE;
                }
        if (optind != argc) {
                log_error("request-backup takes no arguments; see --help");
                return EXIT_USAGE;
        }
        if (!pvc || !dns1123_subdomain_is_valid(pvc)) {
                log_error("--pvc-name=%s: expected the name of a PersistentVolumeClaim in openshift-etcd "
                          "(lower-case letters, digits, '-' and '.')",
                          strempty(pvc));
                return EXIT_USAGE;
        }
        if (!job || !dns1123_subdomain_is_valid(job) || !uid || !*uid) {
                log_error("MY_JOB_NAME and MY_JOB_UID must name this pod's Job (set them from the pod's "
                          "labels "
                          "batch.kubernetes.io/job-name and batch.kubernetes.io/controller-uid); got %s and "
                          "%s",
                          job ? job : "nothing", uid && *uid ? uid : "nothing");
                return EXIT_USAGE;
        }
        if ((s3[0] || s3[1] || s3[2] || s3[3] || s3[4]) && !(s3[0] && s3[1] && s3[2])) {
                log_error("--s3-secret, --s3-bucket and --s3-prefix go together (and with them "
                          "--s3-gc-policy, --s3-max-backups)");
                return EXIT_USAGE;
        }
        _cleanup_(cJSON_Deletep) cJSON *obj = etcd_backup(job, uid, pvc, s3);
        if (!obj)
                return log_error_errno(-ENOMEM, "out of memory"), EXIT_RUNTIME;
        _cleanup_free_ char *err = NULL, *message = NULL;
        KubeSync ks = {};
        int r = kube_sync_open(&ks, kubeconfig, &err);
        if (r < 0) {
                log_error("%s", err ? err : strerror(-r));
                return EXIT_RUNTIME;
        }
        r = kube_sync_create(&ks, &KUBE_ETCDBACKUPS, NULL, obj, CALL_TIMEOUT, &message);
        kube_sync_close(&ks);
        if (r == -EEXIST) {
                log_info("etcdbackup %s exists already (this Job ran before): nothing more to request", job);
                return EXIT_OK;
        }
        if (r < 0) {
                log_error("creating etcdbackup %s failed: %s", job, message ? message : kube_strerror(r));
                return EXIT_RUNTIME;
        }
        log_info("requested a backup to claim %s%s%s%s%s: etcdbackup %s, owned by job %s", pvc,
                 s3[0] ? " and to s3://" : "", strempty(s3[1]), s3[0] ? "/" : "", strempty(s3[2]), job, job);
        return EXIT_OK;
}

const Command cmd_request_backup = {
        .name = "request-backup",
        .summary = "create the EtcdBackup of this scheduled backup Job (scheduled backups)",
        .run = request_main,
};
