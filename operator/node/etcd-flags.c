/* The node tools' etcd client flags (etcd-flags.h): parsing, the
 * environment defaults, the check that names what is missing and loads the
 * TLS files, and the --help lines, each written once for every command. */
#include <assert.h>
#include <stdarg.h>

#include "base/log.h"
#include "base/strlist.h"
#include "cmd/cmd.h"
#include "etcd-flags.h"
#include "host/tls.h"

#define HELP_WIDTH 80

static const struct {
        const char *flag, *alias, *env, *help, *what;
} tls_flags[] = {
        {"--cacert", "--client-cacert-file", "ETCDCTL_CACERT", "CA bundle to verify etcd",
         "the CA bundle that signed etcd's serving certificates"},
        {"--cert", "--client-cert-file", "ETCDCTL_CERT", "client certificate",
         "a client certificate etcd trusts"},
        {"--key", "--client-key-file", "ETCDCTL_KEY", "client key", "the key of --cert"},
};

static const char **tls_value(NodeCmdEtcdFlags *f, size_t i)
{
        return i == 0 ? &f->cacert : i == 1 ? &f->cert : &f->key;
}

static bool is_missing(const char *v)
{
        return !v || !*v;
}

bool nodecmd_etcd_flags_take(NodeCmdEtcdFlags *f, int c, const char *arg)
{
        assert(f);
        switch (c) {
        case NODECMD_ETCD_ARG_ENDPOINTS:
                if (!(f->features & NODECMD_ETCD_ENDPOINTS))
                        return false;
                if (f->features & NODECMD_ETCD_FIRST_ENDPOINT)
                        strlist_done(&f->endpoints);
                f->endpoints_given = true;
                if (strlist_add_csv(&f->endpoints, arg) < 0 && f->error == 0)
                        f->error = -ENOMEM;
                return true;
        case NODECMD_ETCD_ARG_CACERT:
        case NODECMD_ETCD_ARG_CERT:
        case NODECMD_ETCD_ARG_KEY:
                *tls_value(f, (size_t) (c - NODECMD_ETCD_ARG_CACERT)) = arg;
                return true;
        default:
                return false;
        }
}

