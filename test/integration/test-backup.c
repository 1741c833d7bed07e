/* `cluster-etcd-operator cluster-backup` as the real binary (CEO_BIN)
 * against a real TLS etcd from the harness and a host config directory laid
 * out as a master's /etc/kubernetes: the two files upstream writes, a
 * snapshot that verifies (by us and by etcdutl), a tarball holding the
 * current revision directories relative to the config dir with mode 0600,
 * --force's name, and failures that leave nothing behind: a manifest that
 * names no revision, an etcd that does not answer (the tarball already
 * written is removed), a backup "directory" that is a file. With an S3
 * store (test/s3's signature-checking peer, CEO_SRC naming the source tree):
 * the backup also lands as <prefix>/v2/Full-00000000-<revision>-<unix> and
 * <prefix>/kuberesources/<name>.tar.gz, read back byte for byte by the AWS
 * SDK; `s3 get-backup latest` gives the restore runbook's two files back;
 * bad store settings write nothing; a refused upload keeps the local backup.
 * Every run is under durability-shim.c (DURABILITY_SHIM): a rename or link
 * whose directory is not fsynced after it, or a temporary file renamed into
 * place unsynced, fails the test (review M4). */
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/log.h"
#include "dr/backup-manifest.h"
#include "host/fs.h"

#define S3_BACKUP_KEY "the-test-clusters-backup-key-0123456789"
#include "etcd-harness.h"
#include "etcd/snapshot.h"
#include "s3/snapshots.h"

static EtcdTestCluster cluster;
static Loop *loop;
static EtcdClient *client;
static char bin[4096], cfg[600];

static const char *const pods[] = {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"};

static unsigned durable_renames; /* renames and links the shim saw in all runs */

/* In the child: run under durability-shim.c, logging to `log`. */
static void durability_setenv(const char *log)
{
        const char *asan = getenv("ASAN_OPTIONS");
        _cleanup_free_ char *opts =
                strdup_printf("%s%sverify_asan_link_order=0", strempty(asan), asan && *asan ? ":" : "");
        if (!opts || setenv("LD_PRELOAD", getenv("DURABILITY_SHIM"), 1) < 0 ||
            setenv("DURABILITY_LOG", log, 1) < 0 || setenv("ASAN_OPTIONS", opts, 1) < 0)
                _exit(126);
}

/* In the parent: no VIOLATION line in the run's log. */
static void durability_check(const char *log)
{
        _cleanup_free_ char *text = NULL;
        if (read_full_file(log, 1 << 20, &text, NULL) < 0)
                return; /* the run renamed nothing */
        if (strstr(text, "VIOLATION"))
                fail_msg("not durable (review M4):\n%s", text);
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
                if (startswith(line, "rename ") || startswith(line, "link "))
                        durable_renames++;
        (void) unlink(log);
}

static int run(char *const argv[])
{
        _cleanup_free_ char *log = strdup_printf("%s/durability.log", cluster.dir);
        int status = 0;
        (void) unlink(log);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                durability_setenv(log);
                execv(argv[0], argv);
                _exit(127);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        durability_check(log);
        return WEXITSTATUS(status);
}

/* cluster-backup with the harness's client certificate and the config dir, then `extra` args. */
static int backup(const char *endpoint, const char *extra1, const char *extra2)
{
        char a_ep[256], a_ca[600], a_cert[600], a_key[600], a_cfg[700];
        (void) snprintf(a_ep, sizeof a_ep, "--endpoints=%s", endpoint);
        (void) snprintf(a_ca, sizeof a_ca, "--cacert=%s", cluster.ca_file);
        (void) snprintf(a_cert, sizeof a_cert, "--cert=%s/peer.crt", cluster.members[0].dir);
        (void) snprintf(a_key, sizeof a_key, "--key=%s/peer.key", cluster.members[0].dir);
        (void) snprintf(a_cfg, sizeof a_cfg, "--config-dir=%s", cfg);
        char *argv[] = {
                bin, "cluster-backup", a_ep, a_ca, a_cert, a_key, a_cfg, (char *) extra1, (char *) extra2,
                NULL};
        return run(argv);
}

/* The entries of `dir` (not . and ..), hidden ones included; 0 when empty or missing. */
static size_t list(const char *dir, char names[][256], size_t max)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0;
        while (d && (de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && n < max)
                        (void) snprintf(names[n++], 256, "%s", de->d_name);
        if (d)
                (void) closedir(d);
        return n;
}

static const char *find(char names[][256], size_t n, const char *prefix)
{
        for (size_t i = 0; i < n; i++)
                if (startswith(names[i], prefix))
                        return names[i];
        return NULL;
}

static void write_manifest(const char *pod, const char *text)
{
        _cleanup_free_ char *p = strdup_printf("%s/manifests/%s-pod.yaml", cfg, pod);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0644), 0);
}

