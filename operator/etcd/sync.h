/* Synchronous etcd calls for the commands that run once on a master
 * (discover-etcd-initial-cluster, member-remove, the installer's quorum
 * guard, cluster-backup, verify, and the peer checks of a restore in
 * operator/dr): start a
 * call with the asynchronous client, run the loop until it answers or the
 * time is up. A call we stop waiting for is abandoned: it completes later
 * (at the latest when the client is freed) and frees itself then. */
#pragma once

#include <cjson/cJSON.h>

#include "client.h"
#include "types.h"

typedef struct EtcdSyncCall {
        bool done, abandoned;
        int error;
        char message[256]; /* etcd's message, if any */
        cJSON *body;       /* the response on success */
} EtcdSyncCall;

EtcdSyncCall *etcd_sync_call_new(void);
void etcd_sync_call_free(EtcdSyncCall *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdSyncCall *, etcd_sync_call_free);
/* The EtcdCallback to start a call with; `userdata` is the EtcdSyncCall. */
void etcd_sync_on_call(EtcdClient *client, const EtcdResponse *resp, void *userdata);
/* Runs `loop` until *c answers or `timeout` passes. Returns the call's error
 * (0 on success, the body in (*c)->body); on timeout the call is abandoned,
 * *c becomes NULL and -ETIMEDOUT is returned. */
int etcd_sync_wait(Loop *loop, EtcdSyncCall **c, usec_t timeout);

/* The same, started and waited for: a member list from `endpoint` (NULL: the
 * first that answers; serializable, as the gateway serves it), a
 * linearizable read of key "health" on `endpoint` (it succeeds only once that
 * member has applied everything committed before it), and a status. */
int etcd_sync_member_list(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdMemberList **ret);
int etcd_sync_quorum_read(EtcdClient *c, const char *endpoint, usec_t timeout);
int etcd_sync_status(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdStatus *ret);
/* A current member list: read from `endpoint` right after a linearizable read
 * there succeeded, so that member has applied every committed membership
 * change (and the cluster has quorum). */
int etcd_sync_current_member_list(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdMemberList **ret);
