/* The S3 client's pure parts: credentials and settings checks, URI
 * encoding, object URLs (path style and virtual host), the XML of listings
 * and errors. The requests themselves are proven against a signature-checking
 * S3 peer in test/integration/test_s3.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "base/fileio.h"
#include "s3/s3.h"
#include "s3/snapshots.h"

static S3Store store(const char *endpoint, bool path_style, const char *prefix)
{
        S3Store s = {.endpoint = strdup(endpoint),
                     .bucket = strdup("etcd-backups"),
                     .path_style = path_style,
                     .insecure_http = startswith(endpoint, "http://")};
        s.prefix = prefix ? strdup(prefix) : NULL;
        char *err = NULL;
        assert_int_equal(s3_store_check(&s, &err), 0);
        return s;
}

static void test_uri_encode(void **state)
{
        _cleanup_free_ char *a = s3_uri_encode("a b+c=d&é/x~_.-", true), *b = s3_uri_encode("a/b", false);
        assert_string_equal(a, "a%20b%2Bc%3Dd%26%C3%A9/x~_.-");
        assert_string_equal(b, "a%2Fb");
}

static void test_urls(void **state)
{
        _cleanup_(s3_store_done) S3Store p = store("http://127.0.0.1:9000/", true, "clusters/prod-1");
        _cleanup_(s3_store_done) S3Store v = store("https://s3.eu-west-1.amazonaws.com", false, NULL);
        _cleanup_free_ char *k = s3_key(&p, "v2/Full-00000000-00000042-1700000000"), *k2 = s3_key(&v, "a b");
        assert_string_equal(k, "clusters/prod-1/v2/Full-00000000-00000042-1700000000");
        assert_string_equal(k2, "a b");
        _cleanup_free_ char *u1 = s3_url(&p, k, NULL), *u2 = s3_url(&v, k2, "partNumber=1&uploadId=x"),
                            *u3 = s3_url(&p, NULL, "list-type=2&prefix=a%2F");
        assert_string_equal(
                u1,
                "http://127.0.0.1:9000/etcd-backups/clusters/prod-1/v2/Full-00000000-00000042-1700000000");
        assert_string_equal(u2,
                            "https://etcd-backups.s3.eu-west-1.amazonaws.com/a%20b?partNumber=1&uploadId=x");
        assert_string_equal(u3, "http://127.0.0.1:9000/etcd-backups/?list-type=2&prefix=a%2F");
        /* Defaults: us-east-1 and AWS's endpoint for it. */
        S3Store d = {.bucket = strdup("b-1.x")};
        char *err = NULL;
        assert_int_equal(s3_store_check(&d, &err), 0);
        assert_string_equal(d.region, "us-east-1");
        assert_string_equal(d.endpoint, "https://s3.us-east-1.amazonaws.com");
        assert_int_equal(d.part_size, S3_DEFAULT_PART_SIZE);
        s3_store_done(&d);
}

