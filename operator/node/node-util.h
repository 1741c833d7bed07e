/* Helpers shared by the commands that run on a master node (installer,
 * discover-etcd-initial-cluster, readyz, rev, ensure-env, prune) that are
 * about those commands: validation of ConfigMap keys (names that become a
 * path component are base/names.h's DNS-1123 subdomains), the installer's
 * REVISION / NODE_NAME / NODE_ENVVAR_NAME substitution, the ensure-env
 * checks, the installer's quorum guard and getopt's error line. All pure
 * and unit-tested. What is generic local I/O (directories, processes, TLS
 * files) is operator/host's; lists of flag values are base/strlist.h's. */
#pragma once

#include "loop/loop.h"

#include "etcd/types.h"

/* ConfigMap and Secret keys as the API validates them: [-._a-zA-Z0-9]+,
 * <= 253, and neither "." nor ".." nor starting with "..". */
bool nodecmd_key_is_valid(const char *s);

/* A revision: decimal, 0 < N <= 2^31-1, no sign, no leading zero. */
int nodecmd_parse_revision(const char *s, unsigned *ret);
/* The node name with '-' and '.' turned into '_' ("master-0.a" -> "master_0_a").
 * NULL on OOM. */
char *nodecmd_envvar_name(const char *node_name);
/* Replaces every literal REVISION, NODE_ENVVAR_NAME and NODE_NAME in one pass
 * (replacements are never rescanned). The result is NUL-terminated. */
int nodecmd_substitute(const char *in, size_t len, const char *revision, const char *node_name, char **ret,
                       size_t *ret_len);

/* ensure-env: the NODE_<n>_IP, NODE_<n>_ETCD_URL_HOST and NODE_<n>_ETCD_NAME
 * variables of `node_name` are set and non-empty, _IP is `pod_ip` and
 * _ETCD_URL_HOST is that IP (IPv6 in brackets). -EINVAL with one line in
 * *ret_error naming the variable and the fix; -ENOMEM. */
typedef const char *(*NodeCmdEnvLookup)(const char *name, void *userdata);
int nodecmd_ensure_env_check(const char *node_name, const char *pod_ip, NodeCmdEnvLookup lookup,
                             void *userdata, char **ret_error);

/* A loop whose requests resolve host names through c-ares, with /etc/hosts and
 * localhost (dns/hostnames.h). NULL on failure, which it logs unless it is
 * out of memory. */
Loop *nodecmd_loop_new(void);

/* The installer's quorum guard: whether restarting the etcd member named
 * `self` now keeps quorum. health[i] is 0 when member i answered /health
 * with true. Voters are the members that are no learners (an unstarted
 * voter counts, as down); the voters other than `self` that are healthy
 * must reach a majority of all voters. A restart costs nothing when `self`
 * is no member, a learner, or does not answer at all (health[] a transport
 * error); one that answers unhealthy (ETCD_ERR_UNHEALTHY, as every member
 * does during an election) is running and counts as taken down. *ret_up, *ret_voters and
 * *ret_quorum (optional) say what was counted; *ret_self is `self` as a
 * voter that restarting takes down (NULL when the restart costs nothing). */
bool nodecmd_restart_keeps_quorum(const EtcdMemberList *l, const int *health, const char *self,
                                  size_t *ret_up, size_t *ret_voters, size_t *ret_quorum,
                                  const EtcdMember **ret_self);

/* One line for getopt_long()'s ':' (missing value) or '?' (unknown flag),
 * with opterr = 0 and an optstring that starts with ':'. */
void nodecmd_flag_error(const char *cmd, int c, char *argv[]);
