/* A backup's checksum file (operator/dr/backup-manifest.c, review M1): its
 * text read back, the HMAC that marks what this cluster wrote, the files
 * checked against it, and the texts a reader must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "dr/backup-manifest.h"

#define KEY   "0123456789abcdefghijklmnopqrstuvwxyz"
#define OTHER "another-cluster-another-key-0123456789"

static BackupManifest sample(void)
{
        BackupManifest m = {.revision = 1234, .cluster_id = 0xcdf818194e3a8c32ULL, .created = 1700000000};
        (void) snprintf(m.snapshot.name, sizeof m.snapshot.name, "snapshot_2023-11-14_221320.db");
        (void) snprintf(m.tarball.name, sizeof m.tarball.name,
                        "static_kuberesources_2023-11-14_221320.tar.gz");
        memset(m.snapshot.sha256, 'a', BACKUP_SHA256_HEX_LEN);
        memset(m.tarball.sha256, 'b', BACKUP_SHA256_HEX_LEN);
        m.snapshot.size = 20480;
        m.tarball.size = 18446744073709551615ULL;
        return m;
}

static void test_round_trip(void **state)
{
        BackupManifest m = sample(), back = {};
        _cleanup_free_ char *text = NULL;
        char why[256] = "";

        assert_int_equal(backup_manifest_sign(&m, KEY), 0);
        assert_int_equal(strlen(m.mac), 64);
        assert_int_equal(backup_manifest_format(&m, &text), 0);
        assert_non_null(strstr(text, "\"kind\":\t\"" BACKUP_MANIFEST_KIND "\""));
        assert_non_null(strstr(text, "\"size\":\t\"18446744073709551615\""));
        assert_non_null(strstr(text, "\"clusterID\":\t\"cdf818194e3a8c32\""));
        assert_int_equal(backup_manifest_parse(text, strlen(text), &back, why, sizeof why), 0);
        assert_memory_equal(&m, &back, sizeof m);
        assert_int_equal(backup_manifest_verify(&back, KEY), 0);
}

static void test_mac(void **state)
{
        BackupManifest m = sample();
        assert_int_equal(backup_manifest_verify(&m, KEY), -ENOKEY); /* unsigned */
        assert_int_equal(backup_manifest_sign(&m, "short"), -EINVAL);
        assert_int_equal(backup_manifest_sign(&m, KEY), 0);
        assert_int_equal(backup_manifest_verify(&m, OTHER), -EBADMSG);
        /* Every field is covered: another revision, time, cluster, digest, size or name. */
        BackupManifest c = m;
        c.revision++;
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.created++;
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.cluster_id ^= 1;
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.tarball.sha256[10] = 'c';
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.snapshot.size--;
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.tarball.name[0] = 'S';
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
        c = m;
        c.mac[0] = c.mac[0] == '0' ? '1' : '0';
        assert_int_equal(backup_manifest_verify(&c, KEY), -EBADMSG);
}

