/* The cluster facts (facts.h): one definition of each. */
#include "facts.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/timeutil.h"
#include "base/yaml.h"
#include "pki/pki.h"
#include "render/etcdenv.h"
#include "s3/s3.h"

/* ---- Nodes and pods ---- */

/* The kubelet writes the addresses and nothing validates them as IPs: one that is not is
 * skipped, as it would otherwise land in a probe's host, a URL or a certificate. */
const char *node_internal_ip(const KubeObject *node)
{
        cJSON *a;
        JSON_ARRAY_FOREACH (a, node ? json_get_array(node->json, "status.addresses") : NULL) {
                const char *ip = json_get_string(a, "address");
                unsigned char bin[sizeof(struct in6_addr)];
                if (streq_ptr(json_get_string(a, "type"), "InternalIP") && ip &&
                    (inet_pton(AF_INET, ip, bin) == 1 || inet_pton(AF_INET6, ip, bin) == 1))
                        return ip;
        }
        return NULL;
}

static bool ready_condition_true(const KubeObject *o)
{
        cJSON *c;
        JSON_ARRAY_FOREACH (c, o ? json_get_array(o->json, "status.conditions") : NULL)
                if (streq_ptr(json_get_string(c, "type"), "Ready"))
                        return streq_ptr(json_get_string(c, "status"), "True");
        return false;
}

bool node_is_ready(const KubeObject *node)
{
        return ready_condition_true(node);
}

bool pod_is_ready(const KubeObject *pod)
{
        return ready_condition_true(pod);
}

char *node_envvar_name(const char *node)
{
        char *s = strdup(node);
        for (char *p = s; p && *p; p++)
                if (*p == '-' || *p == '.')
                        *p = '_';
        return s;
}

const KubeObject *etcd_pod_of_node(const SyncContext *ctx, const char *node)
{
        char name[300];
        if (snprintf(name, sizeof name, "etcd-%s", node) >= (int) sizeof name)
                return NULL;
        return op_get(ctx, W_ETCD_PODS, NS_ETCD, name);
}

int64_t node_current_revision(const KubeObject *etcd_cr, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0;
                if (streq_ptr(json_get_string(e, "nodeName"), node) &&
                    json_get_int64(e, "currentRevision", &current) >= 0)
                        return current;
        }
        return 0;
}

/* The local addresses every serving certificate names besides the node's own
 * (render/certs.c): not where anyone else reaches the member. */
static bool ip_is_local_san(const char *ip)
{
        return ip_text_equal(ip, "127.0.0.1") || ip_text_equal(ip, "::1");
}

int node_certified_ip(const KubeObject *all_certs, const KubeObject *node, char *buf, size_t n)
{
        const char *now = node_internal_ip(node);
        _cleanup_free_ char *key = node ? strdup_printf("etcd-serving-%s.crt", node->name) : NULL,
                            *pem = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *info = NULL;
        const char *b64, *named = NULL;

        if (!node || !key)
                return node ? -ENOMEM : -EINVAL;
        /* A key with dots: not a json_get_string() path. */
        b64 = all_certs ? json_string(cJSON_GetObjectItemCaseSensitive(
                                  json_get_object(all_certs->json, "data"), key))
                        : NULL;
        if (!b64)
                return -ENOENT;
        if (base64_decode(b64, &pem, NULL) < 0 || pki_cert_from_pem(pem, &x) < 0 ||
            pki_cert_get_info(x, &info) < 0)
                return -EBADMSG;
        for (char **ip = info->ips; *ip; ip++) {
                if (now && ip_text_equal(*ip, now))
                        return 0; /* it names the Node's address */
                if (!named && !ip_is_local_san(*ip))
                        named = *ip;
        }
        if (!named)
                return 0;
        if (snprintf(buf, n, "%s", named) >= (int) n)
                return -ENOBUFS;
        return 1;
}

