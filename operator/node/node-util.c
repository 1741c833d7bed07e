/* Pure helpers of the node-side commands: names, substitution, flag lists,
 * the ensure-env checks, and reading the etcd client's TLS files. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/names.h"
#include "controllers/facts.h"
#include "etcd/quorum.h"
#include "node-util.h"

extern char **environ;

#define TLS_FILE_MAX (1024 * 1024)

bool nodecmd_key_is_valid(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 253 || streq(s, ".") || startswith(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!(isascii((unsigned char) *p) && (isalnum((unsigned char) *p) || strchr("-._", *p))))
                        return false;
        return true;
}

int nodecmd_parse_revision(const char *s, unsigned *ret)
{
        unsigned long v = 0;

        assert_return(ret, -EINVAL);
        if (!s || !*s || strlen(s) > 10 || s[0] == '0')
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned long) (*p - '0');
        }
        if (v == 0 || v > 0x7fffffffUL)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

char *nodecmd_envvar_name(const char *node_name)
{
        return node_name ? node_envvar_name(node_name) : NULL;
}

int nodecmd_substitute(const char *in, size_t len, const char *revision, const char *node_name, char **ret,
                       size_t *ret_len)
{
        _cleanup_free_ char *envvar = nodecmd_envvar_name(node_name);
        const struct {
                const char *token;
                const char *value;
        } subst[] = {
                /* The longest first, so no token shadows another that starts alike. */
                {"NODE_ENVVAR_NAME", envvar},
                {"NODE_NAME", node_name},
                {"REVISION", revision},
        };
        Buf b = BUF_INIT(0);
        size_t start = 0;
        int r;

        assert_return((in || len == 0) && revision && node_name && ret, -EINVAL);
        if (!envvar)
                return -ENOMEM;
        for (size_t i = 0; i < len;) {
                size_t k;
                for (k = 0; k < ELEMENTSOF(subst); k++) {
                        size_t tl = strlen(subst[k].token);
                        if (len - i >= tl && memcmp(in + i, subst[k].token, tl) == 0)
                                break;
                }
                if (k == ELEMENTSOF(subst)) {
                        i++;
                        continue;
                }
                if ((r = buf_append(&b, in + start, i - start)) < 0 ||
                    (r = buf_append(&b, subst[k].value, strlen(subst[k].value))) < 0) {
                        buf_free(&b);
                        return r;
                }
                i += strlen(subst[k].token);
                start = i;
        }
        if ((r = buf_append(&b, in + start, len - start)) < 0) {
                buf_free(&b);
                return r;
        }
        size_t n = b.len;
        char *out = buf_steal(&b);
        if (!out && !(out = strdup("")))
                return -ENOMEM;
        *ret = out;
        if (ret_len)
                *ret_len = n;
        return 0;
}

