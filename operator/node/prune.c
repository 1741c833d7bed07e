/* `cluster-etcd-operator prune`: what a revision-pruner-<rev>-<node> pod
 * runs on a master (library-go's prune command, with its flags): removes the
 * static pod's old revision directories, <resource-dir>/<static-pod-name>-N,
 * that the installer laid down, so the disk does not grow by one directory
 * per revision. A directory goes only when N <= --max-eligible-revision, N
 * is not in --protected-revisions, and N is not the revision of the static
 * pod manifest in --pod-manifest-dir (the pod running now, whatever the
 * operator believes). Nothing else in the directory is touched: not
 * --cert-dir, not a name that is not exactly <static-pod-name>-<digits>, not
 * a symlink. Each removal is logged before it happens; --dry-run only logs.
 * The pod's manifest not parsing, or the directory not being readable,
 * removes nothing. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

#include "base/contract.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "base/strlist.h"
#include "base/yaml.h"
#include "host/fs.h"
#include "node-util.h"
#include "node.h"

typedef struct Flags {
        const char *resource_dir, *cert_dir, *static_pod_name, *manifest_dir;
        unsigned max_eligible;
        StrList protected;
        bool dry_run;
} Flags;

static void help(FILE *f)
{
        (void) fprintf(
                f, "Usage: cluster-etcd-operator prune --max-eligible-revision=N "
                   "--protected-revisions=A,B,...\n"
                   "           [--resource-dir=DIR] [--static-pod-name=NAME] [--cert-dir=NAME] [FLAGS]\n"
                   "\n"
                   "Removes the old revision directories DIR/NAME-<revision> that the installer wrote:\n"
                   "those at or below --max-eligible-revision, except the protected revisions and the\n"
                   "revision of the static pod manifest running now. Nothing else is touched.\n"
                   "\n"
                   "  --max-eligible-revision=N   the newest revision that may go (required)\n"
                   "  --protected-revisions=LIST  revisions kept whatever their number (comma-separated)\n"
                   "  --resource-dir=DIR          default /etc/kubernetes/static-pod-resources\n"
                   "  --static-pod-name=NAME      default etcd-pod\n"
                   "  --cert-dir=NAME             the certificate directory under DIR, never removed\n"
                   "                              (default etcd-certs)\n"
                   "  --pod-manifest-dir=DIR      where NAME.yaml runs, its revision label kept\n"
                   "                              (default /etc/kubernetes/manifests)\n"
                   "  --dry-run                   log what would be removed, remove nothing\n"
                   "  -v=N                        log verbosity\n"
                   "\n"
                   "Exit codes: 0 done, 1 a directory could not be read or removed, 2 usage error.\n");
}

/* The revision of the static pod manifest running now: 0 when there is no manifest (nothing
 * runs, nothing to keep), > 0 its label, < 0 when it exists but says no revision. */
static int running_revision(const Flags *f, unsigned *ret)
{
        _cleanup_free_ char *path = NULL, *err = NULL;
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;

        *ret = 0;
        if (asprintf(&path, "%s/%s.yaml", f->manifest_dir, f->static_pod_name) < 0)
                return -ENOMEM;
        int r = yaml_parse_file(path, &pod, &err);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                log_error("%s: %s: not pruning while the running pod's revision is unknown", path,
                          err ? err : strerror(-r));
                return r;
        }
        if (nodecmd_parse_revision(strempty(json_get_string(pod, "metadata.labels.revision")), ret) < 0) {
                log_error("%s has no metadata.labels.revision: not pruning while the running pod's revision "
                          "is unknown",
                          path);
                return -EINVAL;
        }
        return 0;
}

/* The revision in a directory entry named <prefix>-<N>, 0 when it is no such name. */
static unsigned entry_revision(const char *name, const char *prefix)
{
        unsigned rev = 0;
        size_t n = strlen(prefix);
        if (strncmp(name, prefix, n) != 0 || name[n] != '-' ||
            nodecmd_parse_revision(name + n + 1, &rev) < 0)
                return 0;
        return rev;
}