static void test_check_errors(void **state)
{
        static const struct {
                const char *bucket, *prefix, *endpoint;
                size_t part;
                const char *needle;
        } cases[] = {
                {"ab", NULL, NULL, 0, "bucket \"ab\""},
                {"Upper", NULL, NULL, 0, "bucket"},
                {"a..b", NULL, NULL, 0, "bucket"},
                {"bucket", "/lead", NULL, 0, "prefix"},
                {"bucket", "trail/", NULL, 0, "prefix"},
                {"bucket", "a//b", NULL, 0, "prefix"},
                {"bucket", "a/../b", NULL, 0, "prefix"},
                /* Outside AWS's safe characters (review H1: a prefix goes into Job arguments). */
                {"bucket", "a\"b", NULL, 0, "prefix"},
                {"bucket", "a b", NULL, 0, "prefix"},
                {"bucket", "a{b}", NULL, 0, "prefix"},
                {"bucket", "a[b],c", NULL, 0, "prefix"},
                {"bucket", "a:b", NULL, 0, "prefix"},
                {"bucket", "a\\b", NULL, 0, "prefix"},
                {"bucket", "caf\xc3\xa9", NULL, 0, "prefix"},
                {"bucket", NULL, "ftp://x", 0, "endpoint"},
                {"bucket", NULL, "https://x/path", 0, "endpoint"},
                {"bucket", NULL, "https://user@x", 0, "endpoint"},
                {"bucket", NULL, NULL, 1 << 20, "part size"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                S3Store s = {.bucket = strdup(cases[i].bucket), .part_size = cases[i].part};
                s.prefix = cases[i].prefix ? strdup(cases[i].prefix) : NULL;
                s.endpoint = cases[i].endpoint ? strdup(cases[i].endpoint) : NULL;
                char *err = NULL;
                assert_int_equal(s3_store_check(&s, &err), -EINVAL);
                if (!err || !strstr(err, cases[i].needle))
                        fail_msg("case %zu: %s", i, err ? err : "(no message)");
                free(err);
                s3_store_done(&s);
        }
}

/* Review M1: plain http only when the credentials say insecureHTTP, in so many words. */
static void test_check_http(void **state)
{
        S3Store s = {
                .bucket = strdup("bucket"), .endpoint = strdup("http://minio:9000"), .dir = strdup("/c")};
        char *err = NULL;
        assert_int_equal(s3_store_check(&s, &err), -EPERM);
        assert_non_null(strstr(err, "/c/endpoint \"http://minio:9000\" is plain http"));
        assert_non_null(strstr(err, "write true into /c/insecureHTTP"));
        free(err);
        err = NULL;
        s.insecure_http = true;
        assert_int_equal(s3_store_check(&s, &err), 0);
        assert_null(err);
        s3_store_done(&s);
}

/* Server-side encryption: AES256 or aws:kms, a KMS key only with aws:kms; and backupKey. */
static void test_check_sse_and_key(void **state)
{
        static const struct {
                const char *sse, *kms, *needle;
        } cases[] = {
                {"aes256", NULL, "serverSideEncryption \"aes256\" is not AES256 (SSE-S3) or aws:kms"},
                {"AES256", "k-1", "sseKMSKeyId is set but /c/serverSideEncryption is not aws:kms"},
                {"aws:kms", "key id", "sseKMSKeyId is not a KMS key ID"},
                {"aws:kms", "a\nb", "sseKMSKeyId is not a KMS key ID"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                S3Store s = {.bucket = strdup("bucket"), .dir = strdup("/c"), .sse = strdup(cases[i].sse)};
                s.sse_kms_key_id = cases[i].kms ? strdup(cases[i].kms) : NULL;
                char *err = NULL;
                assert_int_equal(s3_store_check(&s, &err), -EINVAL);
                if (!err || !strstr(err, cases[i].needle))
                        fail_msg("case %zu: %s", i, err ? err : "(no message)");
                free(err);
                s3_store_done(&s);
        }
        S3Store s = {.bucket = strdup("bucket"),
                     .dir = strdup("/c"),
                     .sse = strdup("aws:kms"),
                     .sse_kms_key_id = strdup("arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab")};
        char *err = NULL;
        /* A KMS key ID only where libcurl signs it right (8.10.0 on). */
        if (curl_version_info(CURLVERSION_NOW)->version_num < 0x080a00) {
                assert_int_equal(s3_store_check(&s, &err), -EOPNOTSUPP);
                assert_non_null(strstr(err, "/c/sseKMSKeyId needs libcurl 8.10.0 or newer"));
                free(err);
                err = NULL;
                s.sse_kms_key_id = mfree(s.sse_kms_key_id);
        }
        assert_int_equal(s3_store_check(&s, &err), 0);
        assert_int_equal(s3_store_check_backup_key(&s, &err), -ENOKEY);
        assert_non_null(strstr(err, "/c/backupKey is missing"));
        assert_non_null(strstr(err, "openssl rand -base64 32"));
        free(err);
        err = NULL;
        s.backup_key = strdup("too-short");
        assert_int_equal(s3_store_check_backup_key(&s, &err), -ENOKEY);
        assert_non_null(strstr(err, "/c/backupKey is too short"));
        free(err);
        err = NULL;
        free(s.backup_key);
        s.backup_key = strdup("0123456789012345678901234567890123456789");
        assert_int_equal(s3_store_check_backup_key(&s, &err), 0);
        s3_store_done(&s);
}

static void write_setting(const char *dir, const char *name, const char *v)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, v, strlen(v), 0600), 0);
}

