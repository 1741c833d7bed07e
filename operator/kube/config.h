/* Where the Kubernetes API is and how to authenticate: kubeconfig files
 * (--kubeconfig, $KUBECONFIG with ':'-separated files, ~/.kube/config) or the
 * in-cluster service account. Every malformed field is reported as one line
 * naming the file, the field and the fix. */
#pragma once

#include "base/timeutil.h"
#include "loop/loop.h"

typedef struct KubeConfig {
        char *server; /* https://host:port, no trailing slash */
        HttpTls tls;  /* CA, client cert and key as PEM */
        char *token;  /* static bearer token, or the last one read from token_file */
        char *token_file;
        usec_t token_read_at; /* CLOCK_MONOTONIC of the last token_file read */
        char *namespace;
        char *source; /* the file it came from, or "in-cluster" */
} KubeConfig;

KubeConfig *kube_config_free(KubeConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeConfig *, kube_config_free);

/* `paths` is a ':'-separated list (first file wins per entry, as kubectl does);
 * `context` overrides current-context when set. */
int kube_config_from_files(const char *paths, const char *context, KubeConfig **ret, char **ret_error);
/* `root` prefixes the service-account paths (tests); NULL means "/". */
int kube_config_in_cluster(const char *root, KubeConfig **ret, char **ret_error);
/* --kubeconfig, then $KUBECONFIG, then in-cluster when KUBERNETES_SERVICE_HOST
 * is set, then ~/.kube/config. */
int kube_config_load(const char *flag_path, const char *context, KubeConfig **ret, char **ret_error);

/* The bearer token to send now, re-reading token_file once a minute (service
 * account tokens rotate). NULL when there is none. */
const char *kube_config_get_token(KubeConfig *c, usec_t now);
