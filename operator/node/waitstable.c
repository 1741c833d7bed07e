/* `cluster-etcd-operator wait-for-stable-etcd` and `wait-for-ceo`.
 *
 * wait-for-stable-etcd: the runbooks' "wait until
 * etcd is whole again", for after a restore (upstream's docs use `oc adm
 * wait-for-stable-cluster`). A restored cluster's API answers with the
 * status of the backup's time, which says everything was fine, so no single
 * condition can be trusted alone. This waits until, continuously for
 * --stable:
 *   - the latest revision carries the current spec.forceRedeploymentReason
 *     (revision-status-<latest>), so it was made after the runbook's patch;
 *   - every master node (and arbiter node) is in status.nodeStatuses at that revision;
 *   - EtcdMembersAvailable is True with "<masters> members are available";
 *   - clusteroperator/etcd is Available=True, Progressing=False.
 * It says what it waits for every 10 s, and exits 1 at --timeout. */
#include <getopt.h>
#include <inttypes.h>
#include <unistd.h>

#include "base/json.h"
#include "base/log.h"
#include "kube-sync.h"
#include "node-util.h"
#include "node.h"

#define LOCALHOST_KUBECONFIG                                                                  \
        "/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/" \
        "localhost.kubeconfig"

typedef struct Flags {
        const char *kubeconfig;
        usec_t timeout, stable, interval; /* timeout 0: wait for ever */
        /* 0 when done now, > 0 with what is missing in `why`, < 0 on errors. */
        int (*check)(KubeSync *ks, char *why, size_t size);
        const char *what; /* "etcd is stable", "the bootstrap is done" */
} Flags;

static const char *condition(const cJSON *obj, const char *type, const char **ret_message)
{
        const cJSON *e;
        JSON_ARRAY_FOREACH (e, json_get_array(obj, "status.conditions"))
                if (streq_ptr(json_get_string(e, "type"), type)) {
                        if (ret_message)
                                *ret_message = strempty(json_get_string(e, "message"));
                        return strempty(json_get_string(e, "status"));
                }
        if (ret_message)
                *ret_message = "";
        return "absent";
}

/* 0 when stable now; else > 0 with what is missing in `why`; < 0 on API errors. */
static int check_stable(KubeSync *ks, char *why, size_t size)
{
        _cleanup_(cJSON_Deletep) cJSON *cr = NULL, *nodes = NULL, *arbiters = NULL, *co = NULL, *rs = NULL;
        const char *msg = NULL;
        int r;

        if ((r = kube_sync_get(ks, "/apis/operator.openshift.io/v1/etcds/cluster", 10 * USEC_PER_SEC, &cr)) <
                    0 ||
            (r = kube_sync_get(ks, "/api/v1/nodes?labelSelector=node-role.kubernetes.io%2Fmaster",
                               10 * USEC_PER_SEC, &nodes)) < 0 ||
            /* An arbiter node runs a member too (controlPlaneTopology HighlyAvailableArbiter);
             * no other topology has nodes of that role. */
            (r = kube_sync_get(ks, "/api/v1/nodes?labelSelector=node-role.kubernetes.io%2Farbiter",
                               10 * USEC_PER_SEC, &arbiters)) < 0 ||
            (r = kube_sync_get(ks, "/apis/config.openshift.io/v1/clusteroperators/etcd", 10 * USEC_PER_SEC,
                               &co)) < 0) {
                (void) snprintf(why, size, "the API: %s", kube_strerror(r));
                return 1;
        }
        const cJSON *latest_j =
                cJSON_GetObjectItemCaseSensitive(json_get_object(cr, "status"), "latestAvailableRevision");
        long long latest = cJSON_IsNumber(latest_j) ? (long long) latest_j->valuedouble : 0;
        if (latest <= 0) {
                (void) snprintf(why, size, "a latestAvailableRevision");
                return 1;
        }
        const char *reason = strempty(json_get_string(cr, "spec.forceRedeploymentReason"));
        if (*reason) {
                _cleanup_free_ char *path = strdup_printf(
                        "/api/v1/namespaces/openshift-etcd/configmaps/revision-status-%lld", latest);
                if (!path)
                        return -ENOMEM;
                r = kube_sync_get(ks, path, 10 * USEC_PER_SEC, &rs);
                const char *have =
                        r >= 0 ? strempty(json_get_string(rs, "data.forceRedeploymentReason")) : "";
                if (!streq(have, reason)) {
                        (void) snprintf(why, size,
                                        "a revision for forceRedeploymentReason \"%s\" (revision %lld has "
                                        "\"%s\")",
                                        reason, latest, have);
                        return 1;
                }
        }
        size_t masters = 0;
        const cJSON *n, *ns;
        cJSON *items = json_get_array(nodes, "items"), *more = json_get_array(arbiters, "items");
        /* The arbiters after the masters, each node once (one may carry both labels). */
        while (more && cJSON_GetArraySize(more) > 0) {
                cJSON *a = cJSON_DetachItemFromArray(more, 0);
                bool dup = false;
                JSON_ARRAY_FOREACH (n, items)
                        dup = dup || streq_ptr(json_get_string(n, "metadata.name"),
                                               json_get_string(a, "metadata.name"));
                if (dup || !items)
                        cJSON_Delete(a);
                else
                        cJSON_AddItemToArray(items, a);
        }
        JSON_ARRAY_FOREACH (n, items) {
                const char *name = strempty(json_get_string(n, "metadata.name"));
                bool at = false;
                masters++;
                JSON_ARRAY_FOREACH (ns, json_get_array(cr, "status.nodeStatuses")) {
                        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(ns, "currentRevision");
                        if (streq_ptr(json_get_string(ns, "nodeName"), name) && cJSON_IsNumber(cur) &&
                            (long long) cur->valuedouble == latest)
                                at = true;
                }
                if (!at) {
                        (void) snprintf(why, size, "node %s at revision %lld", name, latest);
                        return 1;
                }
        }
        char want[64];
        (void) snprintf(want, sizeof want, "%zu members are available", masters);
        if (!streq(condition(cr, "EtcdMembersAvailable", &msg), "True") || !startswith(msg, want)) {
                (void) snprintf(why, size, "%s (EtcdMembersAvailable says \"%s\")", want, msg);
                return 1;
        }
        if (!streq(condition(co, "Available", NULL), "True") ||
            !streq(condition(co, "Progressing", &msg), "False")) {
                (void) snprintf(why, size, "clusteroperator/etcd Available=True Progressing=False (%s)",
                                msg);
                return 1;
        }
        (void) snprintf(why, size, "revision %lld on %zu masters, %s", latest, masters, want);
        return 0;
}

