/* The etcd client flags of the node tools (--endpoints, --cacert, --cert,
 * --key, their aliases and $ETCDCTL_* defaults) as a user meets them: each
 * of the six commands that takes them is run in-process on arguments that
 * stop it before it reaches the network (a flag missing, a file that is
 * not there), and its exit code, its error line and its --help are checked.
 * The exit codes are the contract (0 ok, 1 runtime, 2 usage); the text is
 * checked only for what it must name (the flag, the file, the variable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/log.h"
#include "node/node.h"

static const char *const our_env[] = {"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY",
                                      "ALL_ETCD_ENDPOINTS"};

typedef struct Run {
        int exit;
        char *out, *err;
} Run;

static void run_done(Run *r)
{
        free(r->out);
        free(r->err);
        *r = (Run){};
}

/* Runs `cmd` with `args` (NULL-terminated) and only the variables of `env`
 * ("NAME=value") of ours set; its stdout and stderr are captured. */
static Run run(const Command *cmd, const char *const *args, const char *const *env)
{
        char out_path[] = "/tmp/test-etcd-flags-out-XXXXXX", err_path[] = "/tmp/test-etcd-flags-err-XXXXXX";
        char *argv[32] = {(char *) cmd->name}, *copies[32] = {};
        int argc = 1;
        Run r = {};

        for (size_t i = 0; i < ELEMENTSOF(our_env); i++)
                assert_int_equal(unsetenv(our_env[i]), 0);
        for (size_t i = 0; env && env[i]; i++) {
                const char *eq = strchr(env[i], '=');
                _cleanup_free_ char *name = strndup(env[i], (size_t) (eq - env[i]));
                assert_int_equal(setenv(name, eq + 1, 1), 0);
        }
        for (size_t i = 0; args && args[i]; i++) {
                assert_true(argc + 1 < (int) ELEMENTSOF(argv));
                argv[argc] = copies[argc] = strdup(args[i]);
                argc++;
        }
        _cleanup_(closep) int out = mkstemp(out_path), err = mkstemp(err_path);
        _cleanup_(closep) int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
        assert_true(out >= 0 && err >= 0 && saved_out >= 0 && saved_err >= 0);
        (void) fflush(stdout);
        (void) fflush(stderr);
        assert_int_equal(dup2(out, STDOUT_FILENO), STDOUT_FILENO);
        assert_int_equal(dup2(err, STDERR_FILENO), STDERR_FILENO);
        r.exit = cmd->run(argc, argv);
        (void) fflush(stdout);
        (void) fflush(stderr);
        assert_int_equal(dup2(saved_out, STDOUT_FILENO), STDOUT_FILENO);
        assert_int_equal(dup2(saved_err, STDERR_FILENO), STDERR_FILENO);
        assert_int_equal(read_full_file(out_path, 1 << 20, &r.out, NULL), 0);
        assert_int_equal(read_full_file(err_path, 1 << 20, &r.err, NULL), 0);
        (void) unlink(out_path);
        (void) unlink(err_path);
        for (size_t i = 0; i < ELEMENTSOF(copies); i++)
                free(copies[i]); /* cmd_take_verbosity() took -v out of argv */
        for (size_t i = 0; i < ELEMENTSOF(our_env); i++)
                assert_int_equal(unsetenv(our_env[i]), 0);
        log_set_verbosity(0);
        return r;
}

#define MAX_TEXTS 5

typedef struct Case {
        const Command *cmd;
        const char *args[16];
        const char *env[6];
        int exit;
        const char *err[MAX_TEXTS];     /* each must be in stderr */
        const char *not_err[MAX_TEXTS]; /* none may be */
        const char *out[MAX_TEXTS];     /* each must be in stdout (--help) */
        const char *not_out[MAX_TEXTS];
} Case;

