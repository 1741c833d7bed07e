/* The disaster-recovery layer driven directly, with its inputs as values and
 * no command line (operator/dr, dr/restore.h): a backup picked from its
 * directory and checked against its checksum file; the snapshot verified;
 * the etcd pod stopped through a stand-in crictl; the data dir moved aside,
 * never deleted or replaced; and, for each check of step 1 in each mode, a
 * refusal after which nothing on the node was moved, deleted or overwritten
 * (the manifest, the data dir, the certificates and the backup as they were,
 * nothing in the stopped-manifests dir). PATH holds no tool in those
 * refusals, so a restore that went on to step 2 would fail only after it had
 * moved the manifest, and the tree would show it. Also the revision bump's
 * choice of path (dr/bump.h), which bump-revision writes to its status file. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/fileio.h"
#include "dr/backup-manifest.h"
#include "dr/bump.h"
#include "dr/restore.h"
#include "host/fs.h"

#define TS       "2024-03-05_101112"
#define SNAPSHOT "snapshot_" TS ".db"
#define TARBALL  "static_kuberesources_" TS ".tar.gz"
#define SUMS     "checksums_" TS ".json"
#define POD_DIR  "static-pod-resources/etcd-certs/configmaps/restore-etcd-pod"

/* A master's files in a temporary directory. */
typedef struct Node {
        char root[64];
        char *config, *data, *backup_data, *stopped, *backup, *bin;
} Node;

static char *path_of(const char *a, const char *b)
{
        char *p = strdup_printf("%s/%s", a, b);
        assert_non_null(p);
        return p;
}

static void put(const char *dir, const char *name, const void *data, size_t len)
{
        _cleanup_free_ char *p = path_of(dir, name);
        _cleanup_free_ char *parent = strdup(p);
        *strrchr(parent, '/') = 0;
        assert_int_equal(host_mkdir_p(parent, 0755), 0);
        assert_int_equal(write_file_atomic(p, data, len, 0644), 0);
}

static void put_text(const char *dir, const char *name, const char *text)
{
        put(dir, name, text, strlen(text));
}

/* What etcd_snapshot_verify_file() accepts: the database, then its SHA-256. */
static void put_snapshot(const char *dir, const char *name, size_t db_size)
{
        unsigned char buf[512];
        unsigned int len = 0;
        assert_true(db_size + 32 <= sizeof buf);
        for (size_t i = 0; i < db_size; i++)
                buf[i] = (unsigned char) (i * 7);
        assert_int_equal(EVP_Digest(buf, db_size, buf + db_size, &len, EVP_sha256(), NULL), 1);
        put(dir, name, buf, db_size + len);
}

/* The checksum file of the backup's files as they are now. */
static void put_sums(const Node *n)
{
        _cleanup_free_ char *snap = path_of(n->backup, SNAPSHOT), *tar = path_of(n->backup, TARBALL);
        _cleanup_free_ char *text = NULL;
        BackupManifest m = {.revision = 7, .cluster_id = 0x1234, .created = 1709633472};
        assert_int_equal(backup_file_sum(snap, &m.snapshot), 0);
        assert_int_equal(backup_file_sum(tar, &m.tarball), 0);
        assert_int_equal(backup_manifest_format(&m, &text), 0);
        put_text(n->backup, SUMS, text);
}

static void node_setup(Node *n)
{
        *n = (Node){};
        (void) snprintf(n->root, sizeof n->root, "/tmp/test-dr-XXXXXX");
        assert_non_null(mkdtemp(n->root));
        n->config = path_of(n->root, "etc-kubernetes");
        n->data = path_of(n->root, "var-lib-etcd");
        n->backup_data = path_of(n->root, "var-lib-etcd-backup");
        n->stopped = path_of(n->root, "manifests-stopped");
        n->backup = path_of(n->root, "backup");
        n->bin = path_of(n->root, "bin");
        assert_int_equal(host_mkdir_p(n->bin, 0755), 0);
        put_text(n->config, "manifests/etcd-pod.yaml", "the etcd pod of revision 3\n");
        put_text(n->config, POD_DIR "/pod.yaml", "the restore pod\n");
        put_text(n->config, POD_DIR "/quorum-restore-pod.yaml", "the quorum-restore pod\n");
        put_text(n->config, "static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-master-0.key",
                 "a private key\n");
        put_text(n->config, "static-pod-resources/etcd-pod-3/etcd-pod.yaml", "revision 3\n");
        put_text(n->data, "member/snap/db", "the member's database\n");
        put_text(n->data, "member/wal/0000000000000000-0000000000000000.wal", "the member's log\n");
        put_text(n->data, "revision.json", "{\"maxRevision\": 9}\n");
        /* An older backup without a tarball beside the newest, whole one. */
        put_snapshot(n->backup, "snapshot_2024-03-04_101112.db", 100);
        put_snapshot(n->backup, SNAPSHOT, 200);
        put_text(n->backup, TARBALL, "the tarball of the static pod resources\n");
        put_sums(n);
}

