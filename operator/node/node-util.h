/* Helpers shared by the commands that run on a master node (installer,
 * discover-etcd-initial-cluster, readyz, rev, ensure-env): validation of
 * ConfigMap keys (names that become a path component are base/names.h's
 * DNS-1123 subdomains), the installer's REVISION /
 * NODE_NAME / NODE_ENVVAR_NAME substitution, comma-separated flag lists,
 * the ensure-env checks and the TLS files of the etcd-facing commands.
 * The name, list, substitution and environment helpers are pure and
 * unit-tested; the rest does small local I/O (files, directories, signals). */
#pragma once

#include <sys/types.h>

#include "etcd/types.h"
#include "loop/loop.h"

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

/* A list of strings built from flags that may repeat and hold "a,b,c". */
typedef struct NodeCmdStrv {
        char **v;
        size_t n;
} NodeCmdStrv;

/* Appends the comma-separated items (trimmed; empty items skipped). */
int nodecmd_strv_add_csv(NodeCmdStrv *l, const char *csv);
bool nodecmd_strv_contains(const NodeCmdStrv *l, const char *s);
void nodecmd_strv_done(NodeCmdStrv *l);

/* "https://HOST:PORT", bracketing a bare IPv6 literal. NULL on OOM. */
char *nodecmd_peer_url(const char *host, unsigned port);

/* ensure-env: the NODE_<n>_IP, NODE_<n>_ETCD_URL_HOST and NODE_<n>_ETCD_NAME
 * variables of `node_name` are set and non-empty, _IP is `pod_ip` and
 * _ETCD_URL_HOST is that IP (IPv6 in brackets). -EINVAL with one line in
 * *ret_error naming the variable and the fix; -ENOMEM. */
typedef const char *(*NodeCmdEnvLookup)(const char *name, void *userdata);
int nodecmd_ensure_env_check(const char *node_name, const char *pod_ip, NodeCmdEnvLookup lookup,
                             void *userdata, char **ret_error);

/* Reads the PEM files of an etcd client (each <= 1 MiB). On failure
 * *ret_error names the file and the reason. */
int nodecmd_tls_load(const char *cacert, const char *cert, const char *key, HttpTls *ret, char **ret_error);
void nodecmd_tls_done(HttpTls *t);

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

/* mkdir -p with `mode` for every missing component (existing ones are left
 * as they are, each new one fsynced into its parent); -ENOTDIR when a
 * component is not a directory. */
int nodecmd_mkdir_p(const char *path, mode_t mode);

/* Moves `src` to `base`, or to base-1, base-2, ... base-99 when that is taken, never
 * replacing anything (renameat2 RENAME_NOREPLACE; a check first where the filesystem
 * lacks it), then fsyncs both directories. *ret_path (may be NULL): where it went.
 * -EEXIST when all hundred are taken. */
int nodecmd_move_aside(const char *src, const char *base, char **ret_path);
/* Removes DIR/NAME and everything under it, never following a symlink (a
 * link is removed, not what it points to); NAME is one path component.
 * 0 also when it is gone already. */
int nodecmd_remove_tree(const char *dir, const char *name);

/* SIGTERM and SIGINT end loop_run() with 0 (the sidecars' clean stop). */
int nodecmd_exit_on_signals(Loop *l);

/* One line for getopt_long()'s ':' (missing value) or '?' (unknown flag),
 * with opterr = 0 and an optstring that starts with ':'. */
void nodecmd_flag_error(const char *cmd, int c, char *argv[]);
#define NODECMD_OUTPUT_MAX (1u << 20)
/* Runs argv (argv[0] from PATH) to its end, stdin and stderr inherited;
 * *ret_out gets its stdout when asked for. Returns the exit status (128+N
 * for signal N), or < 0 when it could not run, and -E2BIG (after the child
 * ended) when its stdout was over NODECMD_OUTPUT_MAX: never a cut answer.
 * No timeout: tar and cp take as long as the data is large. */
int nodecmd_run(const char *const argv[], char **ret_out);
