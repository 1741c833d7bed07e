/* The etcd client flags the node tools share: --endpoints (repeatable,
 * "a,b" lists), --cacert, --cert and --key (with upstream's --client-*-file
 * aliases where the etcd pod's manifest uses them), their environment
 * defaults where a runbook's shell sets them, one check that names what is
 * missing and loads the TLS files, and their --help lines. A command says
 * which of these it has with NODECMD_ETCD_* bits; the bits decide what its
 * flags accept, which variables it reads, and what its --help says, so the
 * commands cannot drift apart. Everything here logs its errors itself (it
 * is command code): callers only turn a result into an exit code. */
#pragma once

#include <getopt.h>
#include <stdio.h>

#include "base/strlist.h"
#include "loop/loop.h"

typedef enum NodeCmdEtcdFeature {
        /* --endpoints URL,URL: may repeat; the lists are joined. */
        NODECMD_ETCD_ENDPOINTS = 1 << 0,
        /* The command asks the first URL only (the local member), and a later
         * --endpoints replaces an earlier one, as $ETCDCTL_ENDPOINTS would. */
        NODECMD_ETCD_FIRST_ENDPOINT = 1 << 1,
        /* --client-cacert-file, --client-cert-file, --client-key-file: upstream's
         * names for --cacert, --cert, --key (the etcd pod's manifest uses them). */
        NODECMD_ETCD_TLS_ALIASES = 1 << 2,
        /* A flag not given defaults to $ETCDCTL_ENDPOINTS, $ETCDCTL_CACERT,
         * $ETCDCTL_CERT, $ETCDCTL_KEY (what etcdctl_env in etcd-common-tools sets). */
        NODECMD_ETCD_ENV = 1 << 3,
        /* With NODECMD_ETCD_ENV: no --endpoints means etcd.env's $ALL_ETCD_ENDPOINTS
         * and then $ETCDCTL_ENDPOINTS, merged without repeats. */
        NODECMD_ETCD_ENV_ALL_ENDPOINTS = 1 << 4,
} NodeCmdEtcdFeature;

/* getopt_long() codes of these flags. Commands number their own from 0x100
 * (and use single characters), far below these. */
enum {
        NODECMD_ETCD_ARG_ENDPOINTS = 0x10000,
        NODECMD_ETCD_ARG_CACERT,
        NODECMD_ETCD_ARG_CERT,
        NODECMD_ETCD_ARG_KEY,
};

/* The `struct option` entries for a command's table: the ones its bits name
 * (ENDPOINTS for NODECMD_ETCD_ENDPOINTS, TLS always, TLS_ALIASES for
 * NODECMD_ETCD_TLS_ALIASES), before the table's terminating {}. */
/* clang-format off */
#define NODECMD_ETCD_OPTIONS_ENDPOINTS \
        {"endpoints", required_argument, NULL, NODECMD_ETCD_ARG_ENDPOINTS}
#define NODECMD_ETCD_OPTIONS_TLS \
        {"cacert", required_argument, NULL, NODECMD_ETCD_ARG_CACERT}, \
        {"cert", required_argument, NULL, NODECMD_ETCD_ARG_CERT}, \
        {"key", required_argument, NULL, NODECMD_ETCD_ARG_KEY}
#define NODECMD_ETCD_OPTIONS_TLS_ALIASES \
        {"client-cacert-file", required_argument, NULL, NODECMD_ETCD_ARG_CACERT}, \
        {"client-cert-file", required_argument, NULL, NODECMD_ETCD_ARG_CERT}, \
        {"client-key-file", required_argument, NULL, NODECMD_ETCD_ARG_KEY}
/* clang-format on */

typedef struct NodeCmdEtcdFlags {
        /* Set by the command before parsing. */
        const char *command; /* names it in the error lines */
        unsigned features;   /* NODECMD_ETCD_* */
        const char *hint;    /* optional: how the command is usually run, added to the error lines */
        /* From the flags, then (by the check) from the environment. Borrowed from argv and environ. */
        const char *cacert, *cert, *key;
        StrList endpoints;
        bool endpoints_given;
        int error; /* the first failure while parsing (-ENOMEM) */
        /* Loaded by the check; owned. */
        HttpTls tls;
} NodeCmdEtcdFlags;

/* For a getopt loop's default: branch: true when `c` was one of these
 * flags and is taken (an allocation failure is kept for the check); false
 * when it is none of this command's. */
bool nodecmd_etcd_flags_take(NodeCmdEtcdFlags *f, int c, const char *arg);

/* After parsing: applies the environment defaults the bits name, then
 * logs one line naming every missing flag (and its variable) and returns
 * -EINVAL, or loads the three TLS files into f->tls, logging and returning
 * the error of one that cannot be read. An empty value counts as missing.
 * -ENOMEM when out of memory (also from parsing). */
int nodecmd_etcd_flags_check(NodeCmdEtcdFlags *f);

/* The exit code of a failed check: EXIT_USAGE for a missing flag,
 * EXIT_RUNTIME out of memory, and `unreadable` for a TLS file that cannot
 * be read (which each command has always answered in its own way). */
int nodecmd_etcd_flags_exit(int r, int unreadable);

/* The --help lines of the flags the bits name, descriptions from `column`
 * (as the command's other lines have theirs), wrapped before 80 columns. */
void nodecmd_etcd_flags_help(FILE *out, unsigned features, int column);

void nodecmd_etcd_flags_done(NodeCmdEtcdFlags *f);