static void node_done(Node *n)
{
        char *slash = strrchr(n->root, '/');
        *slash = 0;
        assert_int_equal(host_remove_tree(n->root, slash + 1), 0);
        free(n->config);
        free(n->data);
        free(n->backup_data);
        free(n->stopped);
        free(n->backup);
        free(n->bin);
}

static RestoreInput input(const Node *n, RestoreMode mode)
{
        return (RestoreInput){.mode = mode,
                              .config_dir = n->config,
                              .data_dir = n->data,
                              .backup_data_dir = n->backup_data,
                              .stopped_dir = n->stopped,
                              .backup_dir = mode == RESTORE_QUORUM ? NULL : n->backup,
                              .name = "master-0",
                              .peer_host = "192.0.2.10"};
}

/* Every name under `dir` (sorted, relative), with the contents of each file. */
static void digest_into(Buf *b, const char *dir, const char *rel)
{
        struct dirent **v = NULL;
        int k = scandir(dir, &v, NULL, alphasort);
        assert_true(k >= 0);
        for (int i = 0; i < k; i++) {
                const char *name = v[i]->d_name;
                if (!streq(name, ".") && !streq(name, "..")) {
                        _cleanup_free_ char *p = path_of(dir, name), *r = path_of(rel, name), *text = NULL;
                        struct stat st;
                        size_t len = 0;
                        assert_int_equal(lstat(p, &st), 0);
                        assert_int_equal(buf_append(b, r, strlen(r)), 0);
                        if (S_ISDIR(st.st_mode)) {
                                assert_int_equal(buf_append(b, "/\n", 2), 0);
                                digest_into(b, p, r);
                        } else {
                                assert_int_equal(read_full_file(p, 1 << 20, &text, &len), 0);
                                assert_int_equal(buf_append(b, "=", 1), 0);
                                assert_int_equal(buf_append(b, text, len), 0);
                                assert_int_equal(buf_append(b, "\n", 1), 0);
                        }
                }
                free(v[i]);
        }
        free(v);
}

static char *digest(const char *dir)
{
        Buf b = BUF_INIT(0);
        digest_into(&b, dir, ".");
        assert_int_equal(buf_append(&b, "", 1), 0);
        return buf_steal(&b);
}

static bool exists(const char *dir, const char *name)
{
        _cleanup_free_ char *p = path_of(dir, name);
        return access(p, F_OK) == 0;
}