/* Review M1: checksums_<ts>.json beside the two files, of the same stamp, matching them; signed
 * (with the S3 credentials' backupKey) only for a backup that went to a store. */
static void check_checksums(const char *dir, char names[][256], size_t n, bool signed_)
{
        const char *sums = find(names, n, "checksums_"), *snap = find(names, n, "snapshot_"),
                   *tar = find(names, n, "static_kuberesources_");
        assert_non_null(sums);
        assert_true(endswith(sums, ".json"));
        _cleanup_free_ char *sums_path = strdup_printf("%s/%s", dir, sums),
                            *snap_path = strdup_printf("%s/%s", dir, snap),
                            *tar_path = strdup_printf("%s/%s", dir, tar),
                            *want = backup_manifest_name_of(snap_path), *text = NULL;
        assert_string_equal(sums_path, want);
        struct stat st;
        assert_int_equal(stat(sums_path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        size_t len = 0;
        assert_int_equal(read_full_file(sums_path, BACKUP_MANIFEST_MAX, &text, &len), 0);
        BackupManifest m = {};
        char why[256] = "";
        assert_int_equal(backup_manifest_parse(text, len, &m, why, sizeof why), 0);
        assert_int_equal(backup_manifest_check_files(&m, snap_path, tar_path, why, sizeof why), 0);
        assert_string_equal(m.snapshot.name, snap);
        assert_string_equal(m.tarball.name, tar);
        assert_true(m.revision > 0 && m.cluster_id != 0);
        assert_true(labs((long) (m.created - time(NULL))) < 300);
        assert_int_equal(backup_manifest_verify(&m, S3_BACKUP_KEY), signed_ ? 0 : -ENOKEY);
}

static void test_backup(void **state)
{
        _cleanup_free_ char *dir = strdup_printf("%s/backup", cluster.dir);
        char names[8][256];

        (void) state;
        assert_int_equal(etcd_test_load(loop, client, 200, 512), 0);
        assert_int_equal(backup(cluster.members[0].client_url, dir, NULL), 0);
        assert_true(durable_renames >= 2); /* the shim saw the snapshot's link and the tarball's rename */
        size_t n = list(dir, names, 8);
        assert_int_equal(n, 3);
        const char *snap = find(names, n, "snapshot_"), *tar = find(names, n, "static_kuberesources_");
        check_checksums(dir, names, n, false);
        assert_non_null(snap);
        assert_non_null(tar);
        assert_true(endswith(snap, ".db") && endswith(tar, ".tar.gz"));
        assert_null(strstr(snap, "POSSIBLY_DIRTY"));

        /* The snapshot verifies, by us and by etcd's own tool, and holds the keys we wrote. */
        _cleanup_free_ char *snap_path = strdup_printf("%s/%s", dir, snap);
        uint64_t size = 0;
        assert_int_equal(etcd_snapshot_verify_file(snap_path, &size), 0);
        assert_true(size > 200 * 512);
        _cleanup_free_ char *status =
                strdup_printf("etcdutl snapshot status %s -w json >/dev/null", snap_path);
        assert_int_equal(system(status), 0);

        /* The tarball: 0600, the four revision directories as upstream names them. */
        _cleanup_free_ char *tar_path = strdup_printf("%s/%s", dir, tar);
        struct stat st;
        assert_int_equal(stat(tar_path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        _cleanup_free_ char *listing = strdup_printf("%s/listing", cluster.dir);
        _cleanup_free_ char *cmd = strdup_printf("tar -tzf %s > %s", tar_path, listing);
        assert_int_equal(system(cmd), 0);
        _cleanup_free_ char *text = NULL;
        assert_int_equal(read_full_file(listing, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "static-pod-resources/etcd-pod-7/secrets/etcd-all-certs/x.crt"));
        assert_non_null(strstr(text, "static-pod-resources/kube-apiserver-pod-12/"));
        assert_non_null(strstr(text, "static-pod-resources/kube-scheduler-pod-3/"));
        assert_null(strstr(text, "etcd-pod-6")); /* an older revision stays out */

        /* --force marks both files. */
        _cleanup_free_ char *dir2 = strdup_printf("%s/backup-forced", cluster.dir);
        assert_int_equal(backup(cluster.members[0].client_url, "--force", dir2), 0);
        n = list(dir2, names, 8);
        assert_int_equal(n, 3);
        for (size_t i = 0; i < n; i++)
                assert_non_null(strstr(names[i], "__POSSIBLY_DIRTY__"));
}

/* Review L3: tar creates the tarball under umask 077, so it is 0600 from its first byte
 * (a wrapper first on PATH records the umask tar runs with), even with a umask of 0. */
static void test_tarball_private_from_start(void **state)
{
        _cleanup_free_ char *wrap = strdup_printf("%s/tar-wrapper", cluster.dir),
                            *script = strdup_printf("%s/tar-wrapper/tar", cluster.dir),
                            *seen = strdup_printf("%s/tar-umask", cluster.dir),
                            *dir = strdup_printf("%s/backup-umask", cluster.dir), *text = NULL;
        _cleanup_free_ char *body =
                strdup_printf("#!/bin/sh\numask > '%s'\nPATH='%s' exec tar \"$@\"\n", seen, getenv("PATH"));
        _cleanup_free_ char *path = strdup_printf("%s:%s", wrap, getenv("PATH"));
        _cleanup_free_ char *old_path = strdup(getenv("PATH"));
        (void) state;

        assert_int_equal(host_mkdir_p(wrap, 0755), 0);
        assert_int_equal(write_file_atomic(script, body, strlen(body), 0755), 0);
        assert_int_equal(setenv("PATH", path, 1), 0);
        mode_t old_umask = umask(0);
        int r = backup(cluster.members[0].client_url, dir, NULL);
        (void) umask(old_umask);
        assert_int_equal(setenv("PATH", old_path, 1), 0);
        assert_int_equal(r, 0);
        assert_int_equal(read_full_file(seen, 64, &text, NULL), 0);
        assert_string_equal(text, "0077\n");
}

/* Review L14: a second backup into a directory one is writing to stops at once, and leaves
 * the first one's temporary files alone. */
static void test_concurrent_backup_refused(void **state)
{
        _cleanup_free_ char *dir = strdup_printf("%s/backup-locked", cluster.dir),
                            *partial = strdup_printf(
                                    "%s/backup-locked/.static_kuberesources_x.tar.gz.partial", cluster.dir);
        (void) state;

        assert_int_equal(host_mkdir_p(dir, 0700), 0);
        assert_int_equal(write_file_atomic(partial, "being written", 13, 0600), 0);
        _cleanup_(closep) int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0); /* as the running backup holds it */
        assert_int_equal(backup(cluster.members[0].client_url, dir, NULL), 1);
        assert_int_equal(access(partial, F_OK), 0);
        assert_int_equal(flock(fd, LOCK_UN), 0);
        assert_int_equal(backup(cluster.members[0].client_url, dir, NULL), 0);
        assert_int_not_equal(access(partial, F_OK), 0); /* now a leftover: removed */
}

static void test_failures_leave_nothing(void **state)
{
        char names[8][256];
        (void) state;

        /* etcd does not answer: the tarball, written first, is removed again. */
        _cleanup_free_ char *dir = strdup_printf("%s/backup-no-etcd", cluster.dir);
        _cleanup_free_ char *dead = strdup_printf("https://%s:1", cluster.members[0].ip);
        assert_int_equal(backup(dead, dir, "--timeout=5s"), 1);
        assert_int_equal(list(dir, names, 8), 0);

        /* A manifest that names no revision directory: nothing is written. */
        _cleanup_free_ char *dir2 = strdup_printf("%s/backup-bad-manifest", cluster.dir);
        write_manifest("kube-scheduler", "apiVersion: v1\nkind: Pod\n");
        assert_int_equal(backup(cluster.members[0].client_url, dir2, NULL), 1);
        assert_int_equal(list(dir2, names, 8), 0);
        write_manifest("kube-scheduler",
                       "path: /etc/kubernetes/static-pod-resources/kube-scheduler-pod-3\n");

        /* The backup "directory" is a file: a usage error, the file untouched. */
        _cleanup_free_ char *file = strdup_printf("%s/a-file", cluster.dir);
        assert_int_equal(write_file_atomic(file, "keep", 4, 0644), 0);
        assert_int_equal(backup(cluster.members[0].client_url, file, NULL), 2);
        _cleanup_free_ char *text = NULL;
        assert_int_equal(read_full_file(file, 64, &text, NULL), 0);
        assert_string_equal(text, "keep");

        /* No directory at all. */
        assert_int_equal(backup(cluster.members[0].client_url, NULL, NULL), 2);
}

/* kill -9 in the middle of the snapshot: no file under a backup's name is left
 * (only our hidden or .partial temporaries), and the next backup removes those
 * and completes. */
static void test_killed_leaves_nothing(void **state)
{
        _cleanup_free_ char *dir = strdup_printf("%s/backup-killed", cluster.dir);
        char names[8][256], a_ep[256], a_ca[600], a_cert[600], a_key[600], a_cfg[700];
        (void) state;

        assert_int_equal(etcd_test_load(loop, client, 300, 100000),
                         0); /* ~30 MB: a snapshot that takes a while */
        (void) snprintf(a_ep, sizeof a_ep, "--endpoints=%s", cluster.members[0].client_url);
        (void) snprintf(a_ca, sizeof a_ca, "--cacert=%s", cluster.ca_file);
        (void) snprintf(a_cert, sizeof a_cert, "--cert=%s/peer.crt", cluster.members[0].dir);
        (void) snprintf(a_key, sizeof a_key, "--key=%s/peer.key", cluster.members[0].dir);
        (void) snprintf(a_cfg, sizeof a_cfg, "--config-dir=%s", cfg);
        char *argv[] = {bin, "cluster-backup", a_ep, a_ca, a_cert, a_key, a_cfg, dir, NULL};
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execv(argv[0], argv);
                _exit(127);
        }
        /* Wait for the snapshot's temporary file to grow, then kill. */
        bool seen = false;
        for (int i = 0; i < 20000 && !seen; i++) {
                size_t n = list(dir, names, 8);
                for (size_t k = 0; k < n; k++) {
                        _cleanup_free_ char *p = strdup_printf("%s/%s", dir, names[k]);
                        struct stat st;
                        if (startswith(names[k], "snapshot_") && endswith(names[k], ".partial") &&
                            stat(p, &st) == 0 && st.st_size > 0)
                                seen = true;
                }
                if (!seen)
                        (void) usleep(500);
        }
        assert_true(seen);
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        size_t n = list(dir, names, 8);
        for (size_t k = 0; k < n; k++)
                if (!endswith(names[k], ".partial"))
                        fail_msg("a killed backup left %s", names[k]);

        /* The next one cleans up after it and completes. */
        assert_int_equal(backup(cluster.members[0].client_url, dir, NULL), 0);
        n = list(dir, names, 8);
        assert_int_equal(n, 3);
        assert_non_null(find(names, n, "snapshot_"));
        assert_non_null(find(names, n, "static_kuberesources_"));
}

/* verify backup-storage with the harness's client certificate; returns the exit code. */
static int verify(const char *backup_dir, const char *endpoint)
{
        char a_dir[700], a_ep[256], a_ca[600], a_cert[600], a_key[600];
        (void) snprintf(a_dir, sizeof a_dir, "--backup-dir=%s", backup_dir);
        (void) snprintf(a_ep, sizeof a_ep, "--endpoints=%s", endpoint);
        (void) snprintf(a_ca, sizeof a_ca, "--cacert=%s", cluster.ca_file);
        (void) snprintf(a_cert, sizeof a_cert, "--cert=%s/peer.crt", cluster.members[0].dir);
        (void) snprintf(a_key, sizeof a_key, "--key=%s/peer.key", cluster.members[0].dir);
        char *argv[] = {bin,    "verify", "backup-storage", a_dir, a_ep, a_ca,
                        a_cert, a_key,    "--timeout=2s",   NULL};
        return run(argv);
}

/* verify backup-storage (a backup Job's first step): room for twice the largest database on
 * the scratch disk; a volume that is not there, an etcd that does not answer, or a wrong
 * subject fail with their own exit codes; nothing is written either way. */
static void test_verify_backup_storage(void **state)
{
        (void) state;
        _cleanup_free_ char *dir = strdup_printf("%s/verify-target", cluster.dir);
        assert_int_equal(host_mkdir_p(dir, 0755), 0);
        assert_int_equal(verify(dir, cluster.members[0].client_url), 0);
        char names[8][256];
        assert_int_equal(list(dir, names, 8), 0);
        _cleanup_free_ char *missing = strdup_printf("%s/not-mounted", cluster.dir);
        assert_int_equal(verify(missing, cluster.members[0].client_url), 1);
        assert_int_equal(verify(dir, "https://127.0.0.1:1"), 1);
        char *wrong[] = {bin, "verify", "restore-storage", NULL};
        assert_int_equal(run(wrong), 2);
}

static void make_host(void)
{
        static const unsigned revs[] = {12, 9, 3, 7};
        (void) snprintf(cfg, sizeof cfg, "%s/etc-kubernetes", cluster.dir);
        _cleanup_free_ char *manifests = strdup_printf("%s/manifests", cfg);
        assert_int_equal(host_mkdir_p(manifests, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(pods); i++) {
                _cleanup_free_ char *d = strdup_printf(
                        "%s/static-pod-resources/%s-pod-%u/secrets/etcd-all-certs", cfg, pods[i], revs[i]);
                _cleanup_free_ char *f = strdup_printf("%s/x.crt", d);
                _cleanup_free_ char *m = strdup_printf(
                        "apiVersion: v1\nkind: Pod\nspec:\n  volumes:\n  - hostPath:\n      path: "
                        "/etc/kubernetes/static-pod-resources/%s-pod-%u\n",
                        pods[i], revs[i]);
                assert_int_equal(host_mkdir_p(d, 0755), 0);
                assert_int_equal(write_file_atomic(f, "pem", 3, 0600), 0);
                write_manifest(pods[i], m);
        }
        _cleanup_free_ char *old = strdup_printf("%s/static-pod-resources/etcd-pod-6", cfg);
        assert_int_equal(host_mkdir_p(old, 0755), 0);
}

/* ---- to an S3 store ---- */

static pid_t peer_pid;
static char peer_url[128], src_dir[2048];

#define S3_AK     "AKIABACKUPTEST"
#define S3_SK     "backup-s3cr3t"
#define S3_BUCKET "etcd-backups"

/* Starts test/s3/s3-peer.js; 0 when it listens (peer_url set). */
static int start_peer(const char *dir)
{
        _cleanup_free_ char *js = strdup_printf("%s/test/s3/s3-peer.js", src_dir);
        int fds[2];
        if (!js || pipe(fds) < 0)
                return -1;
        peer_pid = fork();
        if (peer_pid < 0)
                return -1;
        if (peer_pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) dup2(fds[1], 1);
                execlp("node", "node", "--openssl-legacy-provider", js, "--address", "127.0.84.1", "--port",
                       "0", "--dir", dir, "--access-key", S3_AK, "--secret-key", S3_SK, "--bucket",
                       S3_BUCKET, (char *) NULL);
                _exit(127);
        }
        (void) close(fds[1]);
        char line[256] = "";
        size_t len = 0;
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        while (len < sizeof line - 1 && !strchr(line, '\n') && poll(&p, 1, 30000) > 0) {
                ssize_t k = read(fds[0], line + len, sizeof line - 1 - len);
                if (k <= 0)
                        break;
                len += (size_t) k;
                line[len] = 0;
        }
        (void) close(fds[0]);
        return sscanf(line, "listening %127s", peer_url) == 1 ? 0 : -1;
}

static void stop_peer(void)
{
        if (peer_pid > 0) {
                (void) kill(peer_pid, SIGTERM);
                (void) waitpid(peer_pid, NULL, 0);
                peer_pid = 0;
        }
}

static char *creds_dir(const char *name, const char *secret)
{
        char *d = strdup_printf("%s/%s", cluster.dir, name);
        const struct {
                const char *file, *value;
        } files[] = {{"accessKeyID", S3_AK},   {"secretAccessKey", secret},
                     {"endpoint", peer_url},   {"s3ForcePathStyle", "true"},
                     {"insecureHTTP", "true"}, {"backupKey", S3_BACKUP_KEY}};
        assert_int_equal(mkdir(d, 0700), 0);
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = strdup_printf("%s/%s", d, files[i].file);
                assert_int_equal(write_file_atomic(p, files[i].value, strlen(files[i].value), 0600), 0);
        }
        return d;
}

/* The object `key` as the AWS SDK reads it, compared with `path`. */
static bool sdk_same(const char *key, const char *path)
{
        _cleanup_free_ char *out = strdup_printf("%s/sdk-read", cluster.dir);
        _cleanup_free_ char *cmd =
                strdup_printf("node %s/test/s3/s3-client.js --endpoint %s --access-key %s --secret-key %s "
                              "--bucket %s get '%s' "
                              "'%s' && cmp -s '%s' '%s'",
                              src_dir, peer_url, S3_AK, S3_SK, S3_BUCKET, key, out, out, path);
        return system(cmd) == 0;
}

static void test_backup_to_s3(void **state)
{
        char names[8][256];
        (void) state;
        if (!getenv("CEO_SRC")) {
                /* CMake sets it; run by hand, say why this part is skipped. */
                (void) fprintf(stderr,
                               "skipping the S3 part: CEO_SRC (the source tree, for test/s3) is not set\n");
                skip();
        }
        (void) snprintf(src_dir, sizeof src_dir, "%s", getenv("CEO_SRC"));
        _cleanup_free_ char *store = strdup_printf("%s/s3-store", cluster.dir);
        assert_int_equal(start_peer(store), 0);
        _cleanup_free_ char *good = creds_dir("s3-good", S3_SK), *bad = creds_dir("s3-bad", "wrong");
        _cleanup_free_ char *a_good = strdup_printf("--s3-credentials-dir=%s", good),
                            *a_bad = strdup_printf("--s3-credentials-dir=%s", bad);

        /* Bad settings: nothing is written at all. */
        _cleanup_free_ char *d0 = strdup_printf("%s/backup-s3-usage", cluster.dir);
        assert_int_equal(backup(cluster.members[0].client_url, a_good, d0), 2); /* no --s3-bucket */
        assert_int_equal(list(d0, names, 8), 0);

        /* The backup, uploaded. */
        _cleanup_free_ char *d1 = strdup_printf("%s/backup-s3", cluster.dir);
        char *argv[] = {bin,
                        "cluster-backup",
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        NULL,
                        a_good,
                        (char *) ("--s3-bucket=" S3_BUCKET),
                        "--s3-prefix=clusters/test",
                        d1,
                        NULL};
        char a_ep[256], a_ca[600], a_cert[600], a_key[600], a_cfg[700];
        (void) snprintf(a_ep, sizeof a_ep, "--endpoints=%s", cluster.members[0].client_url);
        (void) snprintf(a_ca, sizeof a_ca, "--cacert=%s", cluster.ca_file);
        (void) snprintf(a_cert, sizeof a_cert, "--cert=%s/peer.crt", cluster.members[0].dir);
        (void) snprintf(a_key, sizeof a_key, "--key=%s/peer.key", cluster.members[0].dir);
        (void) snprintf(a_cfg, sizeof a_cfg, "--config-dir=%s", cfg);
        argv[2] = a_ep, argv[3] = a_ca, argv[4] = a_cert, argv[5] = a_key, argv[6] = a_cfg;
        assert_int_equal(run(argv), 0);
        size_t n = list(d1, names, 8);
        assert_int_equal(n, 3);
        check_checksums(d1, names, n, true);
        _cleanup_free_ char *snap = strdup_printf("%s/%s", d1, find(names, n, "snapshot_")),
                            *tar = strdup_printf("%s/%s", d1, find(names, n, "static_kuberesources_")),
                            *sums = strdup_printf("%s/%s", d1, find(names, n, "checksums_"));

        /* What the store holds, listed by us: one full snapshot named by revision and time. */
        _cleanup_free_ char *listing = strdup_printf("%s/s3-list", cluster.dir);
        _cleanup_free_ char *cmd = strdup_printf("%s s3 list v2/ --credentials-dir %s --bucket %s --prefix "
                                                 "clusters/test > %s",
                                                 bin, good, S3_BUCKET, listing);
        assert_int_equal(system(cmd), 0);
        _cleanup_free_ char *text = NULL;
        assert_int_equal(read_full_file(listing, 1 << 16, &text, NULL), 0);
        char *full = strstr(text, "v2/Full-00000000-");
        assert_non_null(full);
        full[strcspn(full, "\n")] = 0;
        S3Snapshot parsed;
        assert_int_equal(s3_snapshot_parse(full, &parsed), 0);
        assert_true(parsed.last > 200); /* the keys test_backup wrote are in it */
        assert_true(labs((long) (parsed.created - time(NULL))) < 120);
        _cleanup_free_ char *snap_key = strdup_printf("clusters/test/%s", full),
                            *tar_key = strdup_printf("clusters/test/kuberesources/%s.tar.gz", full + 3),
                            *sums_key = strdup_printf("clusters/test/checksums/%s.json", full + 3);
        assert_true(sdk_same(snap_key, snap));
        assert_true(sdk_same(tar_key, tar));
        assert_true(sdk_same(sums_key, sums)); /* the signed checksum file beside them */

        /* Back from the store as the restore runbook takes a backup. */
        _cleanup_free_ char *d2 = strdup_printf("%s/backup-from-s3", cluster.dir);
        free(cmd);
        cmd = strdup_printf(
                "%s s3 get-backup latest %s --credentials-dir %s --bucket %s --prefix clusters/test", bin,
                d2, good, S3_BUCKET);
        assert_int_equal(system(cmd), 0);
        n = list(d2, names, 8);
        assert_int_equal(n, 3);
        check_checksums(d2, names, n, true);
        _cleanup_free_ char *cmp1 = strdup_printf("cmp -s %s %s/%s", snap, d2, find(names, n, "snapshot_")),
                            *cmp2 = strdup_printf("cmp -s %s %s/%s", tar, d2,
                                                  find(names, n, "static_kuberesources_"));
        assert_int_equal(system(cmp1), 0);
        assert_int_equal(system(cmp2), 0);
        /* Under the names they had where the backup was taken (one instant names both). */
        assert_string_equal(find(names, n, "snapshot_"), strrchr(snap, '/') + 1);
        assert_string_equal(find(names, n, "static_kuberesources_"), strrchr(tar, '/') + 1);
        /* Never over existing files. */
        assert_int_not_equal(system(cmd), 0);

        /* A second backup with the store's retention: LimitBased keeping 1 leaves only it, the
         * first one's tarball gone with its snapshot. */
        _cleanup_free_ char *d4 = strdup_printf("%s/backup-s3-gc", cluster.dir);
        char *argv_gc[16];
        memcpy(argv_gc, argv, sizeof argv);
        argv_gc[10] = "--s3-gc-policy=LimitBased";
        argv_gc[11] = "--s3-max-backups=1";
        argv_gc[12] = d4;
        argv_gc[13] = NULL;
        (void) usleep(1100 * 1000); /* another second in its name */
        assert_int_equal(run(argv_gc), 0);
        free(cmd);
        cmd = strdup_printf("%s s3 list --credentials-dir %s --bucket %s --prefix clusters/test > %s", bin,
                            good, S3_BUCKET, listing);
        assert_int_equal(system(cmd), 0);
        full = NULL;
        free(text);
        text = NULL;
        assert_int_equal(read_full_file(listing, 1 << 16, &text, NULL), 0);
        /* the first snapshot and its tarball (`full` pointed into the freed listing) */
        assert_null(strstr(text, snap_key + strlen("clusters/test/")));
        assert_null(strstr(text, tar_key + strlen("clusters/test/")));
        assert_null(strstr(text, sums_key + strlen("clusters/test/")));
        assert_non_null(strstr(text, "checksums/Full-"));
        char *second = strstr(text, "v2/Full-00000000-");
        assert_non_null(second);
        assert_null(strstr(second + 1, "v2/Full-"));
        assert_non_null(strstr(text, "kuberesources/Full-"));
        assert_null(strstr(strstr(text, "kuberesources/Full-") + 1, "kuberesources/Full-"));
        /* A bad policy is a usage error before anything is written. */
        argv_gc[10] = "--s3-gc-policy=Newest";
        assert_int_equal(run(argv_gc), 2);

        /* A refused upload: exit 1, the local backup whole. */
        _cleanup_free_ char *d3 = strdup_printf("%s/backup-s3-refused", cluster.dir);
        argv[7] = a_bad;
        argv[10] = d3;
        assert_int_equal(run(argv), 1);
        assert_int_equal(list(d3, names, 8), 3);

        /* Review M1: a store without backupKey is a usage error naming it; nothing is written. */
        _cleanup_free_ char *keyless = creds_dir("s3-keyless", S3_SK),
                            *key_file = strdup_printf("%s/backupKey", keyless),
                            *a_keyless = strdup_printf("--s3-credentials-dir=%s", keyless),
                            *d5 = strdup_printf("%s/backup-s3-keyless", cluster.dir);
        assert_int_equal(unlink(key_file), 0);
        argv[7] = a_keyless;
        argv[10] = d5;
        assert_int_equal(run(argv), 2);
        assert_int_equal(list(d5, names, 8), 0);
        stop_peer();
}

static int setup(void **state)
{
        const char *env = getenv("CEO_BIN");
        (void) state;
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        if (env)
                (void) snprintf(bin, sizeof bin, "%s", env);
        else {
                char self[4096];
                ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
                assert_true(n > 0);
                self[n] = 0;
                (void) snprintf(bin, sizeof bin, "%s/../../cluster-etcd-operator", dirname(self));
        }
        if (access(bin, X_OK) < 0) {
                fprintf(stderr, "%s: %s (build the cluster-etcd-operator target, or set CEO_BIN)\n", bin,
                        strerror(errno));
                return -1;
        }
        if (etcd_test_cluster_init(&cluster, 1, NULL) < 0 || etcd_test_cluster_bootstrap(&cluster, 1) < 0)
                return -1;
        loop = loop_new();
        client = etcd_test_client(&cluster, loop, 0x1);
        if (!client)
                return -1;
        make_host();
        return 0;
}

static int teardown(void **state)
{
        (void) state;
        stop_peer();
        client = etcd_client_free(client);
        loop = loop_unref(loop);
        etcd_test_cluster_destroy(&cluster);
        return 0;
}

int main(void)
{
        if (!getenv("DURABILITY_SHIM")) {
                fprintf(stderr, "DURABILITY_SHIM is not set: run this test through ctest, which names "
                                "test/integration/libdurability-shim.so\n");
                return 1;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_backup),
                cmocka_unit_test(test_backup_to_s3),
                cmocka_unit_test(test_tarball_private_from_start),
                cmocka_unit_test(test_concurrent_backup_refused),
                cmocka_unit_test(test_failures_leave_nothing),
                cmocka_unit_test(test_killed_leaves_nothing),
                cmocka_unit_test(test_verify_backup_storage),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
