/* The pure parts of the node commands (operator/node/node-*.c): names that
 * become paths, the installer's substitutions, discover's initial-cluster
 * string and decision table, revision.json, the ensure-env checks, and the
 * data-dir archive on a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/json.h"
#include "base/strlist.h"
#include "dr/bump.h"
#include "dr/restore-tar.h"
#include "dr/restore.h"
#include "etcd/client.h"
#include "host/fs.h"
#include "host/process.h"
#include "node/backup.h"
#include "node/node-etcd.h"
#include "node/node-util.h"
#include "node/node.h"

static void test_names(void **state)
{
        char long_name[300];

        /* Object, node and namespace names: base/names.h, tested in test-base.c. */
        assert_true(nodecmd_key_is_valid("pod.yaml"));
        assert_true(nodecmd_key_is_valid("etcd-peer-master-0.crt"));
        assert_true(nodecmd_key_is_valid("_x"));
        assert_true(nodecmd_key_is_valid("a..b")); /* one path component: allowed by the API */
        assert_true(nodecmd_key_is_valid(".hidden"));
        assert_false(nodecmd_key_is_valid("."));
        assert_false(nodecmd_key_is_valid(".."));
        assert_false(nodecmd_key_is_valid("..data"));
        assert_false(nodecmd_key_is_valid("a/b"));
        assert_false(nodecmd_key_is_valid("/etc/passwd"));
        assert_false(nodecmd_key_is_valid(""));
        assert_false(nodecmd_key_is_valid(NULL));
        assert_false(nodecmd_key_is_valid("a b"));
        assert_false(nodecmd_key_is_valid("caf\xc3\xa9"));
        memset(long_name, 'k', sizeof long_name);
        long_name[254] = 0;
        assert_false(nodecmd_key_is_valid(long_name));
}