int node_address_alias(const KubeObject *etcd_cr, const KubeObject *node,
                       const KubeObject *(*get_secret)(const char *name, void *userdata), void *userdata,
                       EtcdAddressAlias *ret)
{
        int64_t rev = node ? node_current_revision(etcd_cr, node->name) : 0;
        const char *ip = node_internal_ip(node);
        char name[64];

        if (rev <= 0 || !ip || strlen(ip) >= sizeof ret->serves_on)
                return 0;
        (void) snprintf(name, sizeof name, "etcd-all-certs-%" PRId64, rev);
        const KubeObject *certs = get_secret(name, userdata);
        if (!certs || node_certified_ip(certs, node, ret->named, sizeof ret->named) <= 0)
                return 0;
        (void) snprintf(ret->serves_on, sizeof ret->serves_on, "%s", ip);
        return 1;
}

const KubeObject *op_etcd_secret(const char *name, void *ctx)
{
        return op_get(ctx, W_ETCD_SECRETS, NS_ETCD, name);
}

const KubeObject *voter_on_old_certificate(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        EtcdAddressAlias a;
        if (!s || op_list(ctx, W_MASTER_NODES, &nodes, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const EtcdMemberState *m = member_of_node(s, nodes[i]);
                if (m && !m->is_learner &&
                    node_address_alias(op_etcd_cr(ctx), nodes[i], op_etcd_secret, (void *) ctx, &a) > 0)
                        return nodes[i];
        }
        return NULL;
}

int64_t node_rollout_target(const KubeObject *etcd_cr, const char *node)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0, target = 0;
                if (!streq_ptr(json_get_string(e, "nodeName"), node))
                        continue;
                (void) json_get_int64(e, "currentRevision", &current);
                if (json_get_int64(e, "targetRevision", &target) < 0 || target <= current)
                        return 0;
                return target;
        }
        return 0;
}

const char *etcd_node_rolling_out(const KubeObject *etcd_cr, int64_t *ret_target)
{
        cJSON *e;
        JSON_ARRAY_FOREACH (e, etcd_cr ? json_get_array(etcd_cr->json, "status.nodeStatuses") : NULL) {
                int64_t current = 0, target = 0;
                (void) json_get_int64(e, "currentRevision", &current);
                if (json_get_int64(e, "targetRevision", &target) < 0 || target <= current)
                        continue;
                if (ret_target)
                        *ret_target = target;
                return strempty(json_get_string(e, "nodeName"));
        }
        return NULL;
}

bool etcd_revision_stable(const KubeObject *etcd_cr, char *why, size_t n)
{
        int64_t latest = 0;
        size_t nodes = 0;
        cJSON *e;

        if (!etcd_cr || json_get_int64(etcd_cr->json, "status.latestAvailableRevision", &latest) < 0 ||
            latest <= 0) {
                if (why)
                        (void) snprintf(why, n, "no etcd revision is published yet");
                return false;
        }
        JSON_ARRAY_FOREACH (e, json_get_array(etcd_cr->json, "status.nodeStatuses")) {
                int64_t current = 0, target = 0;
                (void) json_get_int64(e, "currentRevision", &current);
                (void) json_get_int64(e, "targetRevision", &target);
                if (current != latest || target > current) {
                        if (why)
                                (void) snprintf(why, n, "node %s runs etcd revision %" PRId64 " of %" PRId64,
                                                strempty(json_get_string(e, "nodeName")), current, latest);
                        return false;
                }
                nodes++;
        }
        if (nodes == 0 && why)
                (void) snprintf(why, n, "no node reports an etcd revision yet");
        return nodes > 0;
}

/* ---- Revisions ---- */

const RevisionedObject revisioned_objects[N_REVISIONED_OBJECTS] = {
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_POD},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_ENDPOINTS},
        {W_ETCD_CONFIGMAPS, &KUBE_CONFIGMAPS, "configmap", CM_ETCD_ALL_BUNDLES},
        {W_ETCD_SECRETS, &KUBE_SECRETS, "secret", SECRET_ETCD_ALL_CERTS},
};

int64_t revision_number(const char *s, char end)
{
        int64_t v = 0;
        if (!s || *s < '1' || *s > '9')
                return -1;
        for (; *s && *s != end; s++) {
                if (*s < '0' || *s > '9' || v > INT32_MAX / 10)
                        return -1;
                v = v * 10 + (*s - '0');
        }
        return end && !*s ? -1 : v;
}