/* Loading dir fails with `code`, in an error that names `text`. */
static void expect_load_error(const char *dir, int code, const char *text)
{
        S3Store s = {};
        char *err = NULL;

        assert_int_equal(s3_store_load_dir(dir, &s, &err), code);
        assert_non_null(err);
        assert_non_null(strstr(err, text));
        free(err);
        s3_store_done(&s);
}

static void test_load_dir(void **state)
{
        char dir[] = "/tmp/test-s3-XXXXXX";
        assert_non_null(mkdtemp(dir));
        S3Store s = {};
        char *err = NULL;
        expect_load_error(dir, -ENOENT, "accessKeyID");

        write_setting(dir, "accessKeyID", "  AKIA\n");
        write_setting(dir, "secretAccessKey", "\n");
        expect_load_error(dir, -EINVAL, "secretAccessKey is empty");

        write_setting(dir, "secretAccessKey", "s3cr3t\n");
        write_setting(dir, "s3ForcePathStyle", "yes");
        expect_load_error(dir, -EINVAL, "s3ForcePathStyle");

        write_setting(dir, "s3ForcePathStyle", "true\n");
        write_setting(dir, "insecureHTTP", "yes");
        expect_load_error(dir, -EINVAL, "insecureHTTP is \"yes\"; write true or false");

        write_setting(dir, "insecureHTTP", "false");
        write_setting(dir, "region", "eu-west-1");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), 0);
        assert_false(s.insecure_http);
        assert_null(s.backup_key);
        assert_null(s.sse);
        s3_store_done(&s);

        write_setting(dir, "insecureHTTP", "true");
        write_setting(dir, "backupKey", "  k3y-of-this-cluster-0123456789abcdef\n");
        write_setting(dir, "serverSideEncryption", "aws:kms\n");
        write_setting(dir, "sseKMSKeyId", "alias/etcd-backups\n");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), 0);
        assert_true(s.insecure_http);
        assert_string_equal(s.backup_key, "k3y-of-this-cluster-0123456789abcdef");
        assert_string_equal(s.sse, "aws:kms");
        assert_string_equal(s.sse_kms_key_id, "alias/etcd-backups");
        s3_store_done(&s);
        _cleanup_free_ char *rm_extra =
                strdup_printf("cd '%s' && rm backupKey serverSideEncryption sseKMSKeyId", dir);
        assert_int_equal(system(rm_extra), 0);
        assert_int_equal(s3_store_load_dir(dir, &s, &err), 0);
        assert_string_equal(s.access_key, "AKIA");
        assert_string_equal(s.secret_key, "s3cr3t");
        assert_string_equal(s.region, "eu-west-1");
        assert_null(s.endpoint);
        assert_true(s.path_style);
        assert_null(s.ca_file);
        s3_store_done(&s);

        /* A private CA: caBundle, used as a file. */
        write_setting(dir, "caBundle", "-----BEGIN CERTIFICATE-----\n...\n");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), 0);
        _cleanup_free_ char *ca = strdup_printf("%s/caBundle", dir);
        assert_string_equal(s.ca_file, ca);
        s3_store_done(&s);
        _cleanup_free_ char *rm = strdup_printf("rm -rf '%s'", dir);
        assert_int_equal(system(rm), 0);
}