static void test_parse_refusals(void **state)
{
        BackupManifest m = sample();
        _cleanup_free_ char *good = NULL;
        assert_int_equal(backup_manifest_sign(&m, KEY), 0);
        assert_int_equal(backup_manifest_format(&m, &good), 0);
        static const struct {
                const char *from, *to, *needle;
        } cases[] = {
                {"\"" BACKUP_MANIFEST_KIND "\"", "\"other\"", "kind"},
                {"\"version\":\t1", "\"version\":\t2", "version"},
                {"\"size\":\t\"20480\"", "\"size\":\t20480", "snapshot.size"},
                {"\"size\":\t\"20480\"", "\"size\":\t\"-1\"", "snapshot.size"},
                {"\"size\":\t\"20480\"", "\"size\":\t\"99999999999999999999\"", "snapshot.size"},
                {"aaaa", "AAAA", "snapshot.sha256"},
                {"\"revision\":\t\"1234\"", "\"revision\":\t\"0x10\"", "revision"},
                {"\"created\":\t\"1700000000\"", "\"created\":\t\"\"", "created"},
                {"\"clusterID\":\t\"cdf818194e3a8c32\"", "\"clusterID\":\t\"cdf8\"", "clusterID"},
                {"\"hmacSHA256\":\t\"", "\"hmacSHA256\":\t\"zz", "hmacSHA256"},
                {"\"name\":\t\"snapshot_", "\"name\":\t\"../snapshot_", "snapshot.name"},
                {"{", "[", "JSON object"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *at = strstr(good, cases[i].from);
                assert_non_null(at);
                _cleanup_free_ char *bad = strdup_printf("%.*s%s%s", (int) (at - good), good, cases[i].to,
                                                         at + strlen(cases[i].from));
                BackupManifest out = {};
                char why[256] = "";
                assert_int_equal(backup_manifest_parse(bad, strlen(bad), &out, why, sizeof why), -EINVAL);
                if (!strstr(why, cases[i].needle))
                        fail_msg("case %zu: %s", i, why);
        }
        _cleanup_free_ char *big = calloc(1, BACKUP_MANIFEST_MAX + 2);
        memset(big, ' ', BACKUP_MANIFEST_MAX + 1);
        char why[64];
        assert_int_equal(backup_manifest_parse(big, BACKUP_MANIFEST_MAX + 1, &m, why, sizeof why), -E2BIG);
}

static void test_names(void **state)
{
        _cleanup_free_ char *a = backup_manifest_name_of("/b/snapshot_2026-11-25_101500.db"),
                            *b = backup_manifest_name_of("snapshot_2026-11-25_101500__POSSIBLY_DIRTY__.db"),
                            *c = backup_manifest_name_of("/b/other.db");
        assert_string_equal(a, "/b/checksums_2026-11-25_101500.json");
        assert_string_equal(b, "checksums_2026-11-25_101500__POSSIBLY_DIRTY__.json");
        assert_null(c);
}

static void test_check_files(void **state)
{
        char dir[] = "/tmp/test-backup-manifest-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *snap = strdup_printf("%s/snapshot_x.db", dir),
                            *tar = strdup_printf("%s/static_kuberesources_x.tar.gz", dir);
        assert_int_equal(write_file_atomic(snap, "database", 8, 0600), 0);
        assert_int_equal(write_file_atomic(tar, "tarball", 7, 0600), 0);
        BackupManifest m = {};
        char why[512] = "";
        assert_int_equal(backup_file_sum(snap, &m.snapshot), 0);
        assert_int_equal(backup_file_sum(tar, &m.tarball), 0);
        assert_string_equal(m.snapshot.name, "snapshot_x.db");
        /* sha256("database") */
        assert_string_equal(m.snapshot.sha256,
                            "3549b0028b75d981cdda2e573e9cb49dedc200185876df299f912b79f69dabd8");
        assert_int_equal(m.tarball.size, 7);
        assert_int_equal(backup_manifest_check_files(&m, snap, tar, why, sizeof why), 0);
        /* Same size, other bytes; then a shorter file. */
        assert_int_equal(write_file_atomic(tar, "tarbalL", 7, 0600), 0);
        assert_int_equal(backup_manifest_check_files(&m, snap, tar, why, sizeof why), -EBADMSG);
        assert_non_null(strstr(why, "the SHA-256 of"));
        assert_non_null(strstr(why, "static_kuberesources_x.tar.gz"));
        assert_int_equal(write_file_atomic(snap, "data", 4, 0600), 0);
        assert_int_equal(backup_manifest_check_files(&m, snap, NULL, why, sizeof why), -EBADMSG);
        assert_non_null(strstr(why, "has 4 bytes, the checksum file says 8"));
        assert_int_equal(unlink(snap), 0);
        assert_int_equal(backup_manifest_check_files(&m, snap, NULL, why, sizeof why), -ENOENT);
        _cleanup_free_ char *rm = strdup_printf("rm -rf '%s'", dir);
        assert_int_equal(system(rm), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_mac),
                cmocka_unit_test(test_parse_refusals), cmocka_unit_test(test_names),
                cmocka_unit_test(test_check_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