int64_t revision_copy_number(const char *name, const char *base)
{
        if (!name || !startswith(name, base) || name[strlen(base)] != '-')
                return -1;
        return revision_number(name + strlen(base) + 1, 0);
}

const RevisionedObject *revision_copy_of(const KubeResource *res, const char *ns, const char *name)
{
        if (!streq_ptr(ns, NS_ETCD))
                return NULL;
        for (size_t i = 0; i < N_REVISIONED_OBJECTS; i++)
                if (revisioned_objects[i].res == res &&
                    revision_copy_number(name, revisioned_objects[i].name) > 0)
                        return &revisioned_objects[i];
        return NULL;
}

#define DIGEST_TEXT_LEN (sizeof CACHED_DIGEST_PREFIX - 1 + 2 * SHA256_DIGEST_LENGTH)

static bool value_read_from_copies(const RevisionedObject *r, const char *key)
{
        return streq(r->name, CM_ETCD_ALL_BUNDLES) ||
               (streq(r->name, SECRET_ETCD_ALL_CERTS) && endswith(key, ".crt"));
}

static int digest_text(const char *value, char out[static DIGEST_TEXT_LEN + 1])
{
        unsigned char md[SHA256_DIGEST_LENGTH];
        char *p = stpcpy(out, CACHED_DIGEST_PREFIX);

        if (!EVP_Digest(value, strlen(value), md, NULL, EVP_sha256(), NULL))
                return -ENOMEM;
        for (size_t i = 0; i < sizeof md; i++)
                p += sprintf(p, "%02x", md[i]);
        return 0;
}

int revision_copy_trim(const RevisionedObject *r, cJSON *copy, cJSON *dropped)
{
        static const char *const maps[] = {"data", "binaryData"};
        char digest[DIGEST_TEXT_LEN + 1];

        for (size_t m = 0; m < ELEMENTSOF(maps); m++) {
                cJSON *map = json_get_object(copy, maps[m]), *v, *next;
                for (v = map ? map->child : NULL; v; v = next) {
                        next = v->next;
                        if (!cJSON_IsString(v) || strlen(v->valuestring) <= DIGEST_TEXT_LEN ||
                            value_read_from_copies(r, v->string))
                                continue;
                        int e = digest_text(v->valuestring, digest);
                        cJSON *full = e < 0 ? NULL : cJSON_CreateString(digest);
                        if (!full)
                                return -ENOMEM;
                        /* Swap the texts: the value stays in place holding the digest, and the
                         * full text goes to `dropped` (both allocated by cJSON, freed by it). */
                        char *t = v->valuestring;
                        v->valuestring = full->valuestring;
                        full->valuestring = t;
                        cJSON_AddItemToArray(dropped, full);
                }
        }
        return 0;
}

bool revision_copy_map_matches(const cJSON *cached, const cJSON *source)
{
        char digest[DIGEST_TEXT_LEN + 1];
        const cJSON *v;
        size_t n_cached = 0, n_source = 0;

        for (v = cached ? cached->child : NULL; v; v = v->next)
                n_cached++;
        for (v = source ? source->child : NULL; v; v = v->next)
                n_source++;
        if (n_cached != n_source)
                return false;
        for (v = source ? source->child : NULL; v; v = v->next) {
                const char *have = json_string(cJSON_GetObjectItemCaseSensitive(cached, v->string));
                if (!have || !cJSON_IsString(v))
                        return false;
                if (streq(have, v->valuestring))
                        continue;
                if (strlen(v->valuestring) <= DIGEST_TEXT_LEN || !startswith(have, CACHED_DIGEST_PREFIX) ||
                    digest_text(v->valuestring, digest) < 0 || !streq(have, digest))
                        return false;
        }
        return true;
}

/* ---- Members and masters ---- */

int url_host_ip(const char *url, IpAddr *ret)
{
        const char *p = url ? strstr(url, "://") : NULL;
        const char *end;
        char host[INET6_ADDRSTRLEN];

        assert_return(ret, -EINVAL);
        if (!p)
                return -EINVAL;
        p += 3;
        if (*p == '[') {
                p++;
                end = strchr(p, ']');
        } else
                end = p + strcspn(p, ":/");
        if (!end || end == p || (size_t) (end - p) >= sizeof host)
                return -EINVAL;
        memcpy(host, p, end - p);
        host[end - p] = 0;
        return ip_parse(host, ret);
}