static void test_find_and_check(void **state)
{
        _cleanup_(restore_done) Restore rs = {};
        Node n;
        node_setup(&n);
        RestoreInput in = input(&n, RESTORE_POD);
        _cleanup_free_ char *snap = path_of(n.backup, SNAPSHOT), *tar = path_of(n.backup, TARBALL),
                            *sums = path_of(n.backup, SUMS);

        assert_int_equal(restore_init(&rs, &in), 0);
        assert_int_equal(strlen(rs.ts), strlen(TS));
        assert_int_equal(restore_find_backup(&rs), 0);
        assert_string_equal(rs.backup.snapshot, snap); /* the newest, not the older one */
        assert_string_equal(rs.backup.tar, tar);
        assert_string_equal(rs.backup.sums, sums);
        assert_int_equal(restore_check_checksums(&rs), 0);

        /* A byte of the tarball changed, then the snapshot cut short: each found by its sum. */
        put_text(n.backup, TARBALL, "The tarball of the static pod resources\n");
        assert_int_equal(restore_check_checksums(&rs), -EBADMSG);
        put_sums(&n);
        assert_int_equal(restore_check_checksums(&rs), 0);
        assert_int_equal(truncate(snap, 100), 0);
        assert_int_equal(restore_check_checksums(&rs), -EBADMSG);

        /* No checksum file: refused, unless the input says to go on without one. */
        assert_int_equal(unlink(sums), 0);
        assert_int_equal(restore_check_checksums(&rs), -ENOENT);
        rs.in.no_checksum_file = true;
        assert_int_equal(restore_check_checksums(&rs), 0);
        put_text(n.backup, SUMS, "{\"kind\": \"something else\"}\n");
        assert_int_equal(restore_check_checksums(&rs), -EINVAL); /* one that is there is always read */

        /* Without its tarball, a backup is enough for in place only. */
        assert_int_equal(unlink(tar), 0);
        assert_int_equal(restore_find_backup(&rs), -ENOENT);
        rs.in.mode = RESTORE_IN_PLACE;
        assert_int_equal(restore_find_backup(&rs), 0);
        assert_null(rs.backup.tar);
        node_done(&n);
}

static void test_verify_snapshot(void **state)
{
        _cleanup_(restore_done) Restore rs = {};
        _cleanup_free_ char *path = strdup(getenv("PATH"));
        Node n;
        node_setup(&n);
        RestoreInput in = input(&n, RESTORE_POD);
        _cleanup_free_ char *snap = path_of(n.backup, SNAPSHOT);

        assert_int_equal(restore_init(&rs, &in), 0);
        assert_int_equal(restore_find_backup(&rs), 0);
        /* No etcdctl on PATH: its SHA-256 is the whole check. */
        assert_int_equal(setenv("PATH", n.bin, 1), 0);
        assert_int_equal(restore_verify_snapshot(&rs), 0);
        assert_int_equal(rs.backup.db_size, 200);
        /* Cut short after the checksum file was written of it: its own SHA-256 refuses it. */
        assert_int_equal(truncate(snap, 150), 0);
        put_sums(&n);
        assert_int_equal(restore_check_checksums(&rs), 0);
        assert_int_equal(restore_verify_snapshot(&rs), -EBADMSG);
        assert_int_equal(setenv("PATH", path, 1), 0);
        node_done(&n);
}

typedef enum Damage {
        DAMAGE_NONE,
        DAMAGE_TARBALL,         /* replaced after the checksum file was written */
        DAMAGE_SNAPSHOT,        /* cut short after the checksum file was written */
        DAMAGE_SNAPSHOT_RESUMS, /* cut short before the checksum file was written */
        DAMAGE_NO_SUMS,
        DAMAGE_NO_TARBALL,
        DAMAGE_NO_POD,
        DAMAGE_NO_QUORUM_POD,
        DAMAGE_NO_MEMBER,
} Damage;

static void damage(const Node *n, Damage d)
{
        _cleanup_free_ char *snap = path_of(n->backup, SNAPSHOT), *tar = path_of(n->backup, TARBALL),
                            *sums = path_of(n->backup, SUMS), *pod = path_of(n->config, POD_DIR "/pod.yaml"),
                            *qpod = path_of(n->config, POD_DIR "/quorum-restore-pod.yaml");
        switch (d) {
        case DAMAGE_NONE:
                break;
        case DAMAGE_TARBALL:
                put_text(n->backup, TARBALL, "a tarball someone else put here\n");
                break;
        case DAMAGE_SNAPSHOT:
                assert_int_equal(truncate(snap, 150), 0);
                break;
        case DAMAGE_SNAPSHOT_RESUMS:
                assert_int_equal(truncate(snap, 150), 0);
                put_sums(n);
                break;
        case DAMAGE_NO_SUMS:
                assert_int_equal(unlink(sums), 0);
                break;
        case DAMAGE_NO_TARBALL:
                assert_int_equal(unlink(tar), 0);
                break;
        case DAMAGE_NO_POD:
                assert_int_equal(unlink(pod), 0);
                break;
        case DAMAGE_NO_QUORUM_POD:
                assert_int_equal(unlink(qpod), 0);
                break;
        case DAMAGE_NO_MEMBER:
                assert_int_equal(host_remove_tree(n->data, "member"), 0);
                break;
        }
}

