/* The facts of Nodes and pods (facts.h): a master's address and readiness, its
 * etcd pod and why that pod's container ended, and the address a moved master's
 * etcd is still known by in the certificate it runs with. */
#include "facts.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/yaml.h"
#include "pki/pki.h"

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

bool topology_has_arbiter(const SyncContext *ctx)
{
        return streq_ptr(control_plane_topology(ctx), "HighlyAvailableArbiter");
}

static int by_name(const void *a, const void *b)
{
        const KubeObject *x = *(const KubeObject *const *) a, *y = *(const KubeObject *const *) b;
        return strcmp(x->name, y->name);
}

int op_list_with_arbiters(const SyncContext *ctx, OperatorWatch masters_w, OperatorWatch arbiters_w,
                          const KubeObject ***ret, size_t *ret_n)
{
        _cleanup_free_ const KubeObject **masters = NULL, **arbiters = NULL;
        size_t nm = 0, na = 0, n = 0;
        int r = op_list(ctx, masters_w, &masters, &nm);
        if (r < 0)
                return r;
        if (topology_has_arbiter(ctx) && (r = op_list(ctx, arbiters_w, &arbiters, &na)) < 0)
                return r;
        if (na == 0) {
                *ret = TAKE_PTR(masters);
                *ret_n = nm;
                return 0;
        }
        const KubeObject **all = calloc(nm + na, sizeof *all);
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < nm; i++)
                all[n++] = masters[i];
        for (size_t i = 0; i < na; i++)
                if (!op_get(ctx, masters_w, *arbiters[i]->namespace ? arbiters[i]->namespace : NULL,
                            arbiters[i]->name)) /* selected by both: once */
                        all[n++] = arbiters[i];
        qsort(all, n, sizeof *all, by_name);
        *ret = all;
        *ret_n = n;
        return 0;
}

int op_list_etcd_nodes(const SyncContext *ctx, const KubeObject ***ret, size_t *ret_n)
{
        return op_list_with_arbiters(ctx, W_MASTER_NODES, W_ARBITER_NODES, ret, ret_n);
}

const KubeObject *op_get_etcd_node(const SyncContext *ctx, const char *name)
{
        const KubeObject *node = op_get(ctx, W_MASTER_NODES, NULL, name);
        if (!node && topology_has_arbiter(ctx))
                node = op_get(ctx, W_ARBITER_NODES, NULL, name);
        return node;
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
        if (!s || op_list_etcd_nodes(ctx, &nodes, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const EtcdMemberState *m = member_of_node(s, nodes[i]);
                if (m && !m->is_learner &&
                    node_address_alias(op_etcd_cr(ctx), nodes[i], op_etcd_secret, (void *) ctx, &a) > 0)
                        return nodes[i];
        }
        return NULL;
}

/* The NODE_<n>_IP value the pod.yaml of ConfigMap `cm` gives `node` (brackets removed), into buf. */
static int pod_node_ip(const KubeObject *cm, const KubeObject *node, char *buf, size_t n)
{
        /* A key with a dot: not a json_get_string() path. */
        const char *pod = cm ? json_string(cJSON_GetObjectItemCaseSensitive(
                                       json_get_object(cm->json, "data"), "pod.yaml"))
                             : NULL;
        _cleanup_free_ char *env = node_envvar_name(node->name), *var = NULL;
        _cleanup_(cJSON_Deletep) cJSON *spec = NULL;
        cJSON *c, *e;
        if (!pod)
                return -ENOENT;
        if (!env || !(var = strdup_printf("NODE_%s_IP", env)))
                return -ENOMEM;
        if (yaml_parse(pod, strlen(pod), &spec, NULL) < 0)
                return -EBADMSG;
        JSON_ARRAY_FOREACH (c, json_get_array(spec, "spec.containers"))
                JSON_ARRAY_FOREACH (e, json_get_array(c, "env"))
                        if (streq_ptr(json_get_string(e, "name"), var)) {
                                char bare[INET6_ADDRSTRLEN + 2];
                                const char *v = json_get_string(e, "value");
                                v = v ? ip_unbracket(v, bare, sizeof bare) : NULL;
                                return v && snprintf(buf, n, "%s", v) < (int) n ? 0 : -EBADMSG;
                        }
        return -ENOENT;
}

bool revision_fits_node(const SyncContext *ctx, int64_t rev, const KubeObject *node, char *why, size_t n)
{
        const char *now = node_internal_ip(node);
        char name[64], named[INET6_ADDRSTRLEN + 2] = "", in_pod[INET6_ADDRSTRLEN + 2] = "";

        if (!now) {
                (void) snprintf(why, n, "node %s has no InternalIP", node->name);
                return false;
        }
        (void) snprintf(name, sizeof name, "etcd-all-certs-%" PRId64, rev);
        int r = node_certified_ip(op_etcd_secret(name, (void *) ctx), node, named, sizeof named);
        if (r > 0) {
                (void) snprintf(why, n,
                                "revision %" PRId64
                                " certifies %s for %s, not for its address %s now: waiting "
                                "for a revision made after it moved",
                                rev, node->name, named, now);
                return false;
        }
        if (r < 0) {
                (void) snprintf(why, n, "revision %" PRId64 " has no usable certificate for %s (%s)", rev,
                                node->name, strerror(-r));
                return false;
        }
        /* The pod: the copies in the cache hold digests, so the revision's is compared with the
         * one TargetConfigController renders now, whose address for the node is read. */
        const KubeObject *source = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, CM_ETCD_POD);
        r = pod_node_ip(source, node, in_pod, sizeof in_pod);
        if (r < 0 || !ip_text_equal(in_pod, now)) {
                (void) snprintf(
                        why, n,
                        "the etcd pod rendered now gives %s %s%s, not its address %s: waiting for it "
                        "and a revision of it",
                        node->name, r < 0 ? "no address" : "the address ", r < 0 ? "" : in_pod, now);
                return false;
        }
        (void) snprintf(name, sizeof name, CM_ETCD_POD "-%" PRId64, rev);
        const KubeObject *copy = op_get(ctx, W_ETCD_CONFIGMAPS, NS_ETCD, name);
        if (!copy || !revision_copy_map_matches(json_get_object(copy->json, "data"),
                                                json_get_object(source->json, "data"))) {
                (void) snprintf(why, n,
                                "revision %" PRId64 "'s etcd pod is not the one rendered for %s at %s now: "
                                "waiting for a revision made after it moved",
                                rev, node->name, now);
                return false;
        }
        return true;
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
