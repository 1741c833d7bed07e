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

#include "base/fileio.h"
#include "s3/s3.h"

static S3Store store(const char *endpoint, bool path_style, const char *prefix)
{
        S3Store s = {
                .endpoint = strdup(endpoint), .bucket = strdup("etcd-backups"), .path_style = path_style};
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

static void write_setting(const char *dir, const char *name, const char *v)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, v, strlen(v), 0600), 0);
}

static void test_load_dir(void **state)
{
        char dir[] = "/tmp/test-s3-XXXXXX";
        assert_non_null(mkdtemp(dir));
        S3Store s = {};
        char *err = NULL;
        assert_int_equal(s3_store_load_dir(dir, &s, &err), -ENOENT);
        assert_non_null(strstr(err, "accessKeyID"));
        free(err);
        err = NULL;
        s3_store_done(&s);

        write_setting(dir, "accessKeyID", "  AKIA\n");
        write_setting(dir, "secretAccessKey", "\n");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), -EINVAL);
        assert_non_null(strstr(err, "secretAccessKey is empty"));
        free(err);
        err = NULL;
        s3_store_done(&s);

        write_setting(dir, "secretAccessKey", "s3cr3t\n");
        write_setting(dir, "s3ForcePathStyle", "yes");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), -EINVAL);
        assert_non_null(strstr(err, "s3ForcePathStyle"));
        free(err);
        err = NULL;
        s3_store_done(&s);

        write_setting(dir, "s3ForcePathStyle", "true\n");
        write_setting(dir, "region", "eu-west-1");
        assert_int_equal(s3_store_load_dir(dir, &s, &err), 0);
        assert_string_equal(s.access_key, "AKIA");
        assert_string_equal(s.secret_key, "s3cr3t");
        assert_string_equal(s.region, "eu-west-1");
        assert_null(s.endpoint);
        assert_true(s.path_style);
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_uri_encode),   cmocka_unit_test(test_urls),
                cmocka_unit_test(test_check_errors), cmocka_unit_test(test_load_dir),
                cmocka_unit_test(test_xml),          cmocka_unit_test(test_list_page),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