/* wait-for-ceo: done once the bootstrap member is removed (EtcdBootstrapMemberRemoved=True),
 * or at once when etcds/cluster is Unmanaged, as upstream's. */
static int check_ceo(KubeSync *ks, char *why, size_t size)
{
        _cleanup_(cJSON_Deletep) cJSON *cr = NULL;
        const char *msg = NULL;
        int r = kube_sync_get(ks, "/apis/operator.openshift.io/v1/etcds/cluster", 10 * USEC_PER_SEC, &cr);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) snprintf(why, size, "etcds/cluster (%s)", kube_strerror(r));
                return 1;
        }
        if (streq_ptr(json_get_string(cr, "spec.managementState"), "Unmanaged")) {
                (void) snprintf(why, size, "etcds/cluster is Unmanaged");
                return 0;
        }
        const char *st = condition(cr, "EtcdBootstrapMemberRemoved", &msg);
        if (streq(st, "True")) {
                (void) snprintf(why, size, "EtcdBootstrapMemberRemoved=True: %s", msg);
                return 0;
        }
        (void) snprintf(why, size, "EtcdBootstrapMemberRemoved=True (it is %s: %s)", st, msg);
        return 1;
}

static int wait_run(const Flags *f)
{
        _cleanup_(kube_sync_close) KubeSync ks = {};
        _cleanup_free_ char *err = NULL;
        usec_t start = now_usec(CLOCK_MONOTONIC), stable_since = 0, last_log = 0;
        char why[512], last_why[512] = "";
        int r;

        if ((r = kube_sync_open(&ks, f->kubeconfig, &err)) < 0) {
                log_error("cannot use %s: %s (--kubeconfig)", f->kubeconfig, err ? err : strerror(-r));
                return EXIT_USAGE;
        }
        for (;;) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                r = f->check(&ks, why, sizeof why);
                if (r < 0)
                        return log_error_errno(r, "out of memory"), EXIT_RUNTIME;
                if (r == 0) {
                        if (!stable_since) {
                                stable_since = now;
                                if (f->stable)
                                        log_info("stable: %s; checking it holds for %" PRIu64 " s", why,
                                                 f->stable / USEC_PER_SEC);
                        }
                        if (now - stable_since >= f->stable) {
                                log_info("%s: %s (after %" PRIu64 " s)", f->what, why,
                                         (now - start) / USEC_PER_SEC);
                                return EXIT_OK;
                        }
                } else {
                        if (stable_since && f->stable)
                                log_info("not stable any more");
                        stable_since = 0;
                        if (!streq(why, last_why) || now - last_log >= 10 * USEC_PER_SEC) {
                                log_info("waiting for %s (%" PRIu64 " s)", why,
                                         (now - start) / USEC_PER_SEC);
                                last_log = now;
                                (void) snprintf(last_why, sizeof last_why, "%s", why);
                        }
                }
                if (f->timeout && now - start >= f->timeout) {
                        log_error("gave up after %" PRIu64 " s: still waiting for %s",
                                  (now - start) / USEC_PER_SEC, why);
                        return EXIT_RUNTIME;
                }
                (void) usleep((useconds_t) (f->interval / USEC_PER_MSEC * 1000));
        }
}

