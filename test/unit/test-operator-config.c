/* The operator's --config file (operator/process/config-file.h): the payload's own
 * GenericOperatorConfig, every field the operator reads, and each mistake named by its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "process/config-file.h"

static char *write_tmp(const char *text)
{
        char *path = strdup("/tmp/test-operator-config.XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        return path;
}

/* Loads TEXT; returns the error message (or NULL) and the status in *r. */
static char *load(const char *text, OperatorFileConfig *c, int *r)
{
        char *path = write_tmp(text), *err = NULL;
        *r = operator_file_config_load(path, c, &err);
        unlink(path);
        free(path);
        return err;
}

static void test_payload_config(void **state)
{
        (void) state;
        /* The ConfigMap's config.yaml as the payload ships it: nothing set, nothing changed. */
        OperatorFileConfig c = {.bind_address = NULL};
        int r;
        char *err =
                load("apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n", &c, &r);
        assert_int_equal(r, 0);
        assert_null(err);
        assert_null(c.bind_address);
        assert_null(c.cert_file);
        assert_false(c.has_leader_elect);
        assert_int_equal(c.lease_duration, 0);
        operator_file_config_done(&c);
}

static void test_every_field(void **state)
{
        (void) state;
        OperatorFileConfig c = {};
        int r;
        char *err = load("apiVersion: operator.openshift.io/v1alpha1\n"
                         "kind: GenericOperatorConfig\n"
                         "servingInfo:\n"
                         "  bindAddress: 127.0.0.1:9443\n"
                         "  certFile: /c/tls.crt\n"
                         "  keyFile: /c/tls.key\n"
                         "  cipherSuites: [TLS_AES_128_GCM_SHA256]\n"
                         "leaderElection:\n"
                         "  disable: true\n"
                         "  leaseDuration: 60s\n"
                         "  renewDeadline: 40s\n"
                         "  retryPeriod: 2s\n"
                         "authentication: {}\n",
                         &c, &r);
        assert_int_equal(r, 0);
        assert_null(err);
        assert_string_equal(c.bind_address, "127.0.0.1:9443");
        assert_string_equal(c.cert_file, "/c/tls.crt");
        assert_string_equal(c.key_file, "/c/tls.key");
        assert_true(c.has_leader_elect);
        assert_false(c.leader_elect);
        assert_int_equal(c.lease_duration, 60 * USEC_PER_SEC);
        assert_int_equal(c.renew_deadline, 40 * USEC_PER_SEC);
        assert_int_equal(c.retry_period, 2 * USEC_PER_SEC);
        operator_file_config_done(&c);
        assert_null(c.bind_address);
}

static void test_errors_name_the_field(void **state)
{
        (void) state;
        static const struct {
                const char *text, *want;
        } cases[] = {
                {"apiVersion: v1\nkind: ConfigMap\n", "kind is \"ConfigMap\"; want GenericOperatorConfig"},
                {"kind: GenericOperatorConfig\n", "apiVersion is \"\"; want operator.openshift.io/v1alpha1"},
                {"- a\n", "not a mapping"},
                {"kind: [\n", ""},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\nservingInfo: 3\n",
                 "servingInfo must be a mapping"},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n"
                 "servingInfo: {bindAddress: 8443}\n",
                 "servingInfo.bindAddress must be a non-empty string"},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n"
                 "servingInfo: {certFile: /a}\n",
                 "servingInfo.certFile is set without servingInfo.keyFile"},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n"
                 "leaderElection: {disable: \"yes\"}\n",
                 "leaderElection.disable must be true or false"},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n"
                 "leaderElection: {leaseDuration: soon}\n",
                 "leaderElection.leaseDuration must be a duration"},
                {"apiVersion: operator.openshift.io/v1alpha1\nkind: GenericOperatorConfig\n"
                 "leaderElection: {retryPeriod: 0s}\n",
                 "leaderElection.retryPeriod must be a duration"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                OperatorFileConfig c = {};
                int r;
                char *err = load(cases[i].text, &c, &r);
                if (r >= 0 || !err || !strstr(err, cases[i].want))
                        fail_msg("case %zu: r=%d err=%s", i, r, err ? err : "(none)");
                assert_true(strncmp(err, "/tmp/test-operator-config.", 26) == 0);
                assert_null(c.bind_address);
                free(err);
        }
        /* A file that is not there. */
        OperatorFileConfig c = {};
        char *err = NULL;
        assert_true(operator_file_config_load("/nonexistent/config.yaml", &c, &err) < 0);
        assert_non_null(strstr(err, "/nonexistent/config.yaml"));
        free(err);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_payload_config),
                cmocka_unit_test(test_every_field),
                cmocka_unit_test(test_errors_name_the_field),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