int nodecmd_strv_add_csv(NodeCmdStrv *l, const char *csv)
{
        assert_return(l && csv, -EINVAL);
        for (const char *p = csv; *p;) {
                const char *comma = strchr(p, ',');
                const char *end = comma ? comma : p + strlen(p);
                const char *a = p, *z = end;
                while (a < z && isspace((unsigned char) *a))
                        a++;
                while (z > a && isspace((unsigned char) z[-1]))
                        z--;
                if (z > a) {
                        char **v = realloc(l->v, (l->n + 2) * sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        l->v = v;
                        if (!(v[l->n] = strndup(a, (size_t) (z - a))))
                                return -ENOMEM;
                        v[++l->n] = NULL;
                }
                p = comma ? comma + 1 : end;
        }
        return 0;
}

bool nodecmd_strv_contains(const NodeCmdStrv *l, const char *s)
{
        for (size_t i = 0; l && i < l->n; i++)
                if (streq(l->v[i], s))
                        return true;
        return false;
}

void nodecmd_strv_done(NodeCmdStrv *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (NodeCmdStrv){};
}

char *nodecmd_peer_url(const char *host, unsigned port)
{
        bool bracket = host && strchr(host, ':') && host[0] != '[';
        if (!host)
                return NULL;
        return strdup_printf("https://%s%s%s:%u", bracket ? "[" : "", host, bracket ? "]" : "", port);
}

static int env_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int env_error(char **ret_error, const char *fmt, ...)
{
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        free(*ret_error);
        *ret_error = s;
        return -EINVAL;
}

int nodecmd_ensure_env_check(const char *node_name, const char *pod_ip, NodeCmdEnvLookup lookup,
                             void *userdata, char **ret_error)
{
        static const char *const suffixes[] = {"IP", "ETCD_URL_HOST", "ETCD_NAME"};
        _cleanup_free_ char *n = NULL;
        const char *values[ELEMENTSOF(suffixes)];
        char var[ELEMENTSOF(suffixes)][320];
        unsigned char addr[16];

        assert_return(lookup && ret_error, -EINVAL);
        if (!dns1123_subdomain_is_valid(node_name))
                return env_error(ret_error,
                                 "node name \"%s\" is not a DNS-1123 subdomain; pass --node-name or "
                                 "set NODE_NAME from the pod's spec.nodeName",
                                 strempty(node_name));
        if (!pod_ip || (inet_pton(AF_INET, pod_ip, addr) != 1 && inet_pton(AF_INET6, pod_ip, addr) != 1))
                return env_error(ret_error,
                                 "pod IP \"%s\" is not an IPv4 or IPv6 address; pass --pod-ip or set "
                                 "POD_IP from the pod's status.podIP",
                                 strempty(pod_ip));
        n = nodecmd_envvar_name(node_name);
        if (!n)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                (void) snprintf(var[i], sizeof var[i], "NODE_%s_%s", n, suffixes[i]);
                values[i] = lookup(var[i], userdata);
                if (!values[i] || !*values[i])
                        return env_error(ret_error,
                                         "%s is %s: node %s has no entry in this revision of the etcd pod; "
                                         "wait for the operator to roll out a revision that includes it",
                                         var[i], values[i] ? "empty" : "not set", node_name);
        }
        char bare[INET6_ADDRSTRLEN];
        if (!ip_text_equal(ip_unbracket(values[0], bare, sizeof bare), pod_ip))
                return env_error(ret_error,
                                 "%s=%s does not match the pod IP %s: the node's address changed since this "
                                 "revision was rendered; wait for the operator to roll out a new revision. "
                                 "If every master's address changed at once, etcd has no quorum and the API "
                                 "does not answer, so the operator cannot: follow the cluster-moved runbook "
                                 "(docs/runbooks/cluster-moved.md)",
                                 var[0], values[0], pod_ip);
        const char *host = values[1];
        size_t hl = strlen(host);
        bool v6 = strchr(pod_ip, ':');
        char inner[64] = "";
        if (v6 && hl >= 2 && host[0] == '[' && host[hl - 1] == ']' && hl - 2 < sizeof inner)
                memcpy(inner, host + 1, hl - 2), inner[hl - 2] = 0;
        if (v6 ? !*inner || !ip_text_equal(inner, pod_ip) : !ip_text_equal(host, pod_ip))
                return env_error(ret_error, "%s=%s is not the pod IP %s%s%s", var[1], host, v6 ? "[" : "",
                                 pod_ip, v6 ? "] (IPv6 in brackets)" : "");
        return 0;
}

int nodecmd_tls_load(const char *cacert, const char *cert, const char *key, HttpTls *ret, char **ret_error)
{
        const char *paths[] = {cacert, cert, key};
        char *pems[3] = {};
        int r = 0;

        assert_return(ret && ret_error, -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                if (!paths[i])
                        continue;
                r = read_full_file(paths[i], TLS_FILE_MAX, &pems[i], NULL);
                if (r < 0) {
                        *ret_error = strdup_printf("cannot read %s: %s", paths[i],
                                                   r == -E2BIG ? "larger than 1 MiB" : strerror(-r));
                        break;
                }
        }
        if (r < 0) {
                for (size_t i = 0; i < ELEMENTSOF(pems); i++)
                        free(pems[i]);
                return r;
        }
        *ret = (HttpTls){.ca_pem = pems[0], .cert_pem = pems[1], .key_pem = pems[2]};
        return 0;
}

void nodecmd_tls_done(HttpTls *t)
{
        free(t->ca_pem);
        free(t->cert_pem);
        if (t->key_pem)
                explicit_bzero(t->key_pem, strlen(t->key_pem));
        free(t->key_pem);
        *t = (HttpTls){};
}

bool nodecmd_restart_keeps_quorum(const EtcdMemberList *l, const int *health, const char *self,
                                  size_t *ret_up, size_t *ret_voters, size_t *ret_quorum,
                                  const EtcdMember **ret_self)
{
        const EtcdMember *me = etcd_member_list_find_by_name(l, self);
        size_t up = 0, voters = 0;

        /* A learner, or a member that does not answer at all (down already), has nothing to
         * lose. One that answers "unhealthy" is running: while its cluster elects a leader
         * every member says so, and restarting it then may be what costs quorum. */
        if (me && (me->is_learner ||
                   (health[me - l->members] != 0 && health[me - l->members] != ETCD_ERR_UNHEALTHY)))
                me = NULL;
        for (size_t i = 0; l && i < l->n_members; i++) {
                if (l->members[i].is_learner)
                        continue;
                voters++;
                up += &l->members[i] != me && health[i] == 0;
        }
        if (ret_up)
                *ret_up = up;
        if (ret_voters)
                *ret_voters = voters;
        if (ret_quorum)
                *ret_quorum = etcd_quorum(voters);
        if (ret_self)
                *ret_self = me;
        return !me || etcd_quorum_holds(voters, up);
}