int etcd_peer_url_for_ip(const char *ip, char *buf, size_t n)
{
        char host[INET6_ADDRSTRLEN + 2];
        IpAddr a;

        assert_return(buf, -EINVAL);
        if (!ip || ip_parse(ip, &a) < 0)
                return -EINVAL;
        if (snprintf(buf, n, "https://%s:%d", ip_url_host(&a, host, sizeof host), ETCD_PEER_PORT) >= (int) n)
                return -ENOBUFS;
        return 0;
}

bool etcd_member_has_ip(const EtcdMemberState *m, const IpAddr *a)
{
        for (size_t k = 0; m && m->member && k < m->member->n_peer_urls; k++) {
                IpAddr h;
                if (url_host_ip(m->member->peer_urls[k], &h) >= 0 && ip_equal(&h, a))
                        return true;
        }
        return false;
}

const EtcdMemberState *member_of_node(const EtcdViewSnapshot *s, const KubeObject *node)
{
        const EtcdMemberState *by_name = etcd_view_find_by_name(s, node->name);
        cJSON *a;

        if (by_name)
                return by_name;
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                IpAddr ip;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP") ||
                    ip_parse(strempty(json_get_string(a, "address")), &ip) < 0)
                        continue;
                for (size_t i = 0; s && i < s->n_members; i++)
                        if (etcd_member_has_ip(&s->states[i], &ip))
                                return &s->states[i];
        }
        return NULL;
}

const char *etcd_member_label(const EtcdMemberState *m, char hex[static 17])
{
        return m->name ? m->name : etcd_id_to_hex(m->id, hex);
}

const EtcdMemberState *leader_handover_target(const EtcdViewSnapshot *s,
                                              bool (*skip)(const EtcdMemberState *m))
{
        const EtcdMemberState *best = NULL;
        for (size_t i = 0; s && i < s->n_members; i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m->id == s->leader || m->is_learner || !m->started || !m->healthy || !m->has_status ||
                    (skip && skip(m)))
                        continue;
                if (!best || m->status.raft_applied_index > best->status.raft_applied_index)
                        best = m;
        }
        return best;
}

/* What etcd (and bbolt under it) write when the data on disk is damaged. */
static const char *const damaged_data_messages[] = {
        "failed to open database",
        "invalid database",
        "checksum error",
        "crc mismatch",
        "unexpected fault address",
        "assertion failed: Page expected",
        "failed to recover v3 backend",
        "database file size changed",
};

#define DAMAGED_MIN_EXITS 3

bool member_data_damaged(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m,
                         char *why, size_t n)
{
        cJSON *cs;
        for (size_t i = 0; s && i < s->n_alarms; i++)
                if (s->alarms[i].member_id == m->id && streq_ptr(s->alarms[i].alarm, "CORRUPT")) {
                        (void) snprintf(why, n, "it raised the CORRUPT alarm");
                        return true;
                }
        const KubeObject *pod = m->name ? etcd_pod_of_node(ctx, m->name) : NULL;
        JSON_ARRAY_FOREACH (cs, pod ? json_get_array(pod->json, "status.containerStatuses") : NULL) {
                int64_t restarts = 0;
                if (!streq_ptr(json_get_string(cs, "name"), "etcd"))
                        continue;
                /* Running now: the last exit is history. A member that rejoined empty runs in
                 * the same pod, which keeps its predecessor's restarts and last exit; a damaged
                 * one spends its time down, in CrashLoopBackOff. */
                if (json_get_object(cs, "state.running"))
                        return false;
                const char *msg = json_get_string(cs, "lastState.terminated.message");
                if (json_get_int64(cs, "restartCount", &restarts) < 0 || restarts < DAMAGED_MIN_EXITS ||
                    !msg)
                        return false;
                for (size_t k = 0; k < ELEMENTSOF(damaged_data_messages); k++)
                        if (strstr(msg, damaged_data_messages[k])) {
                                (void) snprintf(why, n,
                                                "its etcd exited %" PRId64 " times, last saying \"%s\"",
                                                restarts, damaged_data_messages[k]);
                                return true;
                        }
                return false;
        }
        return false;
}

