#include "kube-sync.h"

#include "base/log.h"
#include "kube/config.h"

int kube_sync_open(KubeSync *s, const char *kubeconfig, char **ret_error)
{
        KubeConfig *cfg = NULL;
        int r;

        assert_return(s && kubeconfig, -EINVAL);
        *s = (KubeSync){};
        if ((r = kube_config_load(kubeconfig, NULL, &cfg, ret_error)) < 0)
                return r;
        s->loop = loop_new();
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