int nodecmd_mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *copy = path ? strdup(path) : NULL;
        struct stat st;
        int r;

        assert_return(path && *path, -EINVAL);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1;; p++) {
                if (*p != '/' && *p)
                        continue;
                char saved = *p;
                *p = 0;
                if (mkdir(copy, mode) < 0) {
                        if (errno != EEXIST)
                                return -errno;
                        if (stat(copy, &st) < 0)
                                return -errno;
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                } else if (chmod(copy, mode) < 0) /* exactly `mode`, whatever the umask */
                        return -errno;
                else if ((r = fsync_parent(copy)) < 0) /* a backup dir outlives a power loss */
                        return r;
                if (!saved)
                        return 0;
                *p = '/';
        }
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        log_info("received signal %u, exiting", si->ssi_signo);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int nodecmd_exit_on_signals(Loop *l)
{
        sd_event *e = loop_get_event(l);
        sigset_t mask;
        int r;

        assert_return(l, -EINVAL);
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        if ((r = sd_event_add_signal(e, NULL, SIGTERM, on_signal, NULL)) < 0 ||
            (r = sd_event_add_signal(e, NULL, SIGINT, on_signal, NULL)) < 0)
                return r;
        return 0;
}

void nodecmd_flag_error(const char *cmd, int c, char *argv[])
{
        const char *arg = optind > 0 ? argv[optind - 1] : "?";
        if (c == ':')
                log_error("%s: %s needs a value; see --help", cmd, arg);
        else
                log_error("%s: unknown flag %s; see --help", cmd, arg);
}

int nodecmd_run(const char *const argv[], char **ret_out)
{
        posix_spawn_file_actions_t fa;
        int pipefd[2] = {-1, -1}, status = 0, r;
        Buf out = BUF_INIT(0);
        bool too_much = false;
        pid_t pid;

        if (ret_out && pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_init(&fa);
        if (ret_out)
                posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        r = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *) argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (ret_out)
                (void) close(pipefd[1]);
        if (r != 0) {
                if (ret_out)
                        (void) close(pipefd[0]);
                return -r;
        }
        if (ret_out) {
                char chunk[4096];
                ssize_t k;
                /* Read on to the end past the cap, so the child is never stuck writing. */
                while ((k = read(pipefd[0], chunk, sizeof chunk)) > 0 || (k < 0 && errno == EINTR))
                        if (k > 0 && (too_much || out.len + (size_t) k > NODECMD_OUTPUT_MAX ||
                                      buf_append(&out, chunk, (size_t) k) < 0))
                                too_much = true;
                (void) close(pipefd[0]);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        buf_free(&out);
                        return -errno;
                }
        if (too_much) { /* never half an answer taken for the whole one (review L8) */
                buf_free(&out);
                return -E2BIG;
        }
        if (ret_out) {
                if (buf_append(&out, "", 1) < 0) {
                        buf_free(&out);
                        return -ENOMEM;
                }
                *ret_out = out.data ? out.data : strdup("");
                if (!*ret_out)
                        return -ENOMEM;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int remove_at(int dfd, const char *name, unsigned depth)
{
        struct stat st;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (depth > 64)
                return -ELOOP;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int r = remove_at(dirfd(d), de->d_name, depth + 1);
                if (r < 0)
                        return r;
        }
        if (errno != 0)
                return -errno;
        return unlinkat(dfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

int nodecmd_move_aside(const char *src, const char *base, char **ret_path)
{
        assert_return(src && base, -EINVAL);
        for (unsigned i = 0; i < 100; i++) {
                _cleanup_free_ char *dst = i == 0 ? strdup(base) : strdup_printf("%s-%u", base, i);
                if (!dst)
                        return -ENOMEM;
                int r = renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) < 0 ? -errno : 0;
                if (r == -EINVAL || r == -ENOSYS) {
                        /* A filesystem without RENAME_NOREPLACE: check, then rename (we are the
                         * only writer of these directories while etcd is stopped). */
                        struct stat st;
                        if (lstat(dst, &st) == 0)
                                r = -EEXIST;
                        else if (errno != ENOENT)
                                return -errno;
                        else
                                r = rename(src, dst) < 0 ? -errno : 0;
                }
                if (r == 0) {
                        if ((r = fsync_parents(src, dst)) < 0)
                                return r;
                        if (ret_path)
                                *ret_path = TAKE_PTR(dst);
                        return 0;
                }
                if (r != -EEXIST && r != -ENOTEMPTY)
                        return r;
        }
        return -EEXIST;
}

int nodecmd_remove_tree(const char *dir, const char *name)
{
        assert_return(dir && name && *name && !strchr(name, '/') && !streq(name, ".") && !streq(name, ".."),
                      -EINVAL);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        int r = remove_at(dfd, name, 0);
        close(dfd);
        return r;
}
