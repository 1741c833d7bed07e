/* cluster-etcd-operator: one binary, many subcommands. This file only
 * dispatches; each subcommand lives in operator/process/ (the operator) or
 * operator/node/ (the node tools) and owns its flags and --help text.
 *
 * Exit codes (every subcommand): 0 success, 1 runtime failure,
 * 2 usage or input error. */
#include <getopt.h>

#include "base/json.h"
#include "base/log.h"
#include "node/node.h"
#include "process/process.h"

/* clang-format off */
static const Command *const commands[] = {
        &cmd_operator,
        &cmd_render,
        &cmd_installer,
        &cmd_discover_etcd_initial_cluster,
        &cmd_readyz,
        &cmd_rev,
        &cmd_ensure_env,
        &cmd_prune,
        &cmd_install_host_tools,
        &cmd_cluster_backup,
        &cmd_cluster_restore,
        &cmd_bump_revision,
        &cmd_wait_for_stable_etcd,
        &cmd_member_remove,
        &cmd_wait_for_ceo,
        &cmd_prune_backups,
        &cmd_verify,
        &cmd_request_backup,
        &cmd_s3,
};
/* clang-format on */

static void usage(FILE *f)
{
        (void) fprintf(f, "Usage: cluster-etcd-operator [--version] [--help] COMMAND [ARGS...]\n"
                          "\n"
                          "Bootstraps and runs etcd for OpenShift-style control planes.\n"
                          "\n"
                          "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                (void) fprintf(f, "  %-32s %s\n", commands[i]->name, commands[i]->summary);
        (void) fprintf(f, "\n"
                          "Run 'cluster-etcd-operator COMMAND --help' for a command's flags.\n"
                          "Exit codes: 0 success, 1 runtime failure, 2 usage or input error.\n");
}

/* The names the etcd image gives this binary (images/etcd/Containerfile), as
 * OpenShift's etcd image has discover-etcd-initial-cluster: called by one of
 * them, it is that command. */
static const struct {
        const char *name;
        const Command *cmd;
} multicall[] = {
        {"discover-etcd-initial-cluster", &cmd_discover_etcd_initial_cluster},
        {"etcd-bump-revision", &cmd_bump_revision},
};

int main(int argc, char *argv[])
{
        const char *self = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
        self = self ? self + 1 : argc > 0 && argv[0] ? argv[0] : "";
        json_hooks_install(); /* watch events parse into a scratch arena (base/json.h) */
        for (size_t i = 0; i < ELEMENTSOF(multicall); i++)
                if (streq(self, multicall[i].name))
                        return multicall[i].cmd->run(argc, argv);

        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                usage(stdout);
                return EXIT_OK;
        }
        if (streq(argv[1], "--version") || streq(argv[1], "version")) {
                printf("cluster-etcd-operator %s\n", CEO_VERSION);
                return EXIT_OK;
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(argv[1], commands[i]->name))
                        return commands[i]->run(argc - 1, argv + 1);

        (void) fprintf(stderr,
                       "cluster-etcd-operator: unknown command '%s'; see 'cluster-etcd-operator --help'\n",
                       argv[1]);
        return EXIT_USAGE;
}
