#include "kube-sync.h"

#include "base/log.h"
#include "kube/config.h"
#include "node-util.h"

int kube_sync_open(KubeSync *s, const char *kubeconfig, char **ret_error)
{
        KubeConfig *cfg = NULL;
        int r;

        assert_return(s, -EINVAL);
        *s = (KubeSync){};
        if ((r = kube_config_load(kubeconfig, NULL, &cfg, ret_error)) < 0)
                return r;
        s->loop = nodecmd_loop_new();
        s->client = s->loop ? kube_client_new(s->loop, cfg) : NULL;
        if (!s->client) {
                kube_config_free(cfg);
                kube_sync_close(s);
                return -ENOMEM;
        }
        return 0;
}

void kube_sync_close(KubeSync *s)
{
        s->client = kube_client_free(s->client);
        s->loop = loop_unref(s->loop);
}

typedef struct Get {
        bool done;
        int error;
        cJSON *body;
        char *message; /* the server's Status message on failure */
} Get;

static void on_get(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Get *g = userdata;
        (void) c;
        g->done = true;
        g->error = resp->error;
        if (resp->error >= 0 && !(g->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL))
                g->error = resp->body ? -ENOMEM : -EBADMSG;
}

static void on_created(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Get *g = userdata;
        (void) c;
        if (resp->error == -ECANCELED)
                return; /* closing after a timeout: `g` is gone */
        g->done = true;
        g->error = resp->error;
        if (resp->status && resp->status->message)
                g->message = strdup(resp->status->message);
}

int kube_sync_get(KubeSync *s, const char *path, usec_t timeout, cJSON **ret)
{
        Get g = {};
        KubeCall *call = NULL;
        int r;

        assert_return(s && s->client && path && ret, -EINVAL);
        kube_client_set_timeout(s->client, timeout);
        if ((r = kube_call(s->client, "GET", path, NULL, NULL, on_get, &g, &call)) < 0)
                return r;
        r = loop_run_until(s->loop, &g.done, timeout + USEC_PER_SEC);
        if (!g.done) {
                kube_call_cancel(call);
                return r < 0 ? r : -ETIMEDOUT;
        }
        if (g.error < 0)
                return g.error;
        *ret = g.body;
        return 0;
}

int kube_sync_create(KubeSync *s, const KubeResource *res, const char *ns, const cJSON *obj, usec_t timeout,
                     char **ret_message)
{
        Get g = {};
        int r;

        assert_return(s && s->client && res && obj, -EINVAL);
        kube_client_set_timeout(s->client, timeout);
        if ((r = kube_create(s->client, res, ns, obj, on_created, &g)) < 0)
                return r;
        r = loop_run_until(s->loop, &g.done, timeout + USEC_PER_SEC);
        if (!g.done)
                return r < 0 ? r : -ETIMEDOUT; /* completes, cancelled, when the client is closed */
        if (ret_message)
                *ret_message = g.message;
        else
                free(g.message);
        cJSON_Delete(g.body);
        return g.error;
}