/* Each variable's items not listed yet, in order. */
static int add_env_endpoints(StrList *l, const char *var)
{
        _cleanup_(strlist_done) StrList items = {};
        const char *v = getenv(var);

        if (v && strlist_add_csv(&items, v) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < items.n; i++)
                if (!strlist_contains(l, items.v[i]) && strlist_add_csv(l, items.v[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* The one place the environment fills in what the flags left out. An empty
 * variable is no default. */
static int apply_env(NodeCmdEtcdFlags *f)
{
        int r;

        if (!(f->features & NODECMD_ETCD_ENV))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(tls_flags); i++) {
                const char *e = getenv(tls_flags[i].env);
                if (!*tls_value(f, i) && e && *e)
                        *tls_value(f, i) = e;
        }
        if (!(f->features & NODECMD_ETCD_ENDPOINTS) || f->endpoints_given)
                return 0;
        if ((f->features & NODECMD_ETCD_ENV_ALL_ENDPOINTS) &&
            (r = add_env_endpoints(&f->endpoints, "ALL_ETCD_ENDPOINTS")) < 0)
                return r;
        return add_env_endpoints(&f->endpoints, "ETCDCTL_ENDPOINTS");
}

static void append(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
static void append(char *buf, size_t size, const char *fmt, ...)
{
        size_t n = strlen(buf);
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(buf + n, size - n, fmt, ap);
        va_end(ap);
}

/* One line: every missing flag, with its variable and what it is. */
static int log_missing(const NodeCmdEtcdFlags *f, const char *missing[], const char *env[],
                       const char *what[], size_t n)
{
        char line[1024] = "";

        for (size_t i = 0; i < n; i++)
                append(line, sizeof line, "%s%s%s%s (%s)",
                       i == 0       ? ""
                       : i + 1 == n ? " and "
                                    : ", ",
                       missing[i], env[i] ? " or $" : "", strempty(env[i]), what[i]);
        log_error("%s: missing %s%s%s", f->command, line, f->hint ? "; " : "", strempty(f->hint));
        return -EINVAL;
}

int nodecmd_etcd_flags_check(NodeCmdEtcdFlags *f)
{
        const char *missing[1 + ELEMENTSOF(tls_flags)], *env[ELEMENTSOF(missing)],
                *what[ELEMENTSOF(missing)];
        _cleanup_free_ char *err = NULL;
        size_t n = 0;
        int r;

        assert(f && f->command);
        bool with_env = f->features & NODECMD_ETCD_ENV;
        r = f->error < 0 ? f->error : apply_env(f);
        if (r < 0) {
                log_error("%s: out of memory", f->command);
                return r;
        }
        if ((f->features & NODECMD_ETCD_ENDPOINTS) && f->endpoints.n == 0) {
                missing[n] = "--endpoints";
                env[n] = !with_env ? NULL
                         : f->features & NODECMD_ETCD_ENV_ALL_ENDPOINTS
                                 ? "ALL_ETCD_ENDPOINTS/$ETCDCTL_ENDPOINTS"
                                 : "ETCDCTL_ENDPOINTS";
                what[n++] = f->features & NODECMD_ETCD_FIRST_ENDPOINT
                                    ? "the local member's client URL, e.g. https://10.0.0.1:2379"
                                    : "the members' client URLs, e.g. "
                                      "https://10.0.0.1:2379,https://10.0.0.2:2379";
        }
        for (size_t i = 0; i < ELEMENTSOF(tls_flags); i++)
                if (is_missing(*tls_value(f, i))) {
                        missing[n] = tls_flags[i].flag;
                        env[n] = with_env ? tls_flags[i].env : NULL;
                        what[n++] = tls_flags[i].what;
                }
        if (n > 0)
                return log_missing(f, missing, env, what, n);

        r = host_tls_load(f->cacert, f->cert, f->key, &f->tls, &err);
        if (r < 0) {
                log_error("%s: %s (check --cacert, --cert and --key%s)%s%s", f->command,
                          err ? err : strerror(-r),
                          with_env ? ", or $ETCDCTL_CACERT, $ETCDCTL_CERT and $ETCDCTL_KEY" : "",
                          f->hint ? "; " : "", strempty(f->hint));
                /* -EINVAL says "missing" to the caller; a file read never fails with it but for
                 * an odd file (read(2) on something unreadable), which is an I/O error. */
                return r == -EINVAL ? -EIO : r;
        }
        return 0;
}

int nodecmd_etcd_flags_exit(int r, int unreadable)
{
        assert(r < 0);
        return r == -EINVAL ? EXIT_USAGE : r == -ENOMEM ? EXIT_RUNTIME : unreadable;
}

/* One word of help text at *at, on a new line at `column` when it would pass the width. */
static void put_word(FILE *out, int column, int *at, const char *word, size_t len)
{
        if (*at > column && *at + 1 + (int) len > HELP_WIDTH) {
                (void) fprintf(out, "\n%*s", column, "");
                *at = column;
        }
        *at += fprintf(out, "%s%.*s", *at > column ? " " : "", (int) len, word);
}

static void put_words(FILE *out, int column, int *at, const char *text)
{
        for (const char *p = text + strspn(text, " "); *p; p += strspn(p, " ")) {
                size_t len = strcspn(p, " ");
                put_word(out, column, at, p, len);
                p += len;
        }
}

/* "  FLAG    TEXT (NOTE)": TEXT wraps at its spaces, NOTE stays whole where a line can hold it. */
static void help_line(FILE *out, int column, const char *flag, const char *text, const char *note)
{
        int at = fprintf(out, "  %-*s", column - 2, flag);

        if ((int) strlen(flag) + 2 >= column) { /* no space left before the text */
                (void) fprintf(out, "\n%*s", column, "");
                at = column;
        }
        put_words(out, column, &at, text);
        if (column + (int) strlen(note) <= HELP_WIDTH)
                put_word(out, column, &at, note, strlen(note));
        else
                put_words(out, column, &at, note);
        (void) fputc('\n', out);
}

void nodecmd_etcd_flags_help(FILE *out, unsigned features, int column)
{
        char note[128];

        if (features & NODECMD_ETCD_ENDPOINTS) {
                bool first = features & NODECMD_ETCD_FIRST_ENDPOINT;
                (void) snprintf(note, sizeof note, "(%s)",
                                !(features & NODECMD_ETCD_ENV) ? "required"
                                : features & NODECMD_ETCD_ENV_ALL_ENDPOINTS
                                        ? "default: $ALL_ETCD_ENDPOINTS and $ETCDCTL_ENDPOINTS"
                                        : "default: $ETCDCTL_ENDPOINTS");
                help_line(out, column, first ? "--endpoints URL[,URL]" : "--endpoints URL,URL",
                          first ? "etcd client URL, the local member first" : "client URLs of the members",
                          note);
        }
        for (size_t i = 0; i < ELEMENTSOF(tls_flags); i++) {
                char flag[32];
                (void) snprintf(flag, sizeof flag, "%s FILE", tls_flags[i].flag);
                (void) snprintf(note, sizeof note, "(");
                if (features & NODECMD_ETCD_TLS_ALIASES)
                        append(note, sizeof note, "alias %s", tls_flags[i].alias);
                if (features & NODECMD_ETCD_ENV)
                        append(note, sizeof note, "%sdefault: $%s", note[1] ? "; " : "", tls_flags[i].env);
                append(note, sizeof note, "%s)", note[1] ? "" : "required");
                help_line(out, column, flag, tls_flags[i].help, note);
        }
}

void nodecmd_etcd_flags_done(NodeCmdEtcdFlags *f)
{
        strlist_done(&f->endpoints);
        host_tls_done(&f->tls);
}