static void help(FILE *out)
{
        (void) fprintf(out,
                       "Usage: cluster-etcd-operator wait-for-stable-etcd [FLAGS]\n"
                       "\n"
                       "Waits until, for --stable without a break: the latest revision carries the\n"
                       "current spec.forceRedeploymentReason, every master node runs it, every master\n"
                       "is an available etcd member, and clusteroperator/etcd is Available and not\n"
                       "Progressing. For the end of a restore, whose API first shows the backup's status.\n"
                       "\n"
                       "  --kubeconfig FILE   (default: the node's localhost.kubeconfig, else $KUBECONFIG)\n"
                       "  --timeout D         give up after this (default: 20m)\n"
                       "  --stable D          how long it must hold (default: 30s)\n"
                       "  -v=N                log verbosity\n"
                       "\n"
                       "Exit codes: 0 stable, 1 not stable in time, 2 usage error.\n");
}

/* The flags both commands take (--stable only with `stable_flag`): -1 to go on,
 * else the exit code. */
static int parse_flags(int argc, char *argv[], const char *name, bool stable_flag, void (*help_fn)(FILE *),
                       Flags *f)
{
        enum { ARG_KUBECONFIG = 0x100, ARG_TIMEOUT, ARG_STABLE };
        static const struct option options[] = {
                {"kubeconfig", required_argument, NULL, ARG_KUBECONFIG},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"stable", required_argument, NULL, ARG_STABLE},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                if (c == ARG_STABLE && !stable_flag) {
                        log_error("%s has no --stable; see --help", name);
                        return EXIT_USAGE;
                }
                switch (c) {
                case 'h':
                        help_fn(stdout);
                        return EXIT_OK;
                case ARG_KUBECONFIG:
                        f->kubeconfig = optarg;
                        break;
                case ARG_TIMEOUT:
                case ARG_STABLE: {
                        usec_t *v = c == ARG_TIMEOUT ? &f->timeout : &f->stable;
                        if (parse_duration(optarg, v) < 0) {
                                log_error("--%s: \"%s\" is not a duration (e.g. 20m, 30s)",
                                          c == ARG_TIMEOUT ? "timeout" : "stable", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                }
                default:
                        nodecmd_flag_error(name, c, argv);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                log_error("%s takes no arguments; see --help", name);
                return EXIT_USAGE;
        }
        return -1;
}

static int wait_main(int argc, char *argv[])
{
        Flags f = {.timeout = 20 * 60 * USEC_PER_SEC,
                   .stable = 30 * USEC_PER_SEC,
                   .interval = 2 * USEC_PER_SEC,
                   .check = check_stable,
                   .what = "etcd is stable"};
        int r = parse_flags(argc, argv, "wait-for-stable-etcd", true, help, &f);
        if (r >= 0)
                return r;
        if (!f.kubeconfig) {
                /* On a master, the node's own kubeconfig first: what the runbooks use. */
                const char *e = getenv("KUBECONFIG");
                f.kubeconfig =
                        access(LOCALHOST_KUBECONFIG, R_OK) == 0 || !e || !*e ? LOCALHOST_KUBECONFIG : e;
        }
        return wait_run(&f);
}

const Command cmd_wait_for_stable_etcd = {
        .name = "wait-for-stable-etcd",
        .summary = "wait until etcd runs the latest revision on every master with every member (after a "
                   "restore)",
        .run = wait_main,
};

static void help_ceo(FILE *out)
{
        (void) fprintf(out,
                       "Usage: cluster-etcd-operator wait-for-ceo --kubeconfig FILE [--timeout D]\n"
                       "\n"
                       "What the installer's bootkube.sh runs before it calls the bootstrap host done:\n"
                       "waits until etcds/cluster says EtcdBootstrapMemberRemoved=True (the bootstrap\n"
                       "member is out of the cluster, so the host can go), or is Unmanaged. It says\n"
                       "every 10 s what it waits for.\n"
                       "\n"
                       "  --kubeconfig FILE   (default: $KUBECONFIG)\n"
                       "  --timeout D         give up after this (default: never, as upstream)\n"
                       "  -v=N                log verbosity\n"
                       "\n"
                       "Exit codes: 0 done, 1 not done in time, 2 usage error.\n");
}

static int ceo_main(int argc, char *argv[])
{
        Flags f = {.interval = 2 * USEC_PER_SEC, .check = check_ceo, .what = "the bootstrap is done"};
        int r = parse_flags(argc, argv, "wait-for-ceo", false, help_ceo, &f);
        if (r >= 0)
                return r;
        if (!f.kubeconfig && !(f.kubeconfig = getenv("KUBECONFIG"))) {
                log_error("no kubeconfig: pass --kubeconfig (bootkube.sh passes the installer's admin "
                          "kubeconfig)");
                return EXIT_USAGE;
        }
        return wait_run(&f);
}

const Command cmd_wait_for_ceo = {
        .name = "wait-for-ceo",
        .summary = "wait until the operator has removed the bootstrap member (the installer's bootkube.sh)",
        .run = ceo_main,
};
