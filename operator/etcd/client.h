/* Asynchronous etcd client over the gRPC-gateway JSON API (libcurl on the
 * loop). Calls either target one endpoint (status, health, defragment, hash,
 * snapshot) or any endpoint with failover in order (membership, alarms, KV),
 * the leader first for membership changes when it is known. Every call
 * carries a Grpc-Timeout header and a client timeout: some calls never time
 * out on the server (member remove without quorum).
 *
 * Failover only where it cannot do harm: a request that was certainly not
 * processed (connection refused, TLS failure, learner, removed member) moves
 * on; a request that may have been processed (timeout, reset) moves on only
 * if it is idempotent. A call that returns 0 invokes its callback exactly
 * once; freeing the client completes pending calls with -ECANCELED. */
#pragma once

#include <arpa/inet.h>

#include "loop/loop.h"
#include "types.h"

typedef struct EtcdClient EtcdClient;

typedef struct EtcdResponse {
        int error;            /* 0, an ETCD_ERR_*, or a transport errno */
        const char *message;  /* etcd's message, if any; for -EHOSTUNREACH the resolver's */
        const char *endpoint; /* the endpoint that answered last */
        long http_status;
        const cJSON *body; /* parsed body on success */
} EtcdResponse;

typedef void (*EtcdCallback)(EtcdClient *c, const EtcdResponse *resp, void *userdata);

enum {
        ETCD_CALL_IDEMPOTENT = 1 << 0,
        ETCD_CALL_LEADER_FIRST = 1 << 1,
};

EtcdClient *etcd_client_new(Loop *loop, const HttpTls *tls);
EtcdClient *etcd_client_free(EtcdClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdClient *, etcd_client_free);

Loop *etcd_client_get_loop(EtcdClient *c);
const HttpTls *etcd_client_get_tls(EtcdClient *c);

/* Replaces the TLS material (certificate rotation, or material that arrived later). */
int etcd_client_set_tls(EtcdClient *c, const HttpTls *tls);

/* The URL of etcd's HTTP services (the JSON gateway, /health, /version) for a
 * client URL or a URL below one: a member laid out as upstream's pod (etcd 3.5,
 * --listen-client-http-urls) serves gRPC alone on the client port 2379 and HTTP
 * on the etcd-http port 2381 beside it, so ":2379" right after the host becomes
 * ":2381"; a URL on any other port is taken to serve both, as etcd does without
 * that flag (tests start members on free ports). A call whose connection to
 * 2381 is refused goes to the client port itself, where a member of the older
 * layout (etcd 3.4, or a pod not rolled yet) serves HTTP. NULL on OOM. */
#define ETCD_CLIENT_PORT 2379
#define ETCD_HTTP_PORT   2381
char *etcd_http_url(const char *url);

/* "https://HOST:PORT" for a member's address (a peer URL with 2380), bracketing
 * a bare IPv6 literal. NULL on OOM or without a host. */
char *etcd_peer_url(const char *host, unsigned port);

/* Client URLs ("https://10.0.0.1:2379"), tried in this order. Calls go to
 * each one's etcd_http_url(). */
int etcd_client_set_endpoints(EtcdClient *c, char *const *endpoints, size_t n);
size_t etcd_client_get_endpoints(EtcdClient *c, char *const **ret);
/* A member reached at an address its serving certificate may not name yet (its
 * master's address changed; the certificate for the new one may not be on the
 * node yet): a request for https://SERVES_ON:PORT connects there and verifies the
 * certificate against NAMED, the address it was issued for. The alias is a second
 * way to the same endpoint, not a replacement: when TLS fails one way (the node's
 * certificates were replaced meanwhile, or not yet), the request goes the other
 * way before any failover, and the way that got through is tried first next time.
 * Addresses as text, IPv6 without brackets. */
typedef struct EtcdAddressAlias {
        char serves_on[INET6_ADDRSTRLEN];
        char named[INET6_ADDRSTRLEN];
} EtcdAddressAlias;

