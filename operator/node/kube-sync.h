/* One blocking API request for the short-lived commands that run on a node
 * (cluster-backup's Progressing check, wait-for-stable-etcd): the loop runs
 * until the answer or the timeout. */
#pragma once
#include <cjson/cJSON.h>

#include "base/timeutil.h"
#include "kube/client.h"
#include "loop/loop.h"

typedef struct KubeSync {
        Loop *loop;
        KubeClient *client;
} KubeSync;

/* From a kubeconfig file (NULL: $KUBECONFIG, else in-cluster); *ret_error says why not. */
int kube_sync_open(KubeSync *s, const char *kubeconfig, char **ret_error);
void kube_sync_close(KubeSync *s);
/* GET path: 0 with the body, or < 0 (-ENOENT for 404, -ETIMEDOUT, ...). */
int kube_sync_get(KubeSync *s, const char *path, usec_t timeout, cJSON **ret);
/* POST: 0, or < 0 (-EEXIST for AlreadyExists, ...) with the server's message in *ret_message
 * (optional; NULL when it sent none; free it). */
int kube_sync_create(KubeSync *s, const KubeResource *res, const char *ns, const cJSON *obj, usec_t timeout,
                     char **ret_message);