bool replace_damaged_members(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v =
                cr ? json_get(cr->json, "spec.unsupportedConfigOverrides." REPLACE_DAMAGED_OVERRIDE) : NULL;
        return cJSON_IsTrue(v) || streq_ptr(json_string(v), "true");
}

const KubeObject *node_of_member(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        if (!m || op_list(ctx, W_MASTER_NODES, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (member_of_node(s, nodes[k]) == m)
                        return nodes[k];
        return NULL;
}

/* How many of the node's InternalIPs parse, and whether one of them is in the member's peer URLs. */
static size_t node_ips_against_member(const KubeObject *node, const EtcdMemberState *m, bool *ret_has)
{
        size_t n = 0;
        cJSON *a;
        *ret_has = false;
        JSON_ARRAY_FOREACH (a, json_get_array(node->json, "status.addresses")) {
                IpAddr ip;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP") ||
                    ip_parse(strempty(json_get_string(a, "address")), &ip) < 0)
                        continue;
                n++;
                *ret_has |= etcd_member_has_ip(m, &ip);
        }
        return n;
}

const KubeObject *moved_master_of_member(const SyncContext *ctx, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        const KubeObject *named = NULL;
        size_t n = 0;
        bool has;

        if (!m || !m->name || !m->member || m->member->n_peer_urls == 0 ||
            op_list(ctx, W_MASTER_NODES, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++) {
                size_t ips = node_ips_against_member(nodes[k], m, &has);
                if (has)
                        return NULL; /* a master has the member's address: not moved */
                if (streq(nodes[k]->name, m->name) && ips > 0)
                        named = nodes[k];
        }
        return named;
}

const KubeObject *master_joining(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        _cleanup_free_ const KubeObject **nodes = NULL;
        size_t n = 0;
        if (op_list(ctx, W_MASTER_NODES, &nodes, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (!member_of_node(s, nodes[k]) &&
                    !machine_pending_deletion(machine_of_node(ctx, nodes[k]->name)))
                        return nodes[k];
        return NULL;
}

/* ---- Machines ---- */

bool machine_api_functional(const SyncContext *ctx)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (op_list(ctx, W_MASTER_MACHINES, &machines, &n) < 0)
                return false;
        for (size_t k = 0; k < n; k++)
                if (streq_ptr(json_get_string(machines[k]->json, "status.phase"), "Running"))
                        return true;
        return false;
}

bool machine_pending_deletion(const KubeObject *machine)
{
        return machine && json_get_string(machine->json, "metadata.deletionTimestamp");
}

bool machine_has_deletion_hook(const KubeObject *machine)
{
        cJSON *h;
        JSON_ARRAY_FOREACH (h,
                            machine ? json_get_array(machine->json, "spec.lifecycleHooks.preDrain") : NULL)
                if (streq_ptr(json_get_string(h, "name"), MACHINE_DELETION_HOOK) &&
                    streq_ptr(json_get_string(h, "owner"), MACHINE_DELETION_HOOK_OWNER))
                        return true;
        return false;
}

/* One of the Machine's InternalIP addresses is among the member's peer URL hosts. */
static bool machine_has_member_ip(const KubeObject *machine, const EtcdMemberState *m)
{
        cJSON *a;
        JSON_ARRAY_FOREACH (a, json_get_array(machine->json, "status.addresses")) {
                IpAddr ip;
                if (streq_ptr(json_get_string(a, "type"), "InternalIP") &&
                    ip_parse(strempty(json_get_string(a, "address")), &ip) >= 0 &&
                    etcd_member_has_ip(m, &ip))
                        return true;
        }
        return false;
}

const KubeObject *machine_of_member(const SyncContext *ctx, const EtcdMemberState *m)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (!m || op_list(ctx, W_MASTER_MACHINES, &machines, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (machine_has_member_ip(machines[k], m))
                        return machines[k];
        return NULL;
}

const EtcdMemberState *member_of_machine(const EtcdViewSnapshot *s, const KubeObject *machine)
{
        for (size_t i = 0; s && machine && i < s->n_members; i++)
                if (machine_has_member_ip(machine, &s->states[i]))
                        return &s->states[i];
        return NULL;
}

const KubeObject *machine_of_node(const SyncContext *ctx, const char *node)
{
        _cleanup_free_ const KubeObject **machines = NULL;
        size_t n = 0;
        if (!node || op_list(ctx, W_MASTER_MACHINES, &machines, &n) < 0)
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (streq_ptr(json_get_string(machines[k]->json, "status.nodeRef.name"), node))
                        return machines[k];
        return NULL;
}

/* ---- Bootstrap ---- */

const char *bootstrap_ip_of(const KubeObject *o)
{
        return kube_object_annotation(o, BOOTSTRAP_IP_ANNOTATION);
}

const char *bootstrap_ip(const SyncContext *ctx)
{
        return bootstrap_ip_of(op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_ENDPOINTS));
}

bool is_bootstrap_member(const SyncContext *ctx, const EtcdMemberState *m, const char *ip)
{
        IpAddr a;
        if (streq_ptr(m->name, BOOTSTRAP_MEMBER_NAME))
                return true;
        if (m->name && op_get(ctx, W_MASTER_NODES, NULL, m->name))
                return false;
        return ip && ip_parse(ip, &a) >= 0 && etcd_member_has_ip(m, &a);
}

const EtcdMemberState *bootstrap_member(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        const char *ip = bootstrap_ip(ctx);
        for (size_t i = 0; s && i < s->n_members; i++)
                if (is_bootstrap_member(ctx, &s->states[i], ip))
                        return &s->states[i];
        return NULL;
}

bool bootstrap_reported_complete(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "bootstrap");

        if (cm && streq_ptr(json_get_string(cm->json, "data.status"), "complete"))
                return true;
        /* The seed's other signal: the Event the installer names bootstrap-finished, and only
         * that one (it sets no reason; an Event of another name is no signal). */
        return op_get(ctx, W_KUBE_SYSTEM_EVENTS, NS_KUBE_SYSTEM, BOOTSTRAP_FINISHED_EVENT) != NULL;
}

BootstrapPhase bootstrap_phase(const SyncContext *ctx, const EtcdViewSnapshot *s)
{
        if (!bootstrap_reported_complete(ctx))
                return BOOTSTRAP_IN_PROGRESS;
        if (!s || s->error < 0 || !s->members || bootstrap_member(ctx, s))
                return BOOTSTRAP_REPORTED;
        return BOOTSTRAP_OVER;
}

static const char *const phase_names[_BOOTSTRAP_PHASE_MAX] = {
        [BOOTSTRAP_IN_PROGRESS] = "in progress",
        [BOOTSTRAP_REPORTED] = "reported complete, bootstrap member not yet removed",
        [BOOTSTRAP_OVER] = "over",
};

const char *bootstrap_phase_to_string(BootstrapPhase p)
{
        return p >= 0 && p < _BOOTSTRAP_PHASE_MAX ? phase_names[p] : NULL;
}

/* ---- Scaling strategy ---- */

bool etcd_unsafe_non_ha(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        cJSON *v = cr ? json_get(cr->json, "spec.unsupportedConfigOverrides." UNSAFE_NON_HA_OVERRIDE) : NULL;
        return cJSON_IsTrue(v) || streq_ptr(json_string(v), "true");
}

static bool bootstrap_in_place(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1");
        const char *text = cm ? json_get_string(cm->json, "data.install-config") : NULL;
        _cleanup_(cJSON_Deletep) cJSON *ic = NULL;

        /* Teardown and revisions ask on every sync: parse the install-config only when it can say yes. */
        if (!text || !strstr(text, "bootstrapInPlace") || yaml_parse(text, strlen(text), &ic, NULL) < 0)
                return false;
        return json_get_object(ic, "bootstrapInPlace") != NULL;
}

static bool delayed_bootstrap(const SyncContext *ctx)
{
        const KubeObject *ns = op_get(ctx, W_NAMESPACES, NULL, NS_ETCD);
        cJSON *ann = ns ? json_get_object(ns->json, "metadata.annotations") : NULL;
        return ann && (cJSON_GetObjectItemCaseSensitive(ann, DELAYED_BOOTSTRAP_ANNOTATION) ||
                       cJSON_GetObjectItemCaseSensitive(ann, DELAYED_HA_BOOTSTRAP_ANNOTATION));
}

ScalingStrategy scaling_strategy(const SyncContext *ctx)
{
        const KubeObject *infra = op_get(ctx, W_INFRASTRUCTURES, NULL, "cluster");
        const char *topology = infra ? json_get_string(infra->json, "status.controlPlaneTopology") : NULL;

        if (etcd_unsafe_non_ha(ctx))
                return SCALING_UNSAFE;
        if (bootstrap_in_place(ctx))
                return SCALING_BOOTSTRAP_IN_PLACE;
        if (streq_ptr(topology, "SingleReplica"))
                return SCALING_UNSAFE;
        if (delayed_bootstrap(ctx))
                return SCALING_DELAYED_HA;
        return SCALING_HA;
}

static const char *const strategy_names[_SCALING_STRATEGY_MAX] = {
        [SCALING_HA] = "HAScalingStrategy",
        [SCALING_DELAYED_HA] = "DelayedHAScalingStrategy",
        [SCALING_UNSAFE] = "UnsafeScalingStrategy",
        [SCALING_BOOTSTRAP_IN_PLACE] = "BootstrapInPlaceStrategy",
};

const char *scaling_strategy_to_string(ScalingStrategy s)
{
        return s >= 0 && s < _SCALING_STRATEGY_MAX ? strategy_names[s] : NULL;
}

size_t scaling_members_before_teardown(ScalingStrategy s)
{
        switch (s) {
        case SCALING_HA:
                return 4;
        case SCALING_DELAYED_HA:
                return 3;
        default:
                return 2;
        }
}

bool scaling_is_single_member(ScalingStrategy s)
{
        return s == SCALING_UNSAFE || s == SCALING_BOOTSTRAP_IN_PLACE;
}

size_t desired_control_plane_replicas(const SyncContext *ctx)
{
        const KubeObject *cm = op_get(ctx, W_KUBE_SYSTEM_CONFIGMAPS, NS_KUBE_SYSTEM, "cluster-config-v1");
        const char *text = cm ? json_get_string(cm->json, "data.install-config") : NULL;
        _cleanup_(cJSON_Deletep) cJSON *ic = NULL;
        int64_t replicas = 0;

        if (!text || yaml_parse(text, strlen(text), &ic, NULL) < 0 ||
            json_get_int64(ic, "controlPlane.replicas", &replicas) < 0 || replicas < 1 || replicas > 15)
                return 0;
        return (size_t) replicas;
}

uint64_t etcd_backend_quota_bytes(const KubeObject *etcd_cr)
{
        int64_t gib = 0;
        if (!etcd_cr || json_get_int64(etcd_cr->json, "spec.backendQuotaGiB", &gib) < 0 || gib < 1 ||
            gib > 1024)
                gib = ETCD_DEFAULT_QUOTA_GIB;
        return (uint64_t) gib * 1024ULL * 1024ULL * 1024ULL;
}

bool etcd_hardware_slower(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        const char *speed = cr ? json_get_string(cr->json, "spec.controlPlaneHardwareSpeed") : NULL;
        if (speed && *speed)
                return streq(speed, "Slower");
        const KubeObject *infra = op_get(ctx, W_INFRASTRUCTURES, NULL, "cluster");
        const cJSON *ps = infra ? json_get_object(infra->json, "status.platformStatus") : NULL;
        return json_get_object(ps, "azure") ||
               streq_ptr(json_get_string(ps, "ibmcloud.providerType"), "VPC");
}

int etcd_tls_settings(const SyncContext *ctx, EtcdTls *ret, char *why, size_t why_size)
{
        const KubeObject *api = op_get(ctx, W_APISERVERS, NULL, "cluster");
        return etcd_tls_from_profile(api ? json_get_object(api->json, "spec.tlsSecurityProfile") : NULL, ret,
                                     why, why_size);
}

/* ---- Backups to S3-compatible object storage ---- */

int backup_store_of(const cJSON *obj, BackupStore *ret, char *why, size_t n)
{
        const cJSON *ann = json_get_object(obj, "metadata.annotations"); /* keys with dots */
        const char *secret = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_SECRET));
        const char *bucket = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_BUCKET));
        const char *prefix = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_PREFIX));
        const char *gc = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_GC));
        const char *max = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_MAX));
        const char *grace = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_GRACE));
        BackupStore s = {.secret = secret, .bucket = bucket, .prefix = prefix, .grace = S3_DEFAULT_GRACE};

        assert_return(ret && why, -EINVAL);
        if (!secret && !bucket && !prefix && !gc && !max && !grace)
                return -ENOENT;
