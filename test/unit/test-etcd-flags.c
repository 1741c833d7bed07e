/* The etcd client flags of the node tools (--endpoints, --cacert, --cert,
 * --key, their aliases and $ETCDCTL_* defaults): the module that parses
 * them (operator/node/etcd-flags.h) on its own, and as a user meets them: each
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
#include "node/etcd-flags.h"
#include "node/node.h"

static const char *const our_env[] = {"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY",
                                      "ALL_ETCD_ENDPOINTS"};

/* Only the variables of `env` ("NAME=value") of ours set; NULL: none. */
static void set_env(const char *const *env)
{
        for (size_t i = 0; i < ELEMENTSOF(our_env); i++)
                assert_int_equal(unsetenv(our_env[i]), 0);
        for (size_t i = 0; env && env[i]; i++) {
                const char *eq = strchr(env[i], '=');
                _cleanup_free_ char *name = strndup(env[i], (size_t) (eq - env[i]));
                assert_int_equal(setenv(name, eq + 1, 1), 0);
        }
}

/* stdout and stderr into files, between capture_start() and capture_stop(). */
typedef struct Capture {
        char out_path[64], err_path[64];
        int out, err, saved_out, saved_err;
        char *out_text, *err_text;
} Capture;

static void capture_start(Capture *c)
{
        *c = (Capture){.out_path = "/tmp/test-etcd-flags-out-XXXXXX",
                       .err_path = "/tmp/test-etcd-flags-err-XXXXXX"};
        c->out = mkstemp(c->out_path);
        c->err = mkstemp(c->err_path);
        c->saved_out = dup(STDOUT_FILENO);
        c->saved_err = dup(STDERR_FILENO);
        assert_true(c->out >= 0 && c->err >= 0 && c->saved_out >= 0 && c->saved_err >= 0);
        (void) fflush(stdout);
        (void) fflush(stderr);
        assert_int_equal(dup2(c->out, STDOUT_FILENO), STDOUT_FILENO);
        assert_int_equal(dup2(c->err, STDERR_FILENO), STDERR_FILENO);
}

static void capture_stop(Capture *c)
{
        (void) fflush(stdout);
        (void) fflush(stderr);
        assert_int_equal(dup2(c->saved_out, STDOUT_FILENO), STDOUT_FILENO);
        assert_int_equal(dup2(c->saved_err, STDERR_FILENO), STDERR_FILENO);
        assert_int_equal(read_full_file(c->out_path, 1 << 20, &c->out_text, NULL), 0);
        assert_int_equal(read_full_file(c->err_path, 1 << 20, &c->err_text, NULL), 0);
        (void) unlink(c->out_path);
        (void) unlink(c->err_path);
        closep(&c->out);
        closep(&c->err);
        closep(&c->saved_out);
        closep(&c->saved_err);
}

static void capture_done(Capture *c)
{
        free(c->out_text);
        free(c->err_text);
        *c = (Capture){};
}

/* Runs `cmd` with `args` (NULL-terminated) in environment `env`; *c gets its stdout and
 * stderr. Returns its exit code. */
static int run(const Command *cmd, const char *const *args, const char *const *env, Capture *c)
{
        char *argv[32] = {(char *) cmd->name}, *copies[32] = {};
        int argc = 1, r;

        set_env(env);
        for (size_t i = 0; args && args[i]; i++) {
                assert_true(argc + 1 < (int) ELEMENTSOF(argv));
                argv[argc] = copies[argc] = strdup(args[i]);
                argc++;
        }
        capture_start(c);
        r = cmd->run(argc, argv);
        capture_stop(c);
        for (size_t i = 0; i < ELEMENTSOF(copies); i++)
                free(copies[i]); /* cmd_take_verbosity() took -v out of argv */
        set_env(NULL);
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
        _cleanup_(capture_done) Capture r = {};
        int exit = run(c->cmd, c->args, c->env, &r);
        bool ok = exit == c->exit;

        for (size_t j = 0; j < MAX_TEXTS; j++) {
                ok = ok && (!c->err[j] || strstr(r.err_text, c->err[j]));
                ok = ok && (!c->not_err[j] || !strstr(r.err_text, c->not_err[j]));
                ok = ok && (!c->out[j] || strstr(r.out_text, c->out[j]));
                ok = ok && (!c->not_out[j] || !strstr(r.out_text, c->not_out[j]));
        }
        if (!ok)
                fail_msg("case %zu (%s %s %s): exit %d (want %d)\nstderr:\n%s\nstdout:\n%s", i, c->cmd->name,
                         strempty(c->args[0]), strempty(c->args[1]), exit, c->exit, r.err_text, r.out_text);
}