static void test_refusals_change_nothing(void **state)
{
        static const struct {
                const char *what;
                RestoreMode mode;
                Damage damage;
                int error;
        } rows[] = {
                {"tarball replaced", RESTORE_POD, DAMAGE_TARBALL, -EBADMSG},
                {"snapshot cut short", RESTORE_IN_PLACE, DAMAGE_SNAPSHOT, -EBADMSG},
                {"snapshot fails its own SHA-256", RESTORE_POD, DAMAGE_SNAPSHOT_RESUMS, -EBADMSG},
                {"no checksum file", RESTORE_POD, DAMAGE_NO_SUMS, -ENOENT},
                {"no tarball", RESTORE_POD, DAMAGE_NO_TARBALL, -ENOENT},
                {"no restore pod", RESTORE_POD, DAMAGE_NO_POD, -ENOENT},
                {"tarball cannot be listed (no tar)", RESTORE_POD, DAMAGE_NONE, -ENOENT},
                {"quorum: no member dir", RESTORE_QUORUM, DAMAGE_NO_MEMBER, -ENOENT},
                {"quorum: no quorum-restore pod", RESTORE_QUORUM, DAMAGE_NO_QUORUM_POD, -ENOENT},
                {"quorum: no peers to ask", RESTORE_QUORUM, DAMAGE_NONE, -EINVAL},
        };
        _cleanup_free_ char *path = strdup(getenv("PATH"));

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(restore_done) Restore rs = {};
                Node n;
                node_setup(&n);
                damage(&n, rows[i].damage);
                RestoreInput in = input(&n, rows[i].mode);
                _cleanup_free_ char *config = digest(n.config), *data = digest(n.data),
                                    *backup = digest(n.backup);

                assert_int_equal(setenv("PATH", n.bin, 1), 0);
                assert_int_equal(restore_init(&rs, &in), 0);
                int r = restore_run(&rs);
                assert_int_equal(setenv("PATH", path, 1), 0);
                if (r != rows[i].error)
                        fail_msg("%s: %d, want %d", rows[i].what, r, rows[i].error);

                _cleanup_free_ char *config2 = digest(n.config), *data2 = digest(n.data),
                                    *backup2 = digest(n.backup);
                assert_string_equal(config, config2);
                assert_string_equal(data, data2);
                assert_string_equal(backup, backup2);
                assert_false(exists(n.root, "manifests-stopped"));
                /* Step 1 may make the backup data dir for its free-space check, nothing in it. */
                if (exists(n.root, "var-lib-etcd-backup")) {
                        _cleanup_free_ char *bd = digest(n.backup_data);
                        assert_string_equal(bd, "");
                }
                node_done(&n);
        }
}

static void test_move_data_dir_aside(void **state)
{
        Node n;
        node_setup(&n);
        RestoreInput in = input(&n, RESTORE_POD);
        Restore rs = {};

        assert_int_equal(restore_init(&rs, &in), 0);
        (void) snprintf(rs.ts, sizeof rs.ts, TS);
        put_text(n.backup_data, "member/snap/db", "an earlier restore's member\n");
        put_text(n.data, "fio.tmp", "a stray file\n");

        assert_int_equal(restore_move_data_dir_aside(&rs), 0);
        _cleanup_free_ char *left = digest(n.data);
        assert_string_equal(left, "");
        _cleanup_free_ char *aside = digest(n.backup_data);
        assert_string_equal(aside, "./extra-data-dir-contents-" TS "/\n"
                                   "./extra-data-dir-contents-" TS "/fio.tmp=a stray file\n\n"
                                   "./member/\n"
                                   "./member/snap/\n"
                                   "./member/snap/db=the member's database\n\n"
                                   "./member/wal/\n"
                                   "./member/wal/0000000000000000-0000000000000000.wal=the member's log\n\n"
                                   "./member." TS "/\n"
                                   "./member." TS "/snap/\n"
                                   "./member." TS "/snap/db=an earlier restore's member\n\n"
                                   "./revision.json={\"maxRevision\": 9}\n\n");

        /* Again within the same second (review L9): nothing set aside before is replaced. */
        put_text(n.data, "member/snap/db", "a third member\n");
        assert_int_equal(restore_move_data_dir_aside(&rs), 0);
        assert_true(exists(n.backup_data, "member." TS "/snap/db"));
        assert_true(exists(n.backup_data, "member." TS "-1/snap/db"));
        assert_true(exists(n.backup_data, "member/snap/db"));
        restore_done(&rs);
        node_done(&n);
}