static int prune(const Flags *f)
{
        unsigned running = 0;
        int failed = 0, removed = 0;

        if (running_revision(f, &running) < 0)
                return EXIT_RUNTIME;
        _cleanup_(closedirp) DIR *d = opendir(f->resource_dir);
        if (!d) {
                log_error("cannot read %s: %m", f->resource_dir);
                return EXIT_RUNTIME;
        }
        log_info(
                "%s: removing %s-N for N <= %u but the %zu protected revision(s) and the running one (%u)%s",
                f->resource_dir, f->static_pod_name, f->max_eligible, f->protected.n, running,
                f->dry_run ? " (dry run)" : "");
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                char rev_str[16];
                struct stat st;
                unsigned rev = entry_revision(de->d_name, f->static_pod_name);
                if (rev == 0 || streq(de->d_name, f->cert_dir))
                        continue;
                (void) snprintf(rev_str, sizeof rev_str, "%u", rev);
                if (rev > f->max_eligible || rev == running || strlist_contains(&f->protected, rev_str)) {
                        log_debug("keeping %s", de->d_name);
                        continue;
                }
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
                        log_info("leaving %s/%s alone: not a directory", f->resource_dir, de->d_name);
                        continue;
                }
                log_info("%s %s/%s", f->dry_run ? "would remove" : "removing", f->resource_dir, de->d_name);
                if (f->dry_run)
                        continue;
                int r = host_remove_tree(f->resource_dir, de->d_name);
                if (r < 0) {
                        log_error("removing %s/%s failed: %s", f->resource_dir, de->d_name, strerror(-r));
                        failed++;
                } else
                        removed++;
        }
        if (errno != 0) {
                log_error("reading %s: %m", f->resource_dir);
                return EXIT_RUNTIME;
        }
        log_info("%d revision director%s removed%s", removed, removed == 1 ? "y" : "ies",
                 failed ? ", some could not be" : "");
        return failed ? EXIT_RUNTIME : EXIT_OK;
}

static int prune_main(int argc, char *argv[])
{
        enum {
                ARG_MAX = 0x100,
                ARG_PROTECTED,
                ARG_RESOURCE_DIR,
                ARG_CERT_DIR,
                ARG_NAME,
                ARG_MANIFESTS,
                ARG_DRY
        };
        static const struct option options[] = {
                {"max-eligible-revision", required_argument, NULL, ARG_MAX},
                {"protected-revisions", required_argument, NULL, ARG_PROTECTED},
                {"resource-dir", required_argument, NULL, ARG_RESOURCE_DIR},
                {"cert-dir", required_argument, NULL, ARG_CERT_DIR},
                {"static-pod-name", required_argument, NULL, ARG_NAME},
                {"pod-manifest-dir", required_argument, NULL, ARG_MANIFESTS},
                {"dry-run", no_argument, NULL, ARG_DRY},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {.resource_dir = "/etc/kubernetes/static-pod-resources",
                   .cert_dir = "etcd-certs",
                   .static_pod_name = CM_ETCD_POD,
                   .manifest_dir = "/etc/kubernetes/manifests"};
        bool have_max = false;
        int c, r = EXIT_USAGE;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        r = EXIT_OK;
                        goto out;
                case ARG_MAX:
                        if (nodecmd_parse_revision(optarg, &f.max_eligible) < 0) {
                                log_error("--max-eligible-revision=%s: expected a revision (1, 2, ...)",
                                          optarg);
                                goto out;
                        }
                        have_max = true;
                        break;
                case ARG_PROTECTED:
                        if (strlist_add_csv(&f.protected, optarg) < 0) {
                                r = EXIT_RUNTIME;
                                goto out;
                        }
                        break;
                case ARG_RESOURCE_DIR:
                        f.resource_dir = optarg;
                        break;
                case ARG_CERT_DIR:
                        f.cert_dir = optarg;
                        break;
                case ARG_NAME:
                        f.static_pod_name = optarg;
                        break;
                case ARG_MANIFESTS:
                        f.manifest_dir = optarg;
                        break;
                case ARG_DRY:
                        f.dry_run = true;
                        break;
                default:
                        nodecmd_flag_error("prune", c, argv);
                        goto out;
                }
        if (optind != argc) {
                log_error("prune takes no arguments; see --help");
                goto out;
        }
        if (!have_max) {
                log_error("--max-eligible-revision is required: the newest revision whose directory may go");
                goto out;
        }
        for (size_t i = 0; i < f.protected.n; i++) {
                unsigned v;
                if (nodecmd_parse_revision(f.protected.v[i], &v) < 0) {
                        log_error("--protected-revisions: \"%s\" is not a revision (1, 2, ...)",
                                  f.protected.v[i]);
                        goto out;
                }
        }
        if (!dns1123_label_is_valid(f.static_pod_name)) {
                log_error("--static-pod-name=%s: expected a name such as etcd-pod", f.static_pod_name);
                goto out;
        }
        r = prune(&f);
out:
        strlist_done(&f.protected);
        return r;
}

const Command cmd_prune = {
        .name = "prune",
        .summary = "remove a static pod's old revision directories on a master (revision-pruner pods)",
        .run = prune_main,
};