static void check_case(size_t i, const Case *c)
{
        _cleanup_(run_done) Run r = run(c->cmd, c->args, c->env);
        bool ok = r.exit == c->exit;

        for (size_t j = 0; j < MAX_TEXTS; j++) {
                ok = ok && (!c->err[j] || strstr(r.err, c->err[j]));
                ok = ok && (!c->not_err[j] || !strstr(r.err, c->not_err[j]));
                ok = ok && (!c->out[j] || strstr(r.out, c->out[j]));
                ok = ok && (!c->not_out[j] || !strstr(r.out, c->not_out[j]));
        }
        if (!ok)
                fail_msg("case %zu (%s %s %s): exit %d (want %d)\nstderr:\n%s\nstdout:\n%s", i, c->cmd->name,
                         strempty(c->args[0]), strempty(c->args[1]), r.exit, c->exit, r.err, r.out);
}

#define MISSING       "/nonexistent/etcd-flags"
#define ENDPOINT      "--endpoints=https://127.0.0.1:1"
#define ENV_ENDPOINTS "ETCDCTL_ENDPOINTS=https://127.0.0.1:1"
#define ENV_TLS(ca)   "ETCDCTL_CACERT=" MISSING ca, "ETCDCTL_CERT=" MISSING "/c", "ETCDCTL_KEY=" MISSING "/k"
#define DISCOVER_OWN  "--data-dir=" MISSING "/data", "--target-peer-url-host=127.0.0.1", "--target-name=m1"