static void test_stop_etcd_pod(void **state)
{
        static const char *const crictl[] = {
                "#!/bin/sh\nexit 0\n",            /* no etcd container runs */
                "#!/bin/sh\necho 0123456789ab\n", /* etcd still runs */
        };
        _cleanup_free_ char *path = strdup(getenv("PATH"));

        for (size_t i = 0; i < ELEMENTSOF(crictl); i++) {
                _cleanup_(restore_done) Restore rs = {};
                Node n;
                node_setup(&n);
                RestoreInput in = input(&n, RESTORE_POD);
                _cleanup_free_ char *data = digest(n.data), *tool = path_of(n.bin, "crictl");
                put_text(n.bin, "crictl", crictl[i]);
                assert_int_equal(chmod(tool, 0755), 0);

                assert_int_equal(restore_init(&rs, &in), 0);
                assert_int_equal(setenv("PATH", n.bin, 1), 0);
                int r = restore_stop_etcd_pod(&rs);
                assert_int_equal(setenv("PATH", path, 1), 0);
                assert_int_equal(r, i == 0 ? 0 : -ETIMEDOUT);
                /* Either way the manifest is in the stopped dir (whole) and the data dir as it was. */
                assert_false(exists(n.config, "manifests/etcd-pod.yaml"));
                _cleanup_free_ char *stopped = digest(n.stopped), *data2 = digest(n.data);
                assert_string_equal(stopped, "./etcd-pod.yaml=the etcd pod of revision 3\n\n");
                assert_string_equal(data, data2);
                node_done(&n);
        }
}

static void test_bump_decide(void **state)
{
        static const struct {
                uint64_t max_revision, from, max_writes;
                BumpPath path;
                uint64_t target;
                const char *reason;
        } rows[] = {
                {0, 100, 1000000, BUMP_UNAVAILABLE, 0,
                 "no revision.json with maxRevision: the highest revision clients saw is unknown"},
                {1000, 60000, 1000000, BUMP_NONE_NEEDED, 51000,
                 "revision 60000 is already past 51000 (maxRevision 1000 of /r/revision.json plus 50000)"},
                {1000, 51000, 1000000, BUMP_NONE_NEEDED, 51000,
                 "revision 51000 is already past 51000 (maxRevision 1000 of /r/revision.json plus 50000)"},
                {1000000, 10, 1000, BUMP_UNAVAILABLE, 1050000,
                 "the gap from 10 to 1050000 is over --max-writes 1000"},
                {1000, 10, 50990, BUMP_WRITES, 51000, "maxRevision 1000 of /r/revision.json plus 50000"},
                {UINT64_MAX - 1, 10, UINT64_MAX, BUMP_WRITES, UINT64_MAX,
                 "maxRevision 18446744073709551614 of /r/revision.json plus 50000"},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_free_ char *reason = NULL;
                uint64_t target = 1;
                assert_int_equal(bump_decide(rows[i].max_revision,
                                             rows[i].max_revision ? "/r/revision.json" : NULL, rows[i].from,
                                             50000, rows[i].max_writes, &target, &reason),
                                 rows[i].path);
                assert_true(target == rows[i].target);
                assert_string_equal(reason, rows[i].reason);
        }
        assert_string_equal(bump_path_to_string(BUMP_WRITES), "writes");
        assert_string_equal(bump_path_to_string(BUMP_NONE_NEEDED), "none-needed");
        assert_string_equal(bump_path_to_string(BUMP_UNAVAILABLE), "unavailable");
        assert_null(bump_path_to_string(_BUMP_PATH_MAX));
        assert_null(bump_path_to_string(_BUMP_PATH_INVALID));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find_and_check),          cmocka_unit_test(test_verify_snapshot),
                cmocka_unit_test(test_refusals_change_nothing), cmocka_unit_test(test_move_data_dir_aside),
                cmocka_unit_test(test_stop_etcd_pod),           cmocka_unit_test(test_bump_decide),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