#define MISSING       "/nonexistent/etcd-flags"
#define ENDPOINT      "--endpoints=https://127.0.0.1:1"
#define ENV_ENDPOINTS "ETCDCTL_ENDPOINTS=https://127.0.0.1:1"
#define ENV_TLS(ca)   "ETCDCTL_CACERT=" MISSING ca, "ETCDCTL_CERT=" MISSING "/c", "ETCDCTL_KEY=" MISSING "/k"
#define DISCOVER_OWN  "--data-dir=" MISSING "/data", "--target-peer-url-host=127.0.0.1", "--target-name=m1"

static const Case cases[] = {
        /* discover-etcd-initial-cluster: flags only, no aliases, no environment. */
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .exit = 2,
         .err = {"discover-etcd-initial-cluster: missing --endpoints", "--cacert", "--cert", "--key"}},
        /* An empty value is a missing one. */
        {.cmd = &cmd_discover_etcd_initial_cluster,
         .args = {ENDPOINT, "--cacert=", "--cert=" MISSING "/c", "--key=" MISSING "/k", DISCOVER_OWN},
         .exit = 2,
         .err = {"missing --cacert"}},
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
        {.cmd = &cmd_rev, .exit = 2, .err = {"rev: missing --endpoints", "--cacert", "--cert", "--key"}},
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
        {.cmd = &cmd_readyz, .exit = 2, .err = {"readyz: missing --cacert", "--cert", "--key"}},
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
        /* A flag given, even empty, is the value: no variable stands in for it. */
        {.cmd = &cmd_verify,
         .args = {"backup-storage", "--endpoints="},
         .env = {ENV_ENDPOINTS, ENV_TLS("/env-ca")},
         .exit = 2,
         .err = {"verify: missing --endpoints or $ETCDCTL_ENDPOINTS"},
         .not_err = {"--cacert"}},
        {.cmd = &cmd_verify,
         .args = {"--help"},
         .out = {"--endpoints", "--cacert", "--cert", "--key", "$ETCDCTL_ENDPOINTS"},
         .not_out = {"--client-"}},

        /* member-remove: flags, else etcd.env's $ALL_ETCD_ENDPOINTS, $ETCDCTL_*. */
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .exit = 2,
         .err = {"member-remove: missing --endpoints or $ALL_ETCD_ENDPOINTS/$ETCDCTL_ENDPOINTS",
                 "$ETCDCTL_CACERT", "$ETCDCTL_CERT", "$ETCDCTL_KEY", "etcd-member-remove.sh"}},
        /* An empty variable is no value: a usage error, not a file that cannot be read. */
        {.cmd = &cmd_member_remove,
         .args = {"m1"},
         .env = {"ALL_ETCD_ENDPOINTS=https://127.0.0.1:1", ENV_TLS("/env-ca"), "ETCDCTL_CACERT="},
         .exit = 2,
         .err = {"missing --cacert or $ETCDCTL_CACERT"}},
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
         .err = {"cluster-backup: missing --endpoints or $ETCDCTL_ENDPOINTS", "$ETCDCTL_CACERT",
                 "$ETCDCTL_CERT", "$ETCDCTL_KEY"}},
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup"},
         .env = {ENV_ENDPOINTS},
         .exit = 2,
         .err = {"--cacert", "ETCDCTL_CACERT"}},
        /* An unreadable file is a runtime failure, found before anything is written (the config
         * dir is not looked at). */
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup", ENDPOINT, "--cacert=" MISSING "/ca", "--cert=" MISSING "/c",
                  "--key=" MISSING "/k", "--config-dir=" MISSING "/config"},
         .exit = 1,
         .err = {"cluster-backup: cannot read " MISSING "/ca", "$ETCDCTL_CACERT"},
         .not_err = {MISSING "/config"}},
        /* A later --endpoints replaces an earlier one; an empty one is missing. */
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup", ENDPOINT, "--endpoints=", "--cacert=" MISSING "/ca"},
         .env = {ENV_ENDPOINTS},
         .exit = 2,
         .err = {"cluster-backup: missing --endpoints or $ETCDCTL_ENDPOINTS (the local member's client "
                 "URL"}},
        /* An empty value is a missing one, a usage error. */
        {.cmd = &cmd_cluster_backup,
         .args = {MISSING "/backup", ENDPOINT, "--cacert="},
         .env = {ENV_TLS("/env-ca")},
         .exit = 2,
         .err = {"missing --cacert or $ETCDCTL_CACERT"}},
        {.cmd = &cmd_cluster_backup,
         .args = {"--help"},
         .out = {"--endpoints URL[,URL]", "$ETCDCTL_ENDPOINTS", "$ETCDCTL_CACERT", "$ETCDCTL_KEY", "-v=N"},
         .not_out = {"--client-"}},
};