static const Case cases[] = {
        /* discover-etcd-initial-cluster: flags only, no aliases, no environment. */
        {.cmd = &cmd_discover_etcd_initial_cluster, .exit = 2, .err = {"--cacert"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {ENDPOINT, "--cacert=" MISSING "/ca", "--cert=" MISSING "/c", DISCOVER_OWN},
         .exit = 2,
         .err = {"--key"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {"--cacert=" MISSING "/ca", "--cert=" MISSING "/c", "--key=" MISSING "/k", DISCOVER_OWN},
         .exit = 2,
         .err = {"--endpoints"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {ENDPOINT, "--cacert=" MISSING "/ca", "--cert=" MISSING "/c", "--key=" MISSING "/k",
                  DISCOVER_OWN},
         .exit = 2,
         .err = {MISSING "/ca"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {ENDPOINT, DISCOVER_OWN},
         .env = {ENV_TLS("/ca")},
         .exit = 2,
         .err = {"--cacert"},
         .not_err = {MISSING "/ca"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {"--client-cacert-file=" MISSING "/ca"},
         .exit = 2,
         .err = {"unknown flag --client-cacert-file"}},
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {"--help"},
         .out = {"--endpoints URL,URL", "--cacert FILE", "--cert FILE", "--key FILE", "-v=N"},
         .not_out = {"ETCDCTL", "--client-"}},

        /* rev: flags only, with upstream's --client-*-file aliases. */
        {.cmd = &cmd_rev, .exit = 2, .err = {"--endpoints"}},
        {.cmd = &cmd_rev, .args = {"-v=4"}, .exit = 2, .err = {"--endpoints"}, .not_err = {"unknown flag"}},
        {.cmd = &cmd_rev,
         .args = {ENDPOINT, "--cacert=" MISSING "/ca", "--cert=" MISSING "/c"},
         .exit = 2,
         .err = {"--key"}},
        {.cmd = &cmd_rev,
         .args = {ENDPOINT, "--client-cacert-file=" MISSING "/alias-ca", "--client-cert-file=" MISSING "/c",
                  "--client-key-file=" MISSING "/k"},
         .exit = 2,
         .err = {MISSING "/alias-ca"}},
        {.cmd = &cmd_rev,
         .args = {ENDPOINT},
         .env = {ENV_TLS("/ca")},
         .exit = 2,
         .err = {"--cacert"},
         .not_err = {MISSING "/ca"}},
        {.cmd = &cmd_rev,
         .args = {"--help"},
         .out = {"--endpoints URL,URL", "--client-cacert-file", "--client-cert-file", "--client-key-file",
                 "-v=N"},
         .not_out = {"ETCDCTL"}},

        /* readyz: the TLS flags and their aliases; no --endpoints (it has --target). */
        {.cmd = &cmd_readyz, .exit = 2, .err = {"--cacert"}},
        {.cmd = &cmd_readyz,
         .args = {"--client-cacert-file=" MISSING "/alias-ca", "--client-cert-file=" MISSING "/c",
                  "--client-key-file=" MISSING "/k"},
         .exit = 2,
         .err = {MISSING "/alias-ca"}},
        {.cmd = &cmd_readyz, .args = {ENDPOINT}, .exit = 2, .err = {"unknown flag --endpoints"}},
        {.cmd = &cmd_readyz,
         .args = {"--help"},
         .out = {"--cacert FILE", "--client-cacert-file", "--client-cert-file", "--client-key-file", "-v=N"},
         .not_out = {"--endpoints", "ETCDCTL"}},

        /* verify backup-storage: flags, else $ETCDCTL_*. */
        {.cmd = &cmd_verify,
         .args = {"backup-storage"},
         .exit = 2,
         .err = {"--endpoints", "ETCDCTL_ENDPOINTS"}},
        {.cmd = &cmd_verify,
         .args = {"backup-storage"},
         .env = {ENV_ENDPOINTS},
         .exit = 2,
         .err = {"--cacert", "ETCDCTL_CACERT"}},
        {.cmd = &cmd_verify,
         .args = {"backup-storage"},
         .env = {ENV_ENDPOINTS, ENV_TLS("/env-ca")},
         .exit = 2,
         .err = {MISSING "/env-ca"}},
        {.cmd = &cmd_verify,
         .args = {"backup-storage", "--cacert=" MISSING "/flag-ca"},
         .env = {ENV_ENDPOINTS, ENV_TLS("/env-ca")},
         .exit = 2,
         .err = {MISSING "/flag-ca"},
         .not_err = {MISSING "/env-ca"}},
        {.cmd = &cmd_verify,
         .args = {"--help"},
         .out = {"--endpoints", "--cacert", "--cert", "--key", "$ETCDCTL_ENDPOINTS"},
         .not_out = {"--client-"}},

        /* member-remove: flags, else etcd.env's $ALL_ETCD_ENDPOINTS, $ETCDCTL_*. */
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .exit = 2,
         .err = {"--endpoints", "etcd-member-remove.sh"}},
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .env = {"ALL_ETCD_ENDPOINTS=https://127.0.0.1:1"},
         .exit = 2,
         .err = {"--cacert", "etcd-member-remove.sh"},
         .not_err = {"--endpoints"}},
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .env = {ENV_ENDPOINTS},
         .exit = 2,
         .err = {"--cacert"},
         .not_err = {"--endpoints"}},
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .env = {"ALL_ETCD_ENDPOINTS=https://127.0.0.1:1", ENV_TLS("/env-ca")},
         .exit = 1,
         .err = {MISSING "/env-ca", "etcd-member-remove.sh"}},
        {.cmd = &cmd_member_remove,
         .args = {"--help"},
         .out = {"--endpoints", "$ALL_ETCD_ENDPOINTS", "$ETCDCTL_CACERT", "$ETCDCTL_KEY", "-v=N"},
         .not_out = {"--client-"}},

        /* cluster-backup: flags, else $ETCDCTL_*. */
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup"},
         .exit = 2,
         .err = {"--endpoints", "ETCDCTL_ENDPOINTS"}},
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup"},
         .env = {ENV_ENDPOINTS},
         .exit = 2,
         .err = {"--cacert", "ETCDCTL_CACERT"}},
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup", ENDPOINT, "--cacert=" MISSING "/ca", "--cert=" MISSING "/c",
                  "--key=" MISSING "/k", "--config-dir=" MISSING "/config"},
         .exit = 1},
        {.cmd = &cmd_cluster_backup,
         .args = {"--help"},
         .out = {"--endpoints URL[,URL]", "$ETCDCTL_ENDPOINTS", "$ETCDCTL_CACERT", "$ETCDCTL_KEY", "-v=N"},
         .not_out = {"--client-"}},
};

static void test_commands(void **state)
{
        assert_int_equal(unsetenv("JOURNAL_STREAM"), 0);
        log_open();
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check_case(i, &cases[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_commands),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