/* Both addresses parse as IP addresses. */
bool etcd_address_alias_is_valid(const EtcdAddressAlias *a);
/* Replaces the aliases; at most 16. */
int etcd_client_set_aliases(EtcdClient *c, const EtcdAddressAlias *a, size_t n);
/* The URL and the libcurl connect-to entry (NULL when none applies) a request
 * for `url` ("https://HOST:PORT/path") goes out with first. */
int etcd_client_route(EtcdClient *c, const char *url, char **ret_url, char **ret_connect_to);

/* The leader's client URL (from status), tried first for membership changes. */
int etcd_client_set_leader(EtcdClient *c, const char *endpoint);
/* Default per-call timeout (10 s). */
void etcd_client_set_timeout(EtcdClient *c, usec_t timeout);

/* The raw call: POST `path` ("/v3/cluster/member/list") with a JSON body.
 * `endpoint` NULL = any endpoint with failover. `timeout` 0 = the default. */
int etcd_call(EtcdClient *c, const char *endpoint, const char *path, const cJSON *body, unsigned flags,
              usec_t timeout, EtcdCallback cb, void *userdata);

int etcd_member_list(EtcdClient *c, EtcdCallback cb, void *userdata);
/* Validates the URL first (ETCD_ERR_BAD_URL, no request sent). */
int etcd_member_add(EtcdClient *c, const char *peer_url, bool learner, EtcdCallback cb, void *userdata);
int etcd_member_promote(EtcdClient *c, uint64_t id, EtcdCallback cb, void *userdata);
int etcd_member_remove(EtcdClient *c, uint64_t id, EtcdCallback cb, void *userdata);
int etcd_member_update(EtcdClient *c, uint64_t id, char *const *peer_urls, size_t n, EtcdCallback cb,
                       void *userdata);
int etcd_status(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata);
/* The same with their own timeout (0 = the client's default). */
int etcd_status_timeout(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb,
                        void *userdata);
int etcd_health_timeout(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb,
                        void *userdata);
/* GET /health: error 0 when healthy, -EAGAIN when the member says false. */
int etcd_health(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata);
/* GET /health?exclude=NOSPACE: whether the member serves quorum reads, a
 * NOSPACE alarm aside (the alarm list says whether one is raised). etcd
 * honours the parameter since 3.4.17; older members say false. */
int etcd_health_reads(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata);
int etcd_alarm_list(EtcdClient *c, EtcdCallback cb, void *userdata);
int etcd_alarm_disarm(EtcdClient *c, uint64_t member_id, const char *alarm, EtcdCallback cb, void *userdata);
/* Defragmentation blocks the member; give it a long timeout (0 = 2 min). */
/* etcd's downgrade (3.5 and later; `etcdctl downgrade`): action "VALIDATE", "ENABLE" or
 * "CANCEL", to `version` ("3.5"; CANCEL takes none). Idempotent: enabling the enabled
 * target or cancelling twice has the same end. */
int etcd_downgrade(EtcdClient *c, const char *action, const char *version, EtcdCallback cb, void *userdata);
int etcd_defragment(EtcdClient *c, const char *endpoint, usec_t timeout, EtcdCallback cb, void *userdata);
int etcd_hash(EtcdClient *c, const char *endpoint, EtcdCallback cb, void *userdata);
/* Hands leadership to voter `target`; only the leader (`leader_endpoint`) takes it
 * (ETCD_ERR_NOT_LEADER otherwise). Not retried elsewhere. */
int etcd_move_leader(EtcdClient *c, const char *leader_endpoint, uint64_t target, EtcdCallback cb,
                     void *userdata);
int etcd_kv_put(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                EtcdCallback cb, void *userdata);
/* `range_end` NULL = the single key; serializable reads are local (no quorum). */
int etcd_kv_range(EtcdClient *c, const char *endpoint, const void *key, size_t key_len,
                  const void *range_end, size_t range_end_len, bool serializable, EtcdCallback cb,
                  void *userdata);
int etcd_kv_compact(EtcdClient *c, uint64_t revision, bool physical, EtcdCallback cb, void *userdata);
/* Put `value` at `key` only if the key does not exist yet (create_revision 0);
 * the response's `succeeded` says whether it did. Not retried: not idempotent. */
int etcd_kv_create(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                   EtcdCallback cb, void *userdata);
