/* The node commands' own helpers: ConfigMap keys and revisions, the
 * installer's substitution, the ensure-env checks, the installer's quorum
 * guard and getopt's error line (node-util.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/names.h"
#include "controllers/facts.h"
#include "dns/hostnames.h"
#include "etcd/quorum.h"
#include "node-util.h"

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

Loop *nodecmd_loop_new(void)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        int r;

        if (!l)
                return NULL;
        r = dns_hostnames_attach(l, NULL, NULL);
        if (r == -ENOMEM)
                return NULL;
        if (r < 0) {
                log_error_errno(r, "cannot start the resolver of host names (/etc/resolv.conf)");
                return NULL;
        }
        return TAKE_PTR(l);
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

void nodecmd_flag_error(const char *cmd, int c, char *argv[])
{
        const char *arg = optind > 0 ? argv[optind - 1] : "?";
        if (c == ':')
                log_error("%s: %s needs a value; see --help", cmd, arg);
        else
                log_error("%s: unknown flag %s; see --help", cmd, arg);
}
