/* Synchronous etcd calls: the asynchronous client and the loop run until an
 * answer or a deadline (etcd/sync.h). */
#include "sync.h"

#include "base/macro.h"
#include "loop/loop.h"

EtcdSyncCall *etcd_sync_call_new(void)
{
        return calloc(1, sizeof(EtcdSyncCall));
}

void etcd_sync_call_free(EtcdSyncCall *c)
{
        if (c)
                cJSON_Delete(c->body);
        free(c);
}

void etcd_sync_on_call(EtcdClient *client, const EtcdResponse *resp, void *userdata)
{
        EtcdSyncCall *c = userdata;
        (void) client;
        if (c->abandoned) {
                etcd_sync_call_free(c);
                return;
        }
        c->done = true;
        c->error = resp->error;
        (void) snprintf(c->message, sizeof c->message, "%s", strempty(resp->message));
        if (resp->error >= 0 && resp->body && !(c->body = cJSON_Duplicate(resp->body, true)))
                c->error = -ENOMEM;
}

int etcd_sync_wait(Loop *loop, EtcdSyncCall **c, usec_t timeout)
{
        int r = loop_run_until(loop, &(*c)->done, timeout);
        if (!(*c)->done) {
                (*c)->abandoned = true;
                *c = NULL;
                return r < 0 ? r : -ETIMEDOUT;
        }
        return (*c)->error;
}

/* Starts nothing itself: `r` is what starting the call returned. */
static int finish(EtcdClient *client, int r, EtcdSyncCall **c, usec_t timeout)
{
        if (r < 0)
                return r;
        return etcd_sync_wait(etcd_client_get_loop(client), c, timeout);
}

int etcd_sync_member_list(EtcdClient *client, const char *endpoint, usec_t timeout, EtcdMemberList **ret)
{
        _cleanup_(etcd_sync_call_freep) EtcdSyncCall *c = etcd_sync_call_new();
        int r;
        if (!c)
                return -ENOMEM;
        r = etcd_call(client, endpoint, "/v3/cluster/member/list", NULL, ETCD_CALL_IDEMPOTENT, timeout,
                      etcd_sync_on_call, c);
        r = finish(client, r, &c, timeout + USEC_PER_SEC);
        if (r < 0)
                return r;
        return etcd_parse_member_list(c->body, ret);
}

int etcd_sync_quorum_read(EtcdClient *client, const char *endpoint, usec_t timeout)
{
        _cleanup_(etcd_sync_call_freep) EtcdSyncCall *c = etcd_sync_call_new();
        int r;
        if (!c)
                return -ENOMEM;
        etcd_client_set_timeout(client, timeout);
        r = etcd_kv_range(client, endpoint, "health", 6, NULL, 0, false, etcd_sync_on_call, c);
        return finish(client, r, &c, timeout + USEC_PER_SEC);
}

int etcd_sync_status(EtcdClient *client, const char *endpoint, usec_t timeout, EtcdStatus *ret)
{
        _cleanup_(etcd_sync_call_freep) EtcdSyncCall *c = etcd_sync_call_new();
        int r;
        if (!c)
                return -ENOMEM;
        r = etcd_status_timeout(client, endpoint, timeout, etcd_sync_on_call, c);
        r = finish(client, r, &c, timeout + USEC_PER_SEC);
        if (r < 0)
                return r;
        return etcd_parse_status(c->body, ret);
}

int etcd_sync_current_member_list(EtcdClient *client, const char *endpoint, usec_t timeout,
                                  EtcdMemberList **ret)
{
        int r = etcd_sync_quorum_read(client, endpoint, timeout);
        if (r < 0)
                return r;
        return etcd_sync_member_list(client, endpoint, timeout, ret);
}