/* ---- the module (operator/node/etcd-flags.h) ---- */

static void test_take(void **state)
{
        _cleanup_(nodecmd_etcd_flags_done)
                NodeCmdEtcdFlags f = {.command = "t", .features = NODECMD_ETCD_ENDPOINTS};
        _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags first = {
                .command = "t", .features = NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_FIRST_ENDPOINT};
        _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags tls_only = {.command = "t"};

        /* Repeatable, comma lists, items trimmed, empty items dropped. */
        assert_true(
                nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_ENDPOINTS, "https://a:2379, https://b:2379,"));
        assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_ENDPOINTS, "https://c:2379"));
        assert_int_equal(f.endpoints.n, 3);
        assert_string_equal(f.endpoints.v[1], "https://b:2379");
        assert_string_equal(f.endpoints.v[2], "https://c:2379");
        assert_true(f.endpoints_given);
        /* The TLS flags (an alias has the same code); the last one given wins. */
        assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_CACERT, "/a/ca"));
        assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_CACERT, "/b/ca"));
        assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_CERT, "/b/crt"));
        assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_KEY, "/b/key"));
        assert_string_equal(f.cacert, "/b/ca");
        assert_string_equal(f.cert, "/b/crt");
        assert_string_equal(f.key, "/b/key");
        /* None of ours: the command's own, or an unknown flag. */
        assert_false(nodecmd_etcd_flags_take(&f, 'h', NULL));
        assert_false(nodecmd_etcd_flags_take(&f, 0x100, "x"));
        assert_false(nodecmd_etcd_flags_take(&f, '?', NULL));
        assert_int_equal(f.error, 0);

        /* The first endpoint is the one asked: a later --endpoints replaces. */
        assert_true(nodecmd_etcd_flags_take(&first, NODECMD_ETCD_ARG_ENDPOINTS,
                                            "https://a:2379,https://b:2379"));
        assert_true(nodecmd_etcd_flags_take(&first, NODECMD_ETCD_ARG_ENDPOINTS, "https://c:2379"));
        assert_int_equal(first.endpoints.n, 1);
        assert_string_equal(first.endpoints.v[0], "https://c:2379");

        /* A command without --endpoints does not take it. */
        assert_false(nodecmd_etcd_flags_take(&tls_only, NODECMD_ETCD_ARG_ENDPOINTS, "https://a:2379"));
        assert_int_equal(tls_only.endpoints.n, 0);

        /* The codes sit above any a command numbers from 0x100, and are none of getopt's. */
        assert_true(NODECMD_ETCD_ARG_ENDPOINTS > 0xffff);
        assert_true(NODECMD_ETCD_ARG_KEY - NODECMD_ETCD_ARG_ENDPOINTS == 3);
}