#define BAD(...) ((void) snprintf(why, n, __VA_ARGS__), -EINVAL)
        if (!secret || !kube_name_is_valid(secret))
                return BAD("annotation " ANN_S3_SECRET " \"%s\": name the Secret in " NS_ETCD
                           " that holds the store's accessKeyID and secretAccessKey (and optionally region, "
                           "endpoint, s3ForcePathStyle)",
                           strempty(secret));
        if (!bucket || !s3_bucket_name_is_valid(bucket))
                return BAD("annotation " ANN_S3_BUCKET
                           " \"%s\": name the bucket (3 to 63 lower-case letters, "
                           "digits, '-' and '.')",
                           strempty(bucket));
        if (!prefix || !*prefix || !s3_prefix_is_valid(prefix)) /* many clusters share a bucket */
                return BAD("annotation " ANN_S3_PREFIX
                           " \"%s\": give this cluster's own place in the bucket, "
                           "e.g. clusters/prod-1 (not empty, no leading or trailing '/', no '.' or '..' "
                           "parts, only letters, digits and ! - _ . * ' ( ) /)",
                           strempty(prefix));
        s.gc_policy = gc ? gc : "LimitBased";
        if (!streq(s.gc_policy, "LimitBased") && !streq(s.gc_policy, "Exponential"))
                return BAD("annotation " ANN_S3_GC " \"%s\": LimitBased (keep the newest " ANN_S3_MAX
                           ") or Exponential",
                           gc);
        if (max) {
                char *end;
                errno = 0;
                unsigned long m = strtoul(max, &end, 10);
                if (errno || end == max || *end || m < 1 || m > 100000 || !isdigit((unsigned char) *max))
                        return BAD("annotation " ANN_S3_MAX " \"%s\": a number from 1 to 100000", max);
                s.max_backups = (unsigned) m;
        }
        if (grace && parse_duration(grace, &s.grace) < 0)
                return BAD("annotation " ANN_S3_GRACE " \"%s\": a duration such as 72h, 30m or 0s", grace);