static void test_xml(void **state)
{
        size_t pos = 0;
        const char *xml = "<a><Key>x &amp; y &lt;z&gt; &#x41;&#66; &bogus;</Key><Key>2</Key></a>";
        _cleanup_free_ char *k1 = s3_xml_next(xml, "Key", &pos), *k2 = s3_xml_next(xml, "Key", &pos),
                            *k3 = s3_xml_next(xml, "Key", &pos);
        assert_string_equal(k1, "x & y <z> AB &bogus;");
        assert_string_equal(k2, "2");
        assert_null(k3);
}

static void test_list_page(void **state)
{
        _cleanup_(s3_object_list_done) S3ObjectList l = {};
        _cleanup_free_ char *next = NULL;
        const char *page1 =
                "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
                "<Contents><Key>p/a&amp;b</Key><LastModified>2026-11-26T19:50:37.269Z</LastModified>"
                "<ETag>&quot;0123&quot;</ETag><Size>42</Size></Contents>"
                "<Contents><Key>p/c</Key><LastModified>2026-11-26T19:50:38Z</LastModified><ETag>\"9-2\"</"
                "ETag>"
                "<Size>18446744073709551615</Size></Contents>"
                "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>";
        assert_int_equal(s3_parse_list_page(page1, &l, &next), 0);
        assert_int_equal(l.n, 2);
        assert_string_equal(l.v[0].key, "p/a&b");
        assert_string_equal(l.v[0].etag, "0123");
        assert_int_equal(l.v[0].size, 42);
        assert_int_equal(l.v[0].last_modified, 1795722637);
        assert_string_equal(l.v[1].etag, "9-2");
        assert_true(l.v[1].size == UINT64_MAX);
        assert_string_equal(next, "tok+/=");
        next = mfree(next);
        /* The last page. */
        assert_int_equal(
                s3_parse_list_page("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>",
                                   &l, &next),
                0);
        assert_null(next);
        assert_int_equal(l.n, 2);
        /* Truncated with no token, or an entry without a size: a partial listing is an error. */
        assert_int_equal(s3_parse_list_page("<IsTruncated>true</IsTruncated>", &l, &next), -EBADMSG);
        assert_int_equal(s3_parse_list_page("<Contents><Key>k</Key></Contents>", &l, &next), -EBADMSG);
        assert_int_equal(s3_parse_list_page("<Contents><Key>k</Key><Size>1x</Size></Contents>", &l, &next),
                         -EBADMSG);
}

