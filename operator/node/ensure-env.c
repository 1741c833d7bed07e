/* `cluster-etcd-operator ensure-env`: the etcd pod's init check. The pod spec
 * carries one set of variables per master (NODE_<n>_IP, _ETCD_URL_HOST,
 * _ETCD_NAME); this makes sure the set of the node it landed on exists and
 * agrees with the pod's IP before etcd advertises that address to its peers.
 * Exit 1 names the missing or mismatched variable. */
#include <getopt.h>

#include "base/log.h"
#include "node-util.h"
#include "node.h"

static const char *env_lookup(const char *name, void *userdata)
{
        (void) userdata;
        return getenv(name);
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator ensure-env [FLAGS]\n"
                "\n"
                "Checks that NODE_<n>_IP, NODE_<n>_ETCD_URL_HOST and NODE_<n>_ETCD_NAME are set for\n"
                "this node (n = node name with '-' and '.' as '_'), that NODE_<n>_IP is the pod IP\n"
                "and that NODE_<n>_ETCD_URL_HOST is that IP (IPv6 in brackets).\n"
                "\n"
                "  --node-name NAME   this node (default: $NODE_NAME)\n"
                "  --pod-ip IP        the pod's IP (default: $POD_IP; alias --node-ip)\n"
                "  -v=N               log verbosity\n"
                "  -h, --help         this text\n"
                "\n"
                "Exit codes: 0 environment is right, 1 a variable is missing or wrong, 2 usage error.\n");
}

static int ensure_env_main(int argc, char *argv[])
{
        enum { ARG_NODE = 0x100, ARG_IP };
        static const struct option options[] = {
                {"node-name", required_argument, NULL, ARG_NODE},
                {"pod-ip", required_argument, NULL, ARG_IP},
                {"node-ip", required_argument, NULL, ARG_IP},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *node = getenv("NODE_NAME"), *ip = getenv("POD_IP");
        _cleanup_free_ char *err = NULL;
        int c, r;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_NODE:
                        node = optarg;
                        break;
                case ARG_IP:
                        ip = optarg;
                        break;
                default:
                        nodecmd_flag_error("ensure-env", c, argv);
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("ensure-env: unexpected argument \"%s\"; see --help", argv[optind]);
                return EXIT_USAGE;
        }
        if (!node || !*node) {
                log_error("ensure-env: no node name: pass --node-name or set NODE_NAME (fieldRef "
                          "spec.nodeName)");
                return EXIT_USAGE;
        }
        if (!ip || !*ip) {
                log_error("ensure-env: no pod IP: pass --pod-ip or set POD_IP (fieldRef status.podIP)");
                return EXIT_USAGE;
        }
        r = nodecmd_ensure_env_check(node, ip, env_lookup, NULL, &err);
        if (r == -ENOMEM)
                return log_error_errno(r, "out of memory"), EXIT_RUNTIME;
        if (r < 0) {
                log_error("ensure-env: %s", err);
                return EXIT_RUNTIME;
        }
        log_info("ensure-env: node %s has its etcd variables and they match the pod IP %s", node, ip);
        return EXIT_OK;
}

const Command cmd_ensure_env = {
        .name = "ensure-env",
        .summary = "check this node's NODE_<n>_* variables against the pod IP (etcd pod init)",
        .run = ensure_env_main,
};