/* Three readable files; the TLS check only reads them. */
typedef struct TlsFiles {
        char dir[64];
        char ca[96], cert[96], key[96];
} TlsFiles;

static void tls_files_make(TlsFiles *t)
{
        (void) snprintf(t->dir, sizeof t->dir, "/tmp/test-etcd-flags-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        (void) snprintf(t->ca, sizeof t->ca, "%s/ca.crt", t->dir);
        (void) snprintf(t->cert, sizeof t->cert, "%s/client.crt", t->dir);
        (void) snprintf(t->key, sizeof t->key, "%s/client.key", t->dir);
        assert_int_equal(write_file_atomic(t->ca, "CA", 2, 0600), 0);
        assert_int_equal(write_file_atomic(t->cert, "CERT", 4, 0600), 0);
        assert_int_equal(write_file_atomic(t->key, "KEY", 3, 0600), 0);
}

static void tls_files_remove(TlsFiles *t)
{
        (void) unlink(t->ca);
        (void) unlink(t->cert);
        (void) unlink(t->key);
        (void) rmdir(t->dir);
}

/* The check on `f` with `env` set; *err gets what it logged. */
static int check(NodeCmdEtcdFlags *f, const char *const *env, char **err)
{
        Capture c = {};
        set_env(env);
        capture_start(&c);
        int r = nodecmd_etcd_flags_check(f);
        capture_stop(&c);
        set_env(NULL);
        *err = TAKE_PTR(c.err_text);
        capture_done(&c);
        return r;
}

static void test_check(void **state)
{
        TlsFiles t;
        tls_files_make(&t);

        /* Everything given: the files are loaded, nothing is logged. */
        {
                _cleanup_(nodecmd_etcd_flags_done)
                        NodeCmdEtcdFlags f = {.command = "t", .features = NODECMD_ETCD_ENDPOINTS};
                _cleanup_free_ char *err = NULL;
                assert_true(nodecmd_etcd_flags_take(&f, NODECMD_ETCD_ARG_ENDPOINTS, "https://a:2379"));
                f.cacert = t.ca, f.cert = t.cert, f.key = t.key;
                assert_int_equal(check(&f, NULL, &err), 0);
                assert_string_equal(err, "");
                assert_string_equal(f.tls.ca_pem, "CA");
                assert_string_equal(f.tls.cert_pem, "CERT");
                assert_string_equal(f.tls.key_pem, "KEY");
        }
        /* Missing, without the environment: one line names each flag and what it is; an empty
         * value is missing; $ETCDCTL_* is not read. */
        {
                const char *env[] = {"ETCDCTL_CACERT=/x", "ETCDCTL_ENDPOINTS=https://a:2379", NULL};
                _cleanup_(nodecmd_etcd_flags_done)
                        NodeCmdEtcdFlags f = {.command = "rev", .features = NODECMD_ETCD_ENDPOINTS};
                _cleanup_free_ char *err = NULL;
                f.cert = "", f.key = t.key;
                assert_int_equal(check(&f, env, &err), -EINVAL);
                assert_non_null(strstr(err, "rev: missing --endpoints (the members' client URLs, e.g. "
                                            "https://10.0.0.1:2379,https://10.0.0.2:2379), --cacert (the CA "
                                            "bundle that signed etcd's serving certificates) and --cert (a "
                                            "client certificate etcd trusts)\n"));
                assert_null(f.cacert);
                assert_int_equal(nodecmd_etcd_flags_exit(-EINVAL, EXIT_RUNTIME), EXIT_USAGE);
        }
        /* The environment fills in what no flag gave, and the line names its variables and the
         * command's hint. An empty variable is none. */
        {
                const char *env[] = {"ETCDCTL_CACERT=", "ETCDCTL_CERT=/env/crt", NULL};
                _cleanup_(nodecmd_etcd_flags_done)
                        NodeCmdEtcdFlags f = {.command = "member-remove",
                                              .features = NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV |
                                                          NODECMD_ETCD_ENV_ALL_ENDPOINTS,
                                              .hint = "run it as etcd-member-remove.sh"};
                _cleanup_free_ char *err = NULL;
                f.key = "/flag/key";
                assert_int_equal(check(&f, env, &err), -EINVAL);
                assert_non_null(strstr(err,
                                       "member-remove: missing --endpoints or "
                                       "$ALL_ETCD_ENDPOINTS/$ETCDCTL_ENDPOINTS (the members' client URLs, "
                                       "e.g. https://10.0.0.1:2379,https://10.0.0.2:2379) and --cacert or "
                                       "$ETCDCTL_CACERT (the CA bundle that signed etcd's serving "
                                       "certificates); run it as etcd-member-remove.sh\n"));
                assert_string_equal(f.cert, "/env/crt");
                assert_string_equal(f.key, "/flag/key");
        }
        /* $ALL_ETCD_ENDPOINTS, then $ETCDCTL_ENDPOINTS, without repeats; flags win over both. */
        {
                const char *env[] = {"ALL_ETCD_ENDPOINTS=https://a:2379,https://b:2379",
                                     "ETCDCTL_ENDPOINTS=https://b:2379, https://c:2379",
                                     "ETCDCTL_CACERT=/env/ca", NULL};
                _cleanup_(nodecmd_etcd_flags_done)
                        NodeCmdEtcdFlags f = {.command = "t",
                                              .features = NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV |
                                                          NODECMD_ETCD_ENV_ALL_ENDPOINTS};
                _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags g = {
                        .command = "t", .features = NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV};
                _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags h = {
                        .command = "t", .features = NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV};
                _cleanup_free_ char *err = NULL, *err2 = NULL, *err3 = NULL;
                f.cert = g.cert = h.cert = t.cert, f.key = g.key = h.key = t.key;
                assert_int_equal(check(&f, env, &err), -ENOENT); /* /env/ca is not there */
                assert_int_equal(f.endpoints.n, 3);
                assert_string_equal(f.endpoints.v[0], "https://a:2379");
                assert_string_equal(f.endpoints.v[1], "https://b:2379");
                assert_string_equal(f.endpoints.v[2], "https://c:2379");
                assert_non_null(strstr(err,
                                       "t: cannot read /env/ca: No such file or directory (check --cacert, "
                                       "--cert and --key, or $ETCDCTL_CACERT, $ETCDCTL_CERT and "
                                       "$ETCDCTL_KEY)\n"));
                assert_int_equal(nodecmd_etcd_flags_exit(-ENOENT, EXIT_RUNTIME), EXIT_RUNTIME);
                assert_int_equal(nodecmd_etcd_flags_exit(-ENOENT, EXIT_USAGE), EXIT_USAGE);
                assert_int_equal(nodecmd_etcd_flags_exit(-ENOMEM, EXIT_USAGE), EXIT_RUNTIME);

                /* Without NODECMD_ETCD_ENV_ALL_ENDPOINTS: $ETCDCTL_ENDPOINTS only. */
                assert_true(nodecmd_etcd_flags_take(&g, NODECMD_ETCD_ARG_CACERT, t.ca));
                assert_int_equal(check(&g, env, &err2), 0);
                assert_int_equal(g.endpoints.n, 2);
                assert_string_equal(g.endpoints.v[0], "https://b:2379");
                assert_string_equal(g.tls.ca_pem, "CA");

                /* --endpoints given, even empty: no variable is read, and empty is missing. */
                assert_true(nodecmd_etcd_flags_take(&h, NODECMD_ETCD_ARG_ENDPOINTS, ""));
                assert_int_equal(check(&h, env, &err3), -EINVAL);
                assert_int_equal(h.endpoints.n, 0);
                assert_non_null(strstr(err3, "t: missing --endpoints or $ETCDCTL_ENDPOINTS"));
        }
        /* A file that cannot be read is named, with the flags to check. */
        {
                _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags f = {.command = "readyz"};
                _cleanup_free_ char *err = NULL;
                f.cacert = t.ca, f.cert = t.cert, f.key = "/nonexistent/client.key";
                assert_int_equal(check(&f, NULL, &err), -ENOENT);
                assert_non_null(strstr(err, "readyz: cannot read /nonexistent/client.key: No such file or "
                                            "directory (check --cacert, --cert and --key)\n"));
                assert_null(f.tls.ca_pem);
        }
        /* Out of memory while parsing is reported by the check, as a runtime failure. */
        {
                _cleanup_(nodecmd_etcd_flags_done) NodeCmdEtcdFlags f = {.command = "t", .error = -ENOMEM};
                _cleanup_free_ char *err = NULL;
                assert_int_equal(check(&f, NULL, &err), -ENOMEM);
                assert_non_null(strstr(err, "t: out of memory"));
        }
        tls_files_remove(&t);
}

static char *help_text(unsigned features, int column)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        assert_non_null(f);
        nodecmd_etcd_flags_help(f, features, column);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void test_help(void **state)
{
        _cleanup_free_ char *pod = help_text(NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_TLS_ALIASES, 26);
        _cleanup_free_ char *env =
                help_text(NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_ENV | NODECMD_ETCD_ENV_ALL_ENDPOINTS, 22);
        _cleanup_free_ char *backup =
                help_text(NODECMD_ETCD_ENDPOINTS | NODECMD_ETCD_FIRST_ENDPOINT | NODECMD_ETCD_ENV, 26);
        _cleanup_free_ char *plain = help_text(NODECMD_ETCD_ENDPOINTS, 31);

        assert_string_equal(
                pod, "  --endpoints URL,URL     client URLs of the members (required)\n"
                     "  --cacert FILE           CA bundle to verify etcd (alias --client-cacert-file)\n"
                     "  --cert FILE             client certificate (alias --client-cert-file)\n"
                     "  --key FILE              client key (alias --client-key-file)\n");
        assert_string_equal(env,
                            "  --endpoints URL,URL client URLs of the members\n"
                            "                      (default: $ALL_ETCD_ENDPOINTS and $ETCDCTL_ENDPOINTS)\n"
                            "  --cacert FILE       CA bundle to verify etcd (default: $ETCDCTL_CACERT)\n"
                            "  --cert FILE         client certificate (default: $ETCDCTL_CERT)\n"
                            "  --key FILE          client key (default: $ETCDCTL_KEY)\n");
        assert_string_equal(backup,
                            "  --endpoints URL[,URL]   etcd client URL, the local member first\n"
                            "                          (default: $ETCDCTL_ENDPOINTS)\n"
                            "  --cacert FILE           CA bundle to verify etcd (default: $ETCDCTL_CACERT)\n"
                            "  --cert FILE             client certificate (default: $ETCDCTL_CERT)\n"
                            "  --key FILE              client key (default: $ETCDCTL_KEY)\n");
        assert_string_equal(plain, "  --endpoints URL,URL          client URLs of the members (required)\n"
                                   "  --cacert FILE                CA bundle to verify etcd (required)\n"
                                   "  --cert FILE                  client certificate (required)\n"
                                   "  --key FILE                   client key (required)\n");
        /* Every combination at every column a command uses: no line over 80 columns. */
        for (unsigned bits = 0; bits < 32; bits++)
                for (int column = 20; column <= 32; column++) {
                        _cleanup_free_ char *text = help_text(bits, column);
                        for (const char *p = text; *p;) {
                                size_t n = strcspn(p, "\n");
                                assert_true(n <= 80);
                                p += n + (p[n] ? 1 : 0);
                        }
                }
}

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
                cmocka_unit_test(test_take),
                cmocka_unit_test(test_check),
                cmocka_unit_test(test_help),
                cmocka_unit_test(test_commands),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
