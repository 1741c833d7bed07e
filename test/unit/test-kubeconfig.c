/* kubeconfig parsing: the good shapes, and one clear message per bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "kube/config.h"

static char dir[] = "/tmp/test-kubeconfig-XXXXXX";

#define CA   "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define KEY  "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
#define HEAD "apiVersion: v1\nkind: Config\n"

static char *write_cfg(const char *name, const char *text)
{
        char *p = strdup_printf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0600), 0);
        return p;
}

static void expect_error(const char *text, const char *needle)
{
        _cleanup_free_ char *p = write_cfg("bad", text), *err = NULL;
        KubeConfig *c = NULL;
        int r = kube_config_from_files(p, NULL, &c, &err);
        if (r >= 0 || !err || !strstr(err, needle) || !strstr(err, p)) {
                fprintf(stderr, "input:\n%s\ngot r=%d err=%s\nwanted: %s\n", text, r, err ? err : "(null)",
                        needle);
                fail();
        }
        assert_null(c);
}

static int setup(void **state)
{
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
        _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void test_good(void **state)
{
        _cleanup_free_ char *ca64 = base64_encode(CA, strlen(CA)), *key_path = write_cfg("k.pem", KEY);
        _cleanup_free_ char *crt_path = write_cfg("c.pem", CA), *tok = write_cfg("tok", "secret-token\n");
        _cleanup_free_ char *text =
                strdup_printf(HEAD "current-context: sim\nclusters:\n- name: sim\n  cluster:\n    server: "
                                   "https://127.0.0.1:6443/\n"
                                   "    certificate-authority-data: %s\nusers:\n- name: op\n  user:\n    "
                                   "client-certificate: c.pem\n"
                                   "    client-key: %s\n    tokenFile: tok\ncontexts:\n- name: sim\n  "
                                   "context: {cluster: sim, user: op, namespace: ns1}\n",
                              ca64, key_path);
        _cleanup_free_ char *p = write_cfg("good", text), *err = NULL;
        _cleanup_(kube_config_freep) KubeConfig *c = NULL;

        assert_int_equal(kube_config_from_files(p, NULL, &c, &err), 0);
        assert_string_equal(c->server, "https://127.0.0.1:6443");
        assert_string_equal(c->tls.ca_pem, CA);
        assert_string_equal(c->tls.cert_pem, CA);
        assert_string_equal(c->tls.key_pem, KEY);
        assert_string_equal(c->token, "secret-token");
        assert_string_equal(c->namespace, "ns1");
        /* Token files are re-read after a minute (rotation). */
        _cleanup_free_ char *tok2 = write_cfg("tok", "rotated\n");
        assert_string_equal(kube_config_get_token(c, c->token_read_at + 61 * USEC_PER_SEC), "rotated");
}

static void test_merge_files(void **state)
{
        _cleanup_free_ char *a =
                write_cfg("a", HEAD "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n");
        _cleanup_free_ char *b =
                write_cfg("b", HEAD "current-context: ignored\nclusters:\n- name: c\n  cluster: {server: "
                                    "'http://127.0.0.1:1'}\n");
        _cleanup_free_ char *both = strdup_printf("%s:%s", a, b), *err = NULL;
        _cleanup_(kube_config_freep) KubeConfig *c = NULL;

        assert_int_equal(kube_config_from_files(both, NULL, &c, &err), 0);
        assert_string_equal(c->server, "http://127.0.0.1:1");
        assert_null(c->token);
        assert_string_equal(c->namespace, "default");
}

static void test_errors(void **state)
{
        expect_error("a: [", "not valid YAML");
        expect_error("- 1\n", "top level must be a mapping");
        expect_error(HEAD "clusters: []\n", "current-context: not set");
        expect_error(HEAD "current-context: x\n", "no context named \"x\"");
        expect_error(HEAD "current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n",
                     "contexts[0].context.cluster: missing");
        expect_error(HEAD "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                     "no cluster named \"c\"");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {}\n",
                "clusters[0].cluster.server: missing");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {server: 'ftp://x'}\n",
                "is not an http(s) URL");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {server: 'https://x', certificate-authority-data: '!!notbase64'}\n",
                "clusters[0].cluster.certificate-authority-data: not valid base64");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {server: 'https://x', certificate-authority: /nonexistent/ca.crt}\n",
                "clusters[0].cluster.certificate-authority: cannot read /nonexistent/ca.crt");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {server: 'https://x', certificate-authority-data: aGVsbG8=}\n",
                "does not contain a PEM CERTIFICATE block");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c}\nclusters:\n- name: c\n"
                "  cluster: {server: 'https://x', insecure-skip-tls-verify: 'yes'}\n",
                "insecure-skip-tls-verify: must be true or false");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n"
                "- name: c\n  cluster: {server: 'https://x'}\n",
                "no user named \"u\"");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n"
                "- name: c\n  cluster: {server: 'https://x'}\nusers:\n- name: u\n  user:\n"
                "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n",
                "client-certificate and client-key must be given together");
        expect_error(
                HEAD
                "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n"
                "- name: c\n  cluster: {server: 'https://x'}\nusers:\n- name: u\n  user: {tokenFile: "
                "nope}\n",
                "users[0].user.tokenFile: cannot read");
}

static void test_in_cluster(void **state)
{
        _cleanup_free_ char *sa = strdup_printf("%s/var/run/secrets/kubernetes.io/serviceaccount", dir);
        _cleanup_free_ char *mk = strdup_printf("mkdir -p '%s'", sa), *err = NULL;
        _cleanup_(kube_config_freep) KubeConfig *c = NULL;

        assert_int_equal(system(mk), 0);
        (void) unsetenv("KUBERNETES_SERVICE_HOST");
        assert_int_equal(kube_config_in_cluster(dir, &c, &err), -ENOENT);
        assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
        err = mfree(err);
        setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
        setenv("KUBERNETES_SERVICE_PORT", "443", 1);
        assert_true(kube_config_in_cluster(dir, &c, &err) < 0);
        assert_non_null(strstr(err, "service account token"));
        err = mfree(err);
        _cleanup_free_ char *t = strdup_printf("%s/token", sa), *ca = strdup_printf("%s/ca.crt", sa);
        _cleanup_free_ char *ns = strdup_printf("%s/namespace", sa);
        assert_int_equal(write_file_atomic(t, "tok", 3, 0600), 0);
        assert_int_equal(write_file_atomic(ca, CA, strlen(CA), 0644), 0);
        assert_int_equal(write_file_atomic(ns, "openshift-etcd-operator\n", 24, 0644), 0);
        assert_int_equal(kube_config_in_cluster(dir, &c, &err), 0);
        assert_string_equal(c->server, "https://[fd00::1]:443");
        assert_string_equal(c->token, "tok");
        assert_string_equal(c->namespace, "openshift-etcd-operator");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),
                cmocka_unit_test(test_merge_files),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_in_cluster),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