static void test_snapshot_names(void **state)
{
        char buf[64];
        S3Snapshot s;
        assert_string_equal(s3_snapshot_name(1234, 1700000000, buf, sizeof buf),
                            "Full-00000000-00001234-1700000000");
        assert_int_equal(s3_snapshot_parse("clusters/a/v2/Full-00000000-00001234-1700000000", &s), 0);
        assert_int_equal(s.kind, S3_SNAPSHOT_FULL);
        assert_int_equal(s.last, 1234);
        assert_int_equal(s.created, 1700000000);
        assert_false(s.gz || s.final);
        assert_int_equal(s3_snapshot_parse("Incr-00001235-00001300-1700000020.gz", &s), 0);
        assert_int_equal(s.kind, S3_SNAPSHOT_INCR);
        assert_int_equal(s.start, 1235);
        assert_true(s.gz);
        assert_int_equal(s3_snapshot_parse("Full-00000000-123456789012-1700000000.gz.final", &s), 0);
        assert_true(s.gz && s.final);
        assert_int_equal(s.last, UINT64_C(123456789012));
        const char *bad[] = {"Full-0-1",       "Full-0-1-", "Full-a-1-2",  "Delta-0-1-2",
                             "Full-0-1-2.zip", "Full--1-2", "snapshot.db", "Full-0-1-2.final.gz"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (s3_snapshot_parse(bad[i], &s) != -EINVAL)
                        fail_msg("%s parsed", bad[i]);
}

/* The exponential policy on an injected clock: now = 2026-11-26 14:30 UTC. */
static void test_gc_exponential(void **state)
{
        const time_t base = 1795651200; /* 2026-11-26T00:00:00Z */
        const time_t H = 3600, D = 86400;
        static const char *names[] = {"K", "J", "I", "H", "F", "G", "E", "C", "D", "A", "B"};
        const time_t at[] = {
                base - 40 * D,           /* K: past 5 weeks: goes */
                base - 11 * D,           /* J: same week window as I: goes */
                base - 10 * D + 12 * H,  /* I: newest of its week: stays */
                base - 3 * D + 12 * H,   /* H: newest of its day: stays */
                base - D + 20 * H,       /* F: yesterday, not the newest of the day: goes */
                base - D + 22 * H,       /* G: yesterday's newest: stays */
                base + 10 * H,           /* E: newest of hour 10: stays */
                base + 13 * H + 5 * 60,  /* C: hour 13, D is newer: goes */
                base + 13 * H + 50 * 60, /* D: newest of hour 13: stays */
                base + 14 * H + 10 * 60, /* A: the current hour: stays */
                base + 14 * H + 20 * 60, /* B: the newest: stays */
        };
        const bool want[] = {true, true, false, false, true, false, false, true, false, false, false};
        S3Snapshot v[ELEMENTSOF(at)];
        bool del[ELEMENTSOF(at)];
        for (size_t i = 0; i < ELEMENTSOF(at); i++)
                v[i] = (S3Snapshot){.last = 100 + i, .created = at[i]};
        s3_gc_plan(v, ELEMENTSOF(v), S3_GC_EXPONENTIAL, 0, base + 14 * H + 30 * 60, del);
        for (size_t i = 0; i < ELEMENTSOF(at); i++)
                if (del[i] != want[i])
                        fail_msg("%s: %s, want %s", names[i], del[i] ? "deleted" : "kept",
                                 want[i] ? "deleted" : "kept");

        /* An hour later, A and B are no longer of the current hour: only the newest of hour 14 stays. */
        s3_gc_plan(v, ELEMENTSOF(v), S3_GC_EXPONENTIAL, 0, base + 15 * H + 1, del);
        assert_true(del[9]);
        assert_false(del[10]);
        /* Everything 6 weeks later: only the newest stays. */
        s3_gc_plan(v, ELEMENTSOF(v), S3_GC_EXPONENTIAL, 0, base + 42 * D, del);
        for (size_t i = 0; i + 1 < ELEMENTSOF(at); i++)
                assert_true(del[i]);
        assert_false(del[ELEMENTSOF(at) - 1]);
}

static void test_gc_limit(void **state)
{
        S3Snapshot v[5];
        bool del[5];
        for (size_t i = 0; i < 5; i++)
                v[i] = (S3Snapshot){.last = i, .created = 1700000000 + (time_t) i};
        s3_gc_plan(v, 5, S3_GC_LIMIT_BASED, 3, 0, del);
        assert_true(del[0] && del[1]);
        assert_false(del[2] || del[3] || del[4]);
        s3_gc_plan(v, 5, S3_GC_LIMIT_BASED, 0, 0, del); /* the newest always stays */
        assert_false(del[4]);
        assert_true(del[3]);
        s3_gc_plan(v, 5, S3_GC_LIMIT_BASED, 9, 0, del);
        for (size_t i = 0; i < 5; i++)
                assert_false(del[i]);
        s3_gc_plan(v, 1, S3_GC_EXPONENTIAL, 0, 1900000000, del);
        assert_false(del[0]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_uri_encode),
                cmocka_unit_test(test_urls),
                cmocka_unit_test(test_check_errors),
                cmocka_unit_test(test_check_http),
                cmocka_unit_test(test_check_sse_and_key),
                cmocka_unit_test(test_load_dir),
                cmocka_unit_test(test_xml),
                cmocka_unit_test(test_list_page),
                cmocka_unit_test(test_snapshot_names),
                cmocka_unit_test(test_gc_exponential),
                cmocka_unit_test(test_gc_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