static void test_revision(void **state)
{
        unsigned v = 0;

        assert_int_equal(nodecmd_parse_revision("3", &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(nodecmd_parse_revision("2147483647", &v), 0);
        assert_int_equal(v, 2147483647u);
        assert_int_equal(nodecmd_parse_revision("2147483648", &v), -ERANGE);
        assert_int_equal(nodecmd_parse_revision("0", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("03", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("-1", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("+1", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("1a", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("", &v), -EINVAL);
        assert_int_equal(nodecmd_parse_revision("99999999999", &v), -EINVAL);
}

static void test_envvar_name(void **state)
{
        _cleanup_free_ char *a = nodecmd_envvar_name("master-0.example.com");
        _cleanup_free_ char *b = nodecmd_envvar_name("node");
        assert_string_equal(a, "master_0_example_com");
        assert_string_equal(b, "node");
        assert_null(nodecmd_envvar_name(NULL));
}

static void subst(const char *in, const char *want)
{
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        assert_int_equal(nodecmd_substitute(in, strlen(in), "3", "master-0.a", &out, &len), 0);
        assert_string_equal(out, want);
        assert_int_equal(len, strlen(want));
}

static void test_substitute(void **state)
{
        subst("", "");
        subst("nothing to do", "nothing to do");
        subst("revision: \"REVISION\"", "revision: \"3\"");
        subst("etcd-pod-REVISION/NODE_NAME", "etcd-pod-3/master-0.a");
        subst("${NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST}", "${NODE_master_0_a_ETCD_URL_HOST}");
        subst("--target-name=NODE_NAME --cert=etcd-peer-NODE_NAME.crt",
              "--target-name=master-0.a --cert=etcd-peer-master-0.a.crt");
        subst("REVISIONREVISION NODE_NAMENODE_NAME", "33 master-0.amaster-0.a");
        /* Near misses stay. */
        subst("NODE_NAM REVISIO NODE_ENVVAR", "NODE_NAM REVISIO NODE_ENVVAR");

        /* Binary-safe: bytes after a NUL are kept, and the length is exact. */
        const char bin[] = "a\0REVISION";
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        assert_int_equal(nodecmd_substitute(bin, sizeof bin - 1, "12", "n", &out, &len), 0);
        assert_int_equal(len, 4);
        assert_memory_equal(out,
                            "a\0"
                            "12",
                            4);
}

static void test_strv(void **state)
{
        StrList l = {};
        assert_int_equal(strlist_add_csv(&l, "a, b,,c "), 0);
        assert_int_equal(strlist_add_csv(&l, "d"), 0);
        assert_int_equal(strlist_add_csv(&l, ""), 0);
        assert_int_equal(l.n, 4);
        assert_string_equal(l.v[0], "a");
        assert_string_equal(l.v[1], "b");
        assert_string_equal(l.v[2], "c");
        assert_string_equal(l.v[3], "d");
        assert_null(l.v[4]);
        assert_true(strlist_contains(&l, "c"));
        assert_false(strlist_contains(&l, "e"));
        strlist_done(&l);
        assert_int_equal(l.n, 0);
}

static void test_peer_url(void **state)
{
        _cleanup_free_ char *a = etcd_peer_url("10.0.0.1", 2380);
        _cleanup_free_ char *b = etcd_peer_url("fd00::1", 2380);
        _cleanup_free_ char *c = etcd_peer_url("[fd00::1]", 2380);
        _cleanup_free_ char *d = etcd_peer_url("etcd-0.example.com", 12380);
        assert_string_equal(a, "https://10.0.0.1:2380");
        assert_string_equal(b, "https://[fd00::1]:2380");
        assert_string_equal(c, "https://[fd00::1]:2380");
        assert_string_equal(d, "https://etcd-0.example.com:12380");
}

/* ---- member lists as the gateway returns them ---- */

#define CID      "2443363948774318917"
#define CID_NUM  2443363948774318917ULL
#define SELF_URL "https://10.0.0.3:2380"

static EtcdMemberList *members(const char *json_members)
{
        _cleanup_free_ char *s =
                strdup_printf("{\"header\":{\"cluster_id\":\"" CID "\",\"member_id\":\"1\"},"
                              "\"members\":[%s]}",
                              json_members);
        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
        EtcdMemberList *l = NULL;
        assert_int_equal(json_parse(s, strlen(s), &j), 0);
        assert_int_equal(etcd_parse_member_list(j, &l), 0);
        return l;
}

#define M1                                                                                                  \
        "{\"ID\":\"1\",\"name\":\"m1\",\"peerURLs\":[\"https://10.0.0.1:2380\"],\"clientURLs\":[\"https://" \
        "10.0.0.1:2379\"]}"
#define M2_LEARNER                                                                         \
        "{\"ID\":\"2\",\"name\":\"m2\",\"peerURLs\":[\"https://10.0.0.2:2380\",\"https://" \
        "10.1.0.2:2380\"],\"clientURLs\":[\"https://10.0.0.2:2379\"],\"isLearner\":true}"
#define SELF_UNSTARTED "{\"ID\":\"3\",\"peerURLs\":[\"" SELF_URL "\"],\"isLearner\":true}"
#define SELF_STARTED                                              \
        "{\"ID\":\"3\",\"name\":\"m3\",\"peerURLs\":[\"" SELF_URL \
        "\"],\"clientURLs\":[\"https://10.0.0.3:2379\"]}"
#define OTHER_UNSTARTED "{\"ID\":\"4\",\"peerURLs\":[\"https://10.0.0.4:2380\"]}"

static void test_initial_cluster(void **state)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l =
                members(M1 "," M2_LEARNER "," SELF_UNSTARTED "," OTHER_UNSTARTED);
        _cleanup_free_ char *ic = NULL, *started = NULL, *none = NULL;

        const EtcdMember *self = etcd_member_list_find_by_peer_url(l, SELF_URL);
        assert_non_null(self);
        assert_int_equal(nodecmd_initial_cluster(l, self, "m3", &ic), 0);
        /* Started members (learners too, every peer URL), then itself; never another unstarted one. */
        assert_string_equal(ic, "m1=https://10.0.0.1:2380,m2=https://10.0.0.2:2380,m2=https://10.1.0.2:2380,"
                                "m3=" SELF_URL);

        /* A started self is listed under its own name, once. */
        _cleanup_(etcd_member_list_freep) EtcdMemberList *s = members(M1 "," SELF_STARTED);
        assert_int_equal(nodecmd_initial_cluster(s, etcd_member_list_find(s, 3), "m3", &started), 0);
        assert_string_equal(started, "m1=https://10.0.0.1:2380,m3=" SELF_URL);

        _cleanup_(etcd_member_list_freep) EtcdMemberList *e = members("");
        assert_int_equal(nodecmd_initial_cluster(e, NULL, "m3", &none), 0);
        assert_string_equal(none, "");
}

static NodeCmdDiscoverAction decide(const EtcdMemberList *l, bool data, uint64_t local, const char *want_ic)
{
        NodeCmdDiscoverInput in = {.members = l,
                                   .target_peer_url = SELF_URL,
                                   .target_name = "m3",
                                   .data_present = data,
                                   .local_cluster_id = local};
        NodeCmdDiscoverResult r = {};
        assert_int_equal(nodecmd_discover_decide(&in, &r), 0);
        assert_non_null(r.reason);
        assert_true(*r.reason);
        if (r.action == NODECMD_DISCOVER_PRINT) {
                assert_non_null(r.initial_cluster);
                if (want_ic)
                        assert_string_equal(r.initial_cluster, want_ic);
        } else
                assert_null(r.initial_cluster);
        NodeCmdDiscoverAction a = r.action;
        nodecmd_discover_result_done(&r);
        return a;
}

static void test_decide(void **state)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *absent = members(M1 "," M2_LEARNER);
        _cleanup_(etcd_member_list_freep) EtcdMemberList *unstarted = members(M1 "," SELF_UNSTARTED);
        _cleanup_(etcd_member_list_freep) EtcdMemberList *started = members(M1 "," SELF_STARTED);
        const uint64_t other = 42;

        /* No endpoint answered. */
        assert_int_equal(decide(NULL, true, 0, ""), NODECMD_DISCOVER_PRINT);
        assert_int_equal(decide(NULL, false, 0, NULL), NODECMD_DISCOVER_WAIT);
        /* Not in the list. */
        assert_int_equal(decide(absent, false, 0, NULL), NODECMD_DISCOVER_WAIT);
        assert_int_equal(decide(absent, false, other, NULL), NODECMD_DISCOVER_WAIT);
        assert_int_equal(decide(absent, true, 0, NULL), NODECMD_DISCOVER_ARCHIVE);
        assert_int_equal(decide(absent, true, CID_NUM, NULL), NODECMD_DISCOVER_ARCHIVE);
        assert_int_equal(decide(absent, true, other, NULL), NODECMD_DISCOVER_ARCHIVE);
        /* Added, not started. */
        assert_int_equal(decide(unstarted, false, 0, "m1=https://10.0.0.1:2380,m3=" SELF_URL),
                         NODECMD_DISCOVER_PRINT);
        assert_int_equal(decide(unstarted, false, other, "m1=https://10.0.0.1:2380,m3=" SELF_URL),
                         NODECMD_DISCOVER_PRINT);
        assert_int_equal(decide(unstarted, true, 0, NULL), NODECMD_DISCOVER_ARCHIVE);
        /* Started. */
        assert_int_equal(decide(started, true, 0, ""), NODECMD_DISCOVER_PRINT);
        assert_int_equal(decide(started, true, CID_NUM, ""), NODECMD_DISCOVER_PRINT);
        assert_int_equal(decide(started, true, other, NULL),
                         NODECMD_DISCOVER_WAIT); /* foreign data: never start */
        assert_int_equal(decide(started, false, 0, NULL), NODECMD_DISCOVER_FAIL);
        assert_int_equal(decide(started, false, other, NULL), NODECMD_DISCOVER_FAIL);

        /* A peer URL that only shares a prefix does not match. */
        NodeCmdDiscoverInput in = {.members = started,
                                   .target_peer_url = "https://10.0.0.3:23800",
                                   .target_name = "m3",
                                   .data_present = false};
        NodeCmdDiscoverResult r = {};
        assert_int_equal(nodecmd_discover_decide(&in, &r), 0);
        assert_int_equal(r.action, NODECMD_DISCOVER_WAIT);
        nodecmd_discover_result_done(&r);

        assert_string_equal(nodecmd_discover_action_to_string(NODECMD_DISCOVER_ARCHIVE), "archive");
        assert_null(nodecmd_discover_action_to_string(_NODECMD_DISCOVER_ACTION_MAX));
}

/* cluster-restore's tarball check, on member lists as tar prints them (review H2). */
static void test_restore_tar_listing(void **state)
{
#define D(name)       "drwxr-xr-x 0/0               0 2026-11-25 10:15:00 \"" name "\"\n"
#define F(mode, name) mode " 0/0              17 2026-11-25 10:15:00 \"" name "\"\n"
        static const char good[] = D("static-pod-resources/") D("static-pod-resources/etcd-pod-3/") F(
                "-rw-r--r--", "static-pod-resources/etcd-pod-3/etcd-pod.yaml")
                D("static-pod-resources/etcd-pod-3/secrets/etcd-all-certs/") F(
                        "-rw-------",
                        "static-pod-resources/etcd-pod-3/secrets/etcd-all-certs/etcd-peer-m0.key")
                        F("-rw-r--r--",
                          "static-pod-resources/kube-apiserver-pod-12/configmaps/config/config.yaml")
                                F("-rw-r--r--", "static-pod-resources/kube-controller-manager-pod-4/x")
                                        F("-rwxr-xr-x", "static-pod-resources/kube-scheduler-pod-7/run.sh");
        char why[512];
        assert_int_equal(restore_tar_listing_check(good, why, sizeof why), 0);
        static const struct {
                const char *listing, *why;
        } bad[] = {
                {"", "no members"},
                {"lrwxrwxrwx 0/0 0 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/x\" -> "
                 "\"/etc/shadow\"\n",
                 "\"static-pod-resources/etcd-pod-3/x\" is a symbolic link"},
                {"hrw-r--r-- 0/0 0 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/x\" link to "
                 "\"static-pod-resources/etcd-pod-3/y\"\n",
                 "is a hard link"},
                {"crw-r--r-- 0/0 1,3 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/null\"\n",
                 "is a device node"},
                {"brw-r--r-- 0/0 8,0 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/sda\"\n",
                 "is a device node"},
                {"prw-r--r-- 0/0 0 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/fifo\"\n",
                 "a FIFO"},
                {F("-rwsr-xr-x", "static-pod-resources/etcd-pod-3/sh"), "setuid bit"},
                {F("-rwxr-Sr-x", "static-pod-resources/etcd-pod-3/sh"), "setgid bit"},
                {F("-rw-r--r--", "static-pod-resources/../etc/passwd"),
                 "is not under static-pod-resources/"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3/../../x"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3/./x"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3//x"), "is not under"},
                {F("-rw-r--r--", "/etc/kubernetes/manifests/evil.yaml"), "has an absolute name"},
                {F("-rw-r--r--", "manifests/evil.yaml"), "\"manifests/evil.yaml\" is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml"),
                 "\"static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml\" is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-/x"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3x/x"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/other-pod-3/x"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources-x/etcd-pod-3/a"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3/a b"), "is not under"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3/a\\\"b"), "characters outside"},
                {F("-rw-r--r--", "static-pod-resources/etcd-pod-3/a\\nb"), "characters outside"},
                {"-rw-r--r-- 0/0 17 2026-11-25 10:15:00 static-pod-resources/etcd-pod-3/a\n", "cannot read"},
                {"-rw-r--r-- 0/0 17 2026-11-25 10:15:00 \"static-pod-resources/etcd-pod-3/a\" x\n",
                 "more than its name"},
                {D("static-pod-resources/") "Vrw-r--r-- 0/0 0 2026-11-25 10:15:00 "
                                            "\"static-pod-resources/\"\n",
                 "neither a regular file nor a directory"},
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                why[0] = 0;
                if (restore_tar_listing_check(bad[i].listing, why, sizeof why) != -EINVAL ||
                    !strstr(why, bad[i].why))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, bad[i].why);
        }
#undef D
#undef F
}

/* ---- revision.json ---- */

/* cluster-restore picks the newest snapshot and the tarball of the same backup. */
static void test_restore_pick_backup(void **state)
{
        const char *names[] = {".",
                               "..",
                               "snapshot_2026-11-25_101500.db",
                               "static_kuberesources_2026-11-25_101500.tar.gz",
                               "snapshot_2026-11-25_121500__POSSIBLY_DIRTY__.db",
                               "static_kuberesources_2026-11-25_121500__POSSIBLY_DIRTY__.tar.gz",
                               "static_kuberesources_2026-11-26_000000.tar.gz",
                               ".snapshot_2026-11-27_000000.db.partial",
                               "notes.txt"};
        _cleanup_free_ char *snap = NULL, *tar = NULL;
        assert_int_equal(restore_pick_backup(names, ELEMENTSOF(names), &snap, &tar), 0);
        assert_string_equal(snap, "snapshot_2026-11-25_121500__POSSIBLY_DIRTY__.db");
        assert_string_equal(tar, "static_kuberesources_2026-11-25_121500__POSSIBLY_DIRTY__.tar.gz");
        snap = mfree(snap);
        tar = mfree(tar);
        /* A snapshot without its tarball: the tarball of another backup is never taken. */
        const char *alone[] = {"snapshot_2026-11-25_101500.db",
                               "static_kuberesources_2026-11-24_101500.tar.gz"};
        assert_int_equal(restore_pick_backup(alone, ELEMENTSOF(alone), &snap, &tar), 0);
        assert_string_equal(snap, "snapshot_2026-11-25_101500.db");
        assert_null(tar);
        snap = mfree(snap);
        const char *none[] = {"static_kuberesources_2026-11-25_101500.tar.gz", "snapshot.db.partial"};
        assert_int_equal(restore_pick_backup(none, ELEMENTSOF(none), &snap, &tar), -ENOENT);
        assert_int_equal(restore_pick_backup(NULL, 0, &snap, &tar), -ENOENT);
}

static void test_bump_target(void **state)
{
        assert_true(bump_target(0, 50000) == 0); /* unknown stays unknown */
        assert_true(bump_target(1000, 50000) == 51000);
        assert_true(bump_target(UINT64_MAX - 1, 50000) == UINT64_MAX);
}

static void test_revision_json(void **state)
{
        NodeCmdRevision r = {.cluster_id = 17076828041006572404ULL, .created = 1735689600ULL * USEC_PER_SEC};
        NodeCmdRevision back = {};
        _cleanup_free_ char *s = NULL;

        assert_int_equal(nodecmd_revision_add(&r, "https://10.0.0.1:2379", 1234), 0);
        assert_int_equal(nodecmd_revision_add(&r, "https://10.0.0.2:2379", 99999999999999999ULL), 0);
        assert_int_equal(nodecmd_revision_add(&r, "https://10.0.0.3:2379", 1200), 0);
        assert_true(r.max_raft_index == 99999999999999999ULL);
        assert_int_equal(nodecmd_revision_encode(&r, &s), 0);
        assert_string_equal(s,
                            "{\"clusterId\":\"17076828041006572404\",\"raftIndex\":{"
                            "\"https://10.0.0.1:2379\":1234,\"https://10.0.0.2:2379\":\"99999999999999999\","
                            "\"https://10.0.0.3:2379\":1200},\"maxRaftIndex\":\"99999999999999999\","
                            "\"created\":\"2025-01-01T00:00:00Z\"}");
        assert_int_equal(nodecmd_revision_decode(s, strlen(s), &back), 0);
        assert_true(back.cluster_id == r.cluster_id);
        assert_int_equal(back.n_endpoints, 3);
        assert_string_equal(back.endpoints[1].endpoint, "https://10.0.0.2:2379");
        assert_true(back.endpoints[1].raft_index == 99999999999999999ULL);
        assert_true(back.max_raft_index == 99999999999999999ULL);
        assert_true(back.created == r.created);
        nodecmd_revision_done(&back);
        nodecmd_revision_done(&r);

        /* What upstream's Go writer produces: bare numbers, Go's time format. */
        const char *go = "{\"clusterId\":17076828041006572404,\"raftIndex\":{\"https://10.0.0.1:2379\":77},"
                         "\"maxRaftIndex\":77,\"created\":\"2024-05-01 10:00:00.1 +0000 UTC\"}";
        assert_int_equal(nodecmd_revision_decode(go, strlen(go), &back), 0);
        assert_true(back.cluster_id == 17076828041006572404ULL);
        assert_true(back.max_raft_index == 77);
        assert_int_equal(back.n_endpoints, 1);
        assert_true(back.created == 0);
        nodecmd_revision_done(&back);

        /* Ours beside upstream's: maxRevision, the MVCC revision a restore bumps past. */
        NodeCmdRevision mr = {
                .cluster_id = 5, .created = 1735689600ULL * USEC_PER_SEC, .max_revision = 4242};
        assert_int_equal(nodecmd_revision_add(&mr, "https://10.0.0.1:2379", 9), 0);
        s = mfree(s);
        assert_int_equal(nodecmd_revision_encode(&mr, &s), 0);
        assert_non_null(strstr(s, "\"created\":\"2025-01-01T00:00:00Z\",\"maxRevision\":4242}"));
        assert_int_equal(nodecmd_revision_decode(s, strlen(s), &back), 0);
        assert_true(back.max_revision == 4242);
        nodecmd_revision_done(&back);
        nodecmd_revision_done(&mr);

        const char *small = "{\"clusterId\":12345,\"raftIndex\":{}}";
        assert_int_equal(nodecmd_revision_decode(small, strlen(small), &back), 0);
        assert_true(back.cluster_id == 12345);
        nodecmd_revision_done(&back);

        const char *none = "{\"raftIndex\":{}}";
        assert_int_equal(nodecmd_revision_decode(none, strlen(none), &back), -ENOENT);
        const char *bad = "{\"clusterId\":";
        assert_int_equal(nodecmd_revision_decode(bad, strlen(bad), &back), -EBADMSG);
        const char *neg = "{\"clusterId\":-1}";
        assert_int_equal(nodecmd_revision_decode(neg, strlen(neg), &back), -EBADMSG);
        const char *arr = "[1]";
        assert_int_equal(nodecmd_revision_decode(arr, strlen(arr), &back), -EBADMSG);
}

/* ---- ensure-env ---- */

typedef struct Env {
        const char *pairs[8][2];
} Env;

static const char *env_lookup(const char *name, void *userdata)
{
        Env *e = userdata;
        for (size_t i = 0; i < ELEMENTSOF(e->pairs) && e->pairs[i][0]; i++)
                if (streq(e->pairs[i][0], name))
                        return e->pairs[i][1];
        return NULL;
}

static int ensure(Env *e, const char *node, const char *ip, const char *want_in_error)
{
        _cleanup_free_ char *err = NULL;
        int r = nodecmd_ensure_env_check(node, ip, env_lookup, e, &err);
        if (want_in_error) {
                assert_non_null(err);
                if (!strstr(err, want_in_error))
                        fail_msg("\"%s\" does not mention \"%s\"", err, want_in_error);
        } else
                assert_null(err);
        return r;
}

static void test_ensure_env(void **state)
{
        Env v4 = {{{"NODE_master_0_IP", "10.0.0.1"},
                   {"NODE_master_0_ETCD_URL_HOST", "10.0.0.1"},
                   {"NODE_master_0_ETCD_NAME", "master-0"}}};
        assert_int_equal(ensure(&v4, "master-0", "10.0.0.1", NULL), 0);
        assert_int_equal(ensure(&v4, "master-0", "10.0.0.2", "NODE_master_0_IP=10.0.0.1"), -EINVAL);
        /* Where every master moved, no operator can roll out anything: the runbook is named. */
        assert_int_equal(ensure(&v4, "master-0", "10.0.0.2", "cluster-moved runbook"), -EINVAL);
        assert_int_equal(ensure(&v4, "master-1", "10.0.0.1", "NODE_master_1_IP is not set"), -EINVAL);
        assert_int_equal(ensure(&v4, "Master-0", "10.0.0.1", "--node-name"), -EINVAL);
        assert_int_equal(ensure(&v4, "master-0", "10.0.0.300", "--pod-ip"), -EINVAL);
        assert_int_equal(ensure(&v4, "master-0", NULL, "--pod-ip"), -EINVAL);

        Env empty = v4;
        empty.pairs[2][1] = "";
        assert_int_equal(ensure(&empty, "master-0", "10.0.0.1", "NODE_master_0_ETCD_NAME is empty"),
                         -EINVAL);
        Env url = v4;
        url.pairs[1][1] = "10.0.0.9";
        assert_int_equal(ensure(&url, "master-0", "10.0.0.1", "NODE_master_0_ETCD_URL_HOST=10.0.0.9"),
                         -EINVAL);

        Env v6 = {{{"NODE_m_0_example_IP", "fd00::1"},
                   {"NODE_m_0_example_ETCD_URL_HOST", "[fd00::1]"},
                   {"NODE_m_0_example_ETCD_NAME", "m-0.example"}}};
        assert_int_equal(ensure(&v6, "m-0.example", "fd00::1", NULL), 0);
        /* The same address written differently is the same address. */
        assert_int_equal(ensure(&v6, "m-0.example", "fd00:0::1", NULL), 0);
        Env v6bare = v6;
        v6bare.pairs[1][1] = "fd00::1";
        assert_int_equal(ensure(&v6bare, "m-0.example", "fd00::1", "IPv6 in brackets"), -EINVAL);
        /* NODE_<n>_IP in brackets, as the operator (and upstream) writes it for IPv6. */
        Env v6brackets = v6;
        v6brackets.pairs[0][1] = "[fd00::1]";
        assert_int_equal(ensure(&v6brackets, "m-0.example", "fd00::1", NULL), 0);
        assert_int_equal(ensure(&v6brackets, "m-0.example", "fd00::2", "NODE_m_0_example_IP=[fd00::1]"),
                         -EINVAL);
        v6brackets.pairs[0][1] = "[fd00::1";
        assert_int_equal(ensure(&v6brackets, "m-0.example", "fd00::1", "does not match"), -EINVAL);
}

/* ---- the data dir on disk ---- */

static void test_data_dir(void **state)
{
        char dir[] = "/tmp/test-nodecmds-XXXXXX";
        _cleanup_free_ char *member = NULL, *wal = NULL, *a1 = NULL, *a2 = NULL, *p = NULL, *sub = NULL;
        bool present = true;
        struct stat st;

        assert_non_null(mkdtemp(dir));
        member = strdup_printf("%s/member", dir);
        wal = strdup_printf("%s/member/wal", dir);
        assert_int_equal(nodecmd_data_dir_present(dir, &present), 0);
        assert_false(present);
        /* A data dir that does not exist at all is simply not present. */
        _cleanup_free_ char *missing = strdup_printf("%s/nope", dir);
        assert_int_equal(nodecmd_data_dir_present(missing, &present), 0);
        assert_false(present);
        /* revision.json alone does not make a data dir. */
        _cleanup_free_ char *rev = nodecmd_revision_path(dir);
        assert_int_equal(write_file_atomic(rev, "{\"clusterId\":\"7\"}", 17, 0644), 0);
        uint64_t id = 0;
        assert_int_equal(nodecmd_revision_read_cluster_id(dir, &id), 0);
        assert_true(id == 7);
        assert_int_equal(nodecmd_revision_read_cluster_id(missing, &id), -ENOENT);
        assert_int_equal(nodecmd_data_dir_present(dir, &present), 0);
        assert_false(present);

        assert_int_equal(host_mkdir_p(wal, 0755), 0);
        assert_int_equal(stat(wal, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        p = strdup_printf("%s/0.wal", wal);
        assert_int_equal(write_file_atomic(p, "x", 1, 0600), 0);
        assert_int_equal(nodecmd_data_dir_present(dir, &present), 0);
        assert_true(present);

        _cleanup_free_ char *name =
                nodecmd_archive_path(dir, 1735689600ULL * USEC_PER_SEC + 5 * USEC_PER_SEC);
        _cleanup_free_ char *want = strdup_printf("%s/member-removed-archive-2025-01-01-000005", dir);
        assert_string_equal(name, want);

        usec_t t = 1735689600ULL * USEC_PER_SEC;
        assert_int_equal(nodecmd_data_dir_archive(dir, t, &a1), 0);
        assert_string_equal(a1 + strlen(dir), "/member-removed-archive-2025-01-01-000000");
        assert_int_equal(nodecmd_data_dir_present(dir, &present), 0);
        assert_false(present);
        sub = strdup_printf("%s/wal/0.wal", a1);
        assert_int_equal(stat(sub, &st), 0); /* moved, not lost */

        /* A second archive in the same second never replaces the first. */
        assert_int_equal(host_mkdir_p(member, 0755), 0);
        assert_int_equal(nodecmd_data_dir_archive(dir, t, &a2), 0);
        assert_string_equal(a2 + strlen(dir), "/member-removed-archive-2025-01-01-000000-1");
        assert_int_equal(stat(sub, &st), 0);

        /* Nothing to archive. */
        _cleanup_free_ char *a3 = NULL;
        assert_int_equal(nodecmd_data_dir_archive(dir, t, &a3), -ENOENT);

        /* mkdir -p through a file fails cleanly. */
        _cleanup_free_ char *through = strdup_printf("%s/x", rev);
        assert_int_equal(host_mkdir_p(through, 0755), -ENOTDIR);

        _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* cluster-backup's names: the revision a manifest names, and upstream's file names. */
static void test_backup_names(void **state)
{
        static const char manifest[] =
                "volumes:\n- hostPath:\n    path: /etc/kubernetes/static-pod-resources/etcd-pod-\n"
                "- hostPath:\n    path: /etc/kubernetes/static-pod-resources/etcd-pod-7x\n"
                "- hostPath:\n    path: /etc/kubernetes/static-pod-resources/etcd-pod-12\n"
                "- hostPath:\n    path: /etc/kubernetes/static-pod-resources/etcd-pod-13/secrets\n";
        _cleanup_free_ char *dir = NULL, *tar = NULL, *snap = NULL;
        assert_int_equal(backup_revision_dir(manifest, "etcd", &dir), 0);
        assert_string_equal(dir, "static-pod-resources/etcd-pod-12");
        assert_int_equal(backup_revision_dir(manifest, "kube-apiserver", &dir), -ENOENT);
        assert_int_equal(backup_revision_dir("\"/etc/kubernetes/static-pod-resources/kube-apiserver-pod-3\"",
                                             "kube-apiserver", &tar),
                         0);
        assert_string_equal(tar, "static-pod-resources/kube-apiserver-pod-3");
        tar = mfree(tar);
        (void) setenv("TZ", "UTC", 1);
        tzset();
        usec_t t = (usec_t) 1764076711 * USEC_PER_SEC; /* 2025-11-25 13:18:31 UTC */
        assert_int_equal(backup_names(t, false, &tar, &snap), 0);
        assert_string_equal(tar, "static_kuberesources_2025-11-25_131831.tar.gz");
        assert_string_equal(snap, "snapshot_2025-11-25_131831.db");
        tar = mfree(tar);
        snap = mfree(snap);
        assert_int_equal(backup_names(t, true, &tar, &snap), 0);
        assert_string_equal(snap, "snapshot_2025-11-25_131831__POSSIBLY_DIRTY__.db");
}

/* The installer's quorum guard: what restarting one member costs. */
static void test_restart_keeps_quorum(void **state)
{
        EtcdMember m[5] = {
                {.id = 1, .name = (char *) "a"},
                {.id = 2, .name = (char *) "b"},
                {.id = 3, .name = (char *) "c"},
                {.id = 4, .name = (char *) "d", .is_learner = true},
                {.id = 5}, /* an unstarted learner */
        };
        m[4].is_learner = true;
        EtcdMemberList l = {.members = m, .n_members = 3};
        const EtcdMember *self = NULL;
        size_t up = 0, voters = 0, q = 0;

        /* Three healthy voters: one may go. */
        int h[5] = {0, 0, 0, 0, -EINPROGRESS};
        assert_true(nodecmd_restart_keeps_quorum(&l, h, "a", &up, &voters, &q, &self));
        assert_ptr_equal(self, &m[0]);
        assert_int_equal(up, 2);
        assert_int_equal(voters, 3);
        assert_int_equal(q, 2);
        /* One other voter down: restarting a healthy one leaves one of three. */
        h[1] = -ETIMEDOUT;
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", &up, &voters, &q, &self));
        assert_int_equal(up, 1);
        /* ... but the voter that is down itself costs nothing. */
        assert_true(nodecmd_restart_keeps_quorum(&l, h, "b", NULL, NULL, NULL, &self));
        assert_null(self);
        /* One that answers "unhealthy" is running (an election: every member says so while
         * the leader it had is gone): restarting it is what would cost quorum. */
        h[0] = ETCD_ERR_UNHEALTHY;
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", &up, NULL, NULL, &self));
        assert_ptr_equal(self, &m[0]);
        assert_int_equal(up, 1);
        h[2] = ETCD_ERR_UNHEALTHY;
        h[1] = 0;
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", &up, NULL, NULL, NULL));
        h[2] = 0;
        assert_true(nodecmd_restart_keeps_quorum(&l, h, "a", &up, NULL, NULL, NULL));
        h[0] = 0;
        h[1] = -ETIMEDOUT;
        /* No member of that name, or a learner: nothing to lose. */
        assert_true(nodecmd_restart_keeps_quorum(&l, h, "zz", NULL, NULL, NULL, NULL));
        l.n_members = 5;
        assert_true(nodecmd_restart_keeps_quorum(&l, h, "d", NULL, NULL, NULL, NULL));
        /* Learners are no voters: still 1 of 3 up without a. */
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", &up, &voters, &q, NULL));
        assert_int_equal(voters, 3);
        /* Two voters: neither may restart while the other is needed (one of two voters). */
        h[1] = 0;
        l.n_members = 2;
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", &up, &voters, &q, NULL));
        assert_int_equal(up, 1);
        assert_int_equal(q, 2);
        /* One voter: its restart always costs quorum (for a moment). */
        l.n_members = 1;
        assert_false(nodecmd_restart_keeps_quorum(&l, h, "a", NULL, NULL, NULL, NULL));
}

/* `prune` on a temporary resource dir: only <name>-N directories at or below the eligible
 * revision go; the protected ones, the running manifest's, the cert dir, other names and
 * symlinks stay; bad flags and an unreadable manifest remove nothing. */
static int run_prune(const char *a1, const char *a2, const char *a3, const char *a4)
{
        char *argv[] = {(char *) "prune", (char *) a1, (char *) a2, (char *) a3, (char *) a4, NULL};
        int argc = 1;
        while (argv[argc])
                argc++;
        return cmd_prune.run(argc, argv);
}

static bool exists(const char *dir, const char *name)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", dir, name);
        struct stat st;
        return lstat(p, &st) == 0;
}

static void test_prune_revisions(void **state)
{
        char dir[] = "/tmp/test-prune-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *res = strdup_printf("%s/res", dir), *man = strdup_printf("%s/man", dir),
                            *pod = strdup_printf("%s/man/etcd-pod.yaml", dir),
                            *f_res = strdup_printf("--resource-dir=%s", res),
                            *f_man = strdup_printf("--pod-manifest-dir=%s", man),
                            *link = strdup_printf("%s/etcd-pod-6", res);
        static const char *const names[] = {"etcd-pod-1", "etcd-pod-2", "etcd-pod-3", "etcd-pod-4",
                                            "etcd-pod-5", "etcd-certs", "etcd-pod-x", "kube-pod-1"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *d = strdup_printf("%s/%s/configmaps", res, names[i]);
                assert_int_equal(host_mkdir_p(d, 0755), 0);
        }
        assert_int_equal(symlink(res, link), 0);
        assert_int_equal(host_mkdir_p(man, 0755), 0);
        static const char manifest[] =
                "apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    revision: \"2\"\n";
        assert_int_equal(write_file_atomic(pod, manifest, sizeof manifest - 1, 0644), 0);

        /* Refused before anything happens. */
        assert_int_equal(run_prune("--protected-revisions=3", f_res, f_man, NULL), EXIT_USAGE);
        assert_int_equal(run_prune("--max-eligible-revision=6", "--protected-revisions=3,x", f_res, f_man),
                         EXIT_USAGE);
        assert_int_equal(run_prune("--max-eligible-revision=6", "--static-pod-name=../x", f_res, f_man),
                         EXIT_USAGE);
        assert_true(exists(res, "etcd-pod-1"));

        /* A dry run removes nothing. */
        assert_int_equal(run_prune("--max-eligible-revision=6", "--dry-run", f_res, f_man), EXIT_OK);
        assert_true(exists(res, "etcd-pod-1"));

        /* A manifest whose revision is unknown: nothing goes. */
        assert_int_equal(write_file_atomic(pod, "metadata: {}\n", 13, 0644), 0);
        assert_int_equal(run_prune("--max-eligible-revision=6", f_res, f_man, NULL), EXIT_RUNTIME);
        assert_true(exists(res, "etcd-pod-1"));
        assert_int_equal(write_file_atomic(pod, manifest, sizeof manifest - 1, 0644), 0);

        /* 1 and 3 go; 2 runs, 4 is protected, 5 is above the eligible revision. */
        assert_int_equal(run_prune("--max-eligible-revision=4", "--protected-revisions=4", f_res, f_man),
                         EXIT_OK);
        assert_false(exists(res, "etcd-pod-1"));
        assert_false(exists(res, "etcd-pod-3"));
        assert_true(exists(res, "etcd-pod-5"));
        /* Now 5 too; 6 is a symlink (what it points to is never followed). */
        assert_int_equal(run_prune("--max-eligible-revision=6", "--protected-revisions=4", f_res, f_man),
                         EXIT_OK);
        assert_false(exists(res, "etcd-pod-5"));
        static const char *const kept[] = {"etcd-pod-2", "etcd-pod-4", "etcd-pod-6",
                                           "etcd-certs", "etcd-pod-x", "kube-pod-1"};
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                assert_true(exists(res, kept[i]));

        _cleanup_free_ char *rm = strdup_printf("rm -rf %s", dir);
        assert_int_equal(system(rm), 0);
}

/* Review L8: stdout over the cap is -E2BIG, not the first MiB taken for all of it. */
static void test_run_output(void **state)
{
        _cleanup_free_ char *out = NULL, *big = NULL;
        const char *const echo[] = {"echo", "hello", NULL};
        const char *const flood[] = {"head", "-c", "2000000", "/dev/zero", NULL};
        const char *const fail[] = {"false", NULL};

        assert_int_equal(host_command_run(echo, &out), 0);
        assert_string_equal(out, "hello\n");
        assert_int_equal(host_command_run(flood, &big), -E2BIG);
        assert_null(big);
        assert_int_equal(host_command_run(fail, NULL), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_backup_names),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_restore_pick_backup),
                cmocka_unit_test(test_restore_tar_listing),
                cmocka_unit_test(test_bump_target),
                cmocka_unit_test(test_revision),
                cmocka_unit_test(test_envvar_name),
                cmocka_unit_test(test_substitute),
                cmocka_unit_test(test_strv),
                cmocka_unit_test(test_peer_url),
                cmocka_unit_test(test_initial_cluster),
                cmocka_unit_test(test_decide),
                cmocka_unit_test(test_revision_json),
                cmocka_unit_test(test_ensure_env),
                cmocka_unit_test(test_data_dir),
                cmocka_unit_test(test_restart_keeps_quorum),
                cmocka_unit_test(test_prune_revisions),
                cmocka_unit_test(test_run_output),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