#undef BAD
        *ret = s;
        return 0;
}

/* The line of a termination message that says why the process ended, at most 160
 * characters: a Go panic's own line ("panic: ..."; etcd's output then ends with its
 * goroutine traces, whose last line names only a source file), else the last
 * non-empty line. */
void termination_line(const char *msg, char *out, size_t n)
{
        const char *end, *start;
        size_t max = n > 0 ? n - 1 : 0;
        for (const char *p = msg; (p = strstr(p, "panic: ")); p++)
                if (p == msg || p[-1] == '\n') {
                        end = p + strcspn(p, "\n");
                        (void) snprintf(out, n, "%.*s", (int) MIN((size_t) (end - p), max), p);
                        return;
                }
        end = msg + strlen(msg);
        while (end > msg && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
                end--;
        start = end;
        while (start > msg && start[-1] != '\n')
                start--;
        /* A klog header ("E1127 14:02:16.690485       2 backup.c:344] ") says nothing a
         * condition needs and would take the room of what follows. */
        if (end - start > 6 && strchr("IWEF", start[0]) && isdigit((unsigned char) start[1]) &&
            isdigit((unsigned char) start[4]) && start[5] == ' ') {
                const char *h = memmem(start, MIN((size_t) (end - start), (size_t) 80), "] ", 2);
                if (h)
                        start = h + 2;
        }
        (void) snprintf(out, n, "%.*s", (int) MIN((size_t) (end - start), max), start);
}
