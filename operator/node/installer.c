/* `cluster-etcd-operator installer`: lays revision N of the etcd static pod
 * down on this node, as library-go's installer pod does. It fetches the
 * revisioned ConfigMaps and Secrets (<name>-N) and the unrevisioned cert
 * copies, checks every name and key that becomes a path before anything
 * touches the disk, writes
 *   <resource-dir>/<pod>-N/{configmaps,secrets}/<name>/<key>
 *   <cert-dir>/{configmaps,secrets}/<name>/<key>
 *   <resource-dir>/<pod>-N/<pod>.yaml
 * and last <pod-manifest-dir>/<pod>.yaml, so that a failed install never
 * leaves the kubelet a manifest that points at missing files. Every file is
 * written atomically (temp file, fsync, rename); Secret keys are 0600.
 * As upstream's installer, the words REVISION, NODE_NAME and NODE_ENVVAR_NAME
 * are replaced in every ConfigMap text key it writes (the node's scripts in
 * etcd-scripts and the restore pods name this node that way); binaryData,
 * PEM and Secrets are written as they are.
 * Transient API errors are retried until --timeout-duration; NotFound is
 * fatal for a required object and skips an optional one. */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "base/base64.h"
#include "base/contract.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/names.h"
#include "base/strlist.h"
#include "etcd/sync.h"
#include "host/fs.h"
#include "host/tls.h"
#include "kube/client.h"
#include "node-util.h"
#include "node.h"

#define MAX_OBJECTS 256

enum {
        L_CM,
        L_SECRET,
        L_OPT_CM,
        L_OPT_SECRET,
        L_CERT_CM,
        L_CERT_SECRET,
        L_OPT_CERT_CM,
        L_OPT_CERT_SECRET,
        _L_MAX,
};

static const struct {
        const char *flag;
        bool secret, optional, cert;
} lists[_L_MAX] = {
        [L_CM] = {"configmaps", false, false, false},
        [L_SECRET] = {"secrets", true, false, false},
        [L_OPT_CM] = {"optional-configmaps", false, true, false},
        [L_OPT_SECRET] = {"optional-secrets", true, true, false},
        [L_CERT_CM] = {"cert-configmaps", false, false, true},
        [L_CERT_SECRET] = {"cert-secrets", true, false, true},
        [L_OPT_CERT_CM] = {"optional-cert-configmaps", false, true, true},
        [L_OPT_CERT_SECRET] = {"optional-cert-secrets", true, true, true},
};

typedef struct Flags {
        const char *revision_s;
        unsigned revision;
        const char *namespace, *pod, *resource_dir, *manifest_dir, *cert_dir, *node_name, *kubeconfig;
        StrList lists[_L_MAX];
        StrList etcd_endpoints;       /* the quorum guard's seeds; none: no guard */
        EtcdAddressAlias aliases[16]; /* members reached where their certificate does not name */
        size_t n_aliases;
        bool sole_voter_may_restart; /* the unsafe non-HA override: the only voter may restart */
        usec_t timeout;
} Flags;

typedef struct File {
        char *key;
        char *data;
        size_t len;
        bool text; /* a ConfigMap data key: the node's words are substituted */
} File;

typedef struct Object {
        char *name;     /* the API object: "etcd-pod-3", or SECRET_ETCD_ALL_CERTS for a cert copy */
        char *dir_name; /* its directory: CM_ETCD_POD */
        bool secret, cert, optional, present;
        File *files;
        size_t n_files;
} Object;

typedef struct Installer {
        const Flags *f;
        Loop *loop;
        KubeClient *client;
        usec_t deadline;
        Object objects[MAX_OBJECTS];
        size_t n_objects;
        char revision_dir[4096];
} Installer;

static void object_done(Object *o)
{
        for (size_t i = 0; i < o->n_files; i++) {
                free(o->files[i].key);
                if (o->secret && o->files[i].data)
                        explicit_bzero(o->files[i].data, o->files[i].len);
                free(o->files[i].data);
        }
        free(o->files);
        free(o->name);
        free(o->dir_name);
        *o = (Object){};
}

static void installer_done(Installer *in)
{
        for (size_t i = 0; i < in->n_objects; i++)
                object_done(&in->objects[i]);
        in->client = kube_client_free(in->client);
        in->loop = loop_unref(in->loop);
}

static const char *kind(bool secret)
{
        return secret ? "Secret" : "ConfigMap";
}

/* ---- fetching ---- */

typedef struct Get {
        bool done;
        int error;
        cJSON *body;
        KubeCall *call;
} Get;

static void on_get(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Get *g = userdata;
        (void) c;
        g->done = true;
        g->call = NULL;
        g->error = resp->error;
        if (resp->error >= 0) {
                g->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
                if (!g->body)
                        g->error = resp->body ? -ENOMEM : -EBADMSG;
        }
}

/* Errors that another attempt cannot fix. */
static bool is_permanent(int e)
{
        return e == -ENOENT || e == -EPERM || e == -EACCES || e == -EINVAL || e == -EBADMSG ||
               e == -ENOMEM || e == -EPROTONOSUPPORT;
}

static int get_once(Installer *in, const KubeResource *res, const char *name, usec_t budget, cJSON **ret)
{
        _cleanup_free_ char *path = kube_resource_path(res, in->f->namespace, name, NULL);
        Get g = {};
        int r;

        if (!path)
                return -ENOMEM;
        kube_client_set_timeout(in->client, MIN(budget, 30 * USEC_PER_SEC));
        r = kube_call(in->client, "GET", path, NULL, NULL, on_get, &g, &g.call);
        if (r < 0)
                return r;
        r = loop_run_until(in->loop, &g.done, budget);
        if (!g.done) {
                kube_call_cancel(g.call);
                return r < 0 ? r : -ETIMEDOUT;
        }
        if (g.error < 0)
                return g.error;
        *ret = g.body;
        return 0;
}

static int fetch(Installer *in, const KubeResource *res, const char *name, cJSON **ret)
{
        usec_t delay = 500 * USEC_PER_MSEC;

        for (unsigned attempt = 1;; attempt++) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= in->deadline)
                        return -ETIMEDOUT;
                int r = get_once(in, res, name, in->deadline - now, ret);
                if (r >= 0 || is_permanent(r))
                        return r;
                now = now_usec(CLOCK_MONOTONIC);
                if (now + delay >= in->deadline)
                        return r;
                log_warning("installer: GET %s %s/%s failed (attempt %u): %s; retrying in %" PRIu64 " ms",
                            res->kind, in->f->namespace, name, attempt, strerror(-r), delay / USEC_PER_MSEC);
                bool never = false;
                (void) loop_run_until(in->loop, &never, delay);
                delay = MIN(delay * 2, 5 * USEC_PER_SEC);
        }
}

static int add_file(Object *o, const char *key, char *data, size_t len, bool text)
{
        File *f = realloc(o->files, (o->n_files + 1) * sizeof *f);
        if (!f) {
                free(data);
                return -ENOMEM;
        }
        o->files = f;
        f[o->n_files] = (File){.key = strdup(key), .data = data, .len = len, .text = text};
        if (!f[o->n_files].key) {
                free(data);
                return -ENOMEM;
        }
        o->n_files++;
        return 0;
}

/* The object's keys as files: ConfigMap data and binaryData, Secret data
 * (base64). Every key is checked before anything is written. */
static int object_load(Object *o, const cJSON *obj, const char *ns)
{
        const char *sections[] = {"data", o->secret ? NULL : "binaryData"};
        int r;

        for (size_t s = 0; s < ELEMENTSOF(sections) && sections[s]; s++) {
                const cJSON *e;
                bool b64 = o->secret || s == 1;
                JSON_ARRAY_FOREACH (e, json_get_object(obj, sections[s])) {
                        char *data = NULL;
                        size_t len = 0;
                        if (!nodecmd_key_is_valid(e->string)) {
                                log_error(
                                        "installer: %s %s/%s has key \"%s\", which is not a valid file name "
                                        "([-._a-zA-Z0-9]+, not \".\" or \"..\"); refusing to install it",
                                        kind(o->secret), ns, o->name, e->string);
                                return -EINVAL;
                        }
                        if (!cJSON_IsString(e)) {
                                log_error("installer: %s %s/%s key %s is not a string", kind(o->secret), ns,
                                          o->name, e->string);
                                return -EBADMSG;
                        }
                        if (b64) {
                                r = base64_decode(e->valuestring, &data, &len);
                                if (r == -ENOMEM)
                                        return r;
                                if (r < 0) {
                                        log_error("installer: %s %s/%s key %s is not valid base64",
                                                  kind(o->secret), ns, o->name, e->string);
                                        return -EBADMSG;
                                }
                        } else {
                                len = strlen(e->valuestring);
                                if (!(data = strdup(e->valuestring)))
                                        return -ENOMEM;
                        }
                        if ((r = add_file(o, e->string, data, len, !b64)) < 0)
                                return r;
                }
        }
        return 0;
}

static Object *find_object(Installer *in, const char *name, bool secret)
{
        for (size_t i = 0; i < in->n_objects; i++)
                if (in->objects[i].secret == secret && streq(in->objects[i].name, name))
                        return &in->objects[i];
        return NULL;
}

static int fetch_one(Installer *in, const char *list_name, bool secret, bool cert, bool optional)
{
        _cleanup_free_ char *name =
                cert ? strdup(list_name) : strdup_printf("%s-%u", list_name, in->f->revision);
        _cleanup_(cJSON_Deletep) cJSON *obj = NULL;
        const char *ns = in->f->namespace;
        int r;

        if (!name)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_objects; i++)
                if (in->objects[i].secret == secret && in->objects[i].cert == cert &&
                    streq(in->objects[i].name, name))
                        return 0; /* listed twice */
        if (in->n_objects >= MAX_OBJECTS)
                return log_error_errno(E2BIG, "installer: more than %d ConfigMaps and Secrets listed",
                                       MAX_OBJECTS);
        Object *o = &in->objects[in->n_objects++];
        *o = (Object){.secret = secret, .cert = cert, .optional = optional};
        o->name = TAKE_PTR(name);
        if (!(o->dir_name = strdup(list_name)))
                return -ENOMEM;

        r = fetch(in, secret ? &KUBE_SECRETS : &KUBE_CONFIGMAPS, o->name, &obj);
        if (r == -ENOENT && optional) {
                log_info("installer: optional %s %s/%s does not exist; skipping it", kind(secret), ns,
                         o->name);
                return 0;
        }
        if (r == -ENOENT) {
                if (cert)
                        log_error("installer: required %s %s/%s (a --cert-* copy) does not exist",
                                  kind(secret), ns, o->name);
                else
                        log_error(
                                "installer: required %s %s/%s does not exist: is revision %u complete? (the "
                                "operator creates <name>-%u of every revisioned object before it asks for "
                                "an "
                                "install)",
                                kind(secret), ns, o->name, in->f->revision, in->f->revision);
                return r;
        }
        if (r < 0) {
                log_error("installer: cannot get %s %s/%s: %s", kind(secret), ns, o->name,
                          r == -ETIMEDOUT ? "timed out (see --timeout-duration)" : strerror(-r));
                return r;
        }
        r = object_load(o, obj, ns);
        if (r < 0)
                return r == -ENOMEM ? log_error_errno(r, "out of memory") : r;
        o->present = true;
        log_info("installer: got %s %s/%s (%zu keys)", kind(secret), ns, o->name, o->n_files);
        return 0;
}

static int fetch_all(Installer *in)
{
        int r;

        for (size_t l = 0; l < _L_MAX; l++)
                for (size_t i = 0; i < in->f->lists[l].n; i++) {
                        r = fetch_one(in, in->f->lists[l].v[i], lists[l].secret, lists[l].cert,
                                      lists[l].optional);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* ---- writing ---- */

/* REVISION, NODE_NAME and NODE_ENVVAR_NAME in the object's text keys. */
static int substitute_words(Object *o, const Flags *f)
{
        char rev[16];
        (void) snprintf(rev, sizeof rev, "%u", f->revision);
        for (size_t i = 0; i < o->n_files; i++) {
                char *out = NULL;
                size_t len = 0;
                /* PEM (a CA bundle) is never rewritten: its base64 may spell REVISION. */
                if (!o->files[i].text || startswith(o->files[i].data, "-----BEGIN"))
                        continue;
                int r = nodecmd_substitute(o->files[i].data, o->files[i].len, rev, f->node_name, &out, &len);
                if (r < 0)
                        return log_error_errno(r, "out of memory");
                free(o->files[i].data);
                o->files[i].data = out;
                o->files[i].len = len;
        }
        return 0;
}

static int write_object(const char *root, const Object *o)
{
        _cleanup_free_ char *dir =
                strdup_printf("%s/%s/%s", root, o->secret ? "secrets" : "configmaps", o->dir_name);
        int r;

        if (!dir)
                return -ENOMEM;
        if ((r = host_mkdir_p(dir, 0755)) < 0)
                return log_error_errno(r, "installer: cannot create %s", dir);
        for (size_t i = 0; i < o->n_files; i++) {
                _cleanup_free_ char *p = strdup_printf("%s/%s", dir, o->files[i].key);
                if (!p)
                        return -ENOMEM;
                r = write_file_atomic(p, o->files[i].data, o->files[i].len, o->secret ? 0600 : 0644);
                if (r < 0)
                        return log_error_errno(r, "installer: cannot write %s", p);
                log_debug("installer: wrote %s (%zu bytes)", p, o->files[i].len);
        }
        log_info("installer: wrote %s %s to %s", kind(o->secret), o->name, dir);
        return 0;
}

static int write_manifest(const char *dir, const char *pod, const char *data, size_t len)
{
        _cleanup_free_ char *p = strdup_printf("%s/%s.yaml", dir, pod);
        int r;

        if (!p)
                return -ENOMEM;
        if ((r = host_mkdir_p(dir, 0755)) < 0)
                return log_error_errno(r, "installer: cannot create %s", dir);
        if ((r = write_file_atomic(p, data, len, 0644)) < 0)
                return log_error_errno(r, "installer: cannot write %s", p);
        log_info("installer: wrote %s", p);
        return 0;
}

static int pod_manifest(Installer *in, char **ret, size_t *ret_len)
{
        const Flags *f = in->f;
        _cleanup_free_ char *name = strdup_printf("%s-%u", f->pod, f->revision);
        char rev[16];
        int r;

        if (!name)
                return -ENOMEM;
        Object *o = find_object(in, name, false);
        if (!o) {
                /* Not in --configmaps: fetch it for pod.yaml only. */
                if ((r = fetch_one(in, f->pod, false, false, false)) < 0)
                        return r;
                o = &in->objects[in->n_objects - 1];
                o->dir_name = mfree(o->dir_name); /* not written under configmaps/ */
        }
        for (size_t i = 0; i < o->n_files; i++) {
                if (!streq(o->files[i].key, "pod.yaml"))
                        continue;
                (void) snprintf(rev, sizeof rev, "%u", f->revision);
                r = nodecmd_substitute(o->files[i].data, o->files[i].len, rev, f->node_name, ret, ret_len);
                return r < 0 ? log_error_errno(r, "out of memory") : 0;
        }
        return log_error_errno(ENOENT, "installer: ConfigMap %s/%s has no key pod.yaml", f->namespace, name);
}

/* ---- the quorum guard ---- */

/* The PEMs the guard talks to etcd with, from the objects this run fetched:
 * the CA bundle that signs etcd's serving certificates and this node's peer
 * certificate (etcd issues those for server and client use). */
#define GUARD_CA_OBJECT   CM_ETCD_ALL_BUNDLES
#define GUARD_CA_KEY      "server-ca-bundle.crt"
#define GUARD_CERT_OBJECT SECRET_ETCD_ALL_CERTS
#define GUARD_CALL        (3 * USEC_PER_SEC)
#define GUARD_RETRY       (2 * USEC_PER_SEC)

static char *fetched_key(Installer *in, const char *list_name, bool secret, const char *key)
{
        for (size_t i = 0; i < in->n_objects; i++) {
                const Object *o = &in->objects[i];
                if (!o->present || o->secret != secret || !streq_ptr(o->dir_name, list_name))
                        continue;
                for (size_t k = 0; k < o->n_files; k++)
                        if (streq(o->files[k].key, key))
                                return strndup(o->files[k].data, o->files[k].len);
        }
        return NULL;
}

static int guard_tls(Installer *in, HttpTls *tls)
{
        _cleanup_free_ char *crt = strdup_printf("etcd-peer-%s.crt", in->f->node_name),
                            *key = strdup_printf("etcd-peer-%s.key", in->f->node_name);
        if (!crt || !key)
                return -ENOMEM;
        *tls = (HttpTls){.ca_pem = fetched_key(in, GUARD_CA_OBJECT, false, GUARD_CA_KEY),
                         .cert_pem = fetched_key(in, GUARD_CERT_OBJECT, true, crt),
                         .key_pem = fetched_key(in, GUARD_CERT_OBJECT, true, key)};
        if (tls->ca_pem && tls->cert_pem && tls->key_pem)
                return 0;
        log_error(
                "installer: --etcd-endpoints needs ConfigMap %s (key %s) and Secret %s (keys %s, %s) among "
                "the objects this run fetches (list them in --configmaps/--cert-configmaps and "
                "--secrets/--cert-secrets); nothing was written to %s",
                GUARD_CA_OBJECT, GUARD_CA_KEY, GUARD_CERT_OBJECT, crt, key, in->f->manifest_dir);
        return -ENOENT;
}

/* One look: the member list from the first seed that answers, /health of
 * every started member at once. *ret_why says what a restart would cost
 * when it would cost quorum. */
static int guard_look(Installer *in, EtcdClient *c, bool *ret_ok, char *why, size_t n)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
        _cleanup_free_ EtcdSyncCall **calls = NULL;
        _cleanup_free_ int *health = NULL;
        const char *self = in->f->node_name;
        int r = -EHOSTDOWN;

        for (size_t i = 0; i < in->f->etcd_endpoints.n && !l; i++) {
                r = etcd_sync_member_list(c, in->f->etcd_endpoints.v[i], GUARD_CALL, &l);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        log_debug("installer: no member list from %s: %s", in->f->etcd_endpoints.v[i],
                                  etcd_strerror(r));
        }
        if (!l) {
                /* No seed answers: no member can be counted on, so none is lost either; but the
                 * seeds may just be wrong, so this is said, and only a member list decides. */
                (void) snprintf(why, n, "no etcd member of --etcd-endpoints answers (%s)", etcd_strerror(r));
                *ret_ok = false;
                return 0;
        }
        calls = calloc(MAX(l->n_members, (size_t) 1), sizeof *calls);
        health = calloc(MAX(l->n_members, (size_t) 1), sizeof *health);
        if (!calls || !health)
                return -ENOMEM;
        for (size_t i = 0; i < l->n_members; i++) {
                health[i] = -EINPROGRESS; /* not started: serves nothing */
                if (!etcd_member_is_started(&l->members[i]))
                        continue;
                if (!(calls[i] = etcd_sync_call_new()))
                        r = -ENOMEM;
                else if ((r = etcd_health_reads(c, l->members[i].client_urls[0], GUARD_CALL,
                                                etcd_sync_on_call, calls[i])) < 0)
                        calls[i] = (etcd_sync_call_free(calls[i]), NULL);
                health[i] = r < 0 ? r : -EINPROGRESS;
        }
        for (size_t i = 0; i < l->n_members; i++)
                if (calls[i]) { /* all run at once: the loop serves every call while it waits on one */
                        health[i] = etcd_sync_wait(etcd_client_get_loop(c), &calls[i],
                                                   GUARD_CALL + USEC_PER_SEC);
                        etcd_sync_call_free(calls[i]);
                }

        size_t up = 0, voters = 0, q = 0, off;
        const EtcdMember *me = NULL;
        *ret_ok = nodecmd_restart_keeps_quorum(l, health, self, &up, &voters, &q, &me);
        if (!*ret_ok && in->f->sole_voter_may_restart && voters == 1 && me) {
                log_warning("installer: restarting etcd member %s, the only voting member: etcd is down "
                            "until it is back (--etcd-sole-voter-may-restart: the unsafe non-HA override)",
                            self);
                *ret_ok = true;
                return 0;
        }
        if (*ret_ok) {
                if (me)
                        log_info("installer: restarting etcd member %s keeps quorum: %zu of %zu voting "
                                 "members stay up, quorum is %zu",
                                 self, up, voters, q);
                else {
                        const EtcdMember *m = etcd_member_list_find_by_name(l, self);
                        log_info("installer: etcd member %s %s; restarting it costs quorum nothing", self,
                                 !m              ? "does not exist (no started member has that name)"
                                 : m->is_learner ? "is a learner"
                                                 : "does not answer (it is down already)");
                }
                return 0;
        }
        off = (size_t) MAX(snprintf(why, n,
                                    "restarting etcd member %s now would leave %zu of %zu voting "
                                    "members up, quorum is %zu (down:",
                                    self, up, voters, q),
                           0);
        for (size_t i = 0; i < l->n_members && off < n; i++) {
                char hex[17];
                if (l->members[i].is_learner || &l->members[i] == me || health[i] == 0)
                        continue;
                off += (size_t) MAX(
                        snprintf(why + off, n - off, " %s (%s)",
                                 l->members[i].name ? l->members[i].name
                                                    : etcd_id_to_hex(l->members[i].id, hex),
                                 health[i] == -EINPROGRESS ? "not started" : etcd_strerror(health[i])),
                        0);
        }
        if (off < n)
                (void) snprintf(why + off, n - off, ")");
        return 0;
}

/* Waits until restarting this node's etcd member keeps quorum, up to the
 * deadline. The view is taken right before the manifest is written, so a
 * voter that went down after the operator chose this node is seen here. */
static int quorum_guard(Installer *in)
{
        _cleanup_(host_tls_done) HttpTls tls = {};
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        char why[1024] = "", said[1024] = "";
        int r;

        if (in->f->etcd_endpoints.n == 0)
                return 0;
        if ((r = guard_tls(in, &tls)) < 0)
                return r == -ENOMEM ? log_error_errno(r, "out of memory") : r;
        if (!(c = etcd_client_new(in->loop, &tls)) ||
            etcd_client_set_endpoints(c, in->f->etcd_endpoints.v, in->f->etcd_endpoints.n) < 0 ||
            etcd_client_set_aliases(c, in->f->aliases, in->f->n_aliases) < 0)
                return log_error_errno(ENOMEM, "out of memory");
        for (;;) {
                bool ok = false;
                if ((r = guard_look(in, c, &ok, why, sizeof why)) < 0)
                        return log_error_errno(r, "out of memory");
                if (ok)
                        return 0;
                if (!streq(why, said)) {
                        log_warning("installer: waiting: %s", why);
                        (void) snprintf(said, sizeof said, "%s", why);
                }
                if (now_usec(CLOCK_MONOTONIC) + GUARD_RETRY >= in->deadline) {
                        log_error(
                                "installer: not installing revision %u on node %s: %s. Nothing was written "
                                "to %s; the operator retries this install",
                                in->f->revision, in->f->node_name, why, in->f->manifest_dir);
                        return -ETIMEDOUT;
                }
                (void) usleep(GUARD_RETRY);
        }
}

static int installer_run(const Flags *f)
{
        _cleanup_(installer_done) Installer in = {.f = f};
        _cleanup_free_ char *err = NULL, *manifest = NULL;
        KubeConfig *cfg = NULL;
        size_t manifest_len = 0;
        int r;

        r = kube_config_load(f->kubeconfig, NULL, &cfg, &err);
        if (r < 0) {
                log_error("installer: %s", err ? err : strerror(-r));
                return EXIT_USAGE;
        }
        in.loop = nodecmd_loop_new();
        in.client = in.loop ? kube_client_new(in.loop, cfg) : NULL;
        if (!in.client) {
                kube_config_free(cfg);
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        }
        in.deadline = now_usec(CLOCK_MONOTONIC) + f->timeout;
        log_info("installer: installing revision %u of %s/%s on node %s", f->revision, f->namespace, f->pod,
                 f->node_name);

        /* Everything from the API first, checked; then the disk. */
        if (fetch_all(&in) < 0 || pod_manifest(&in, &manifest, &manifest_len) < 0)
                return EXIT_RUNTIME;

        (void) snprintf(in.revision_dir, sizeof in.revision_dir, "%s/%s-%u", f->resource_dir, f->pod,
                        f->revision);
        for (size_t i = 0; i < in.n_objects; i++) {
                Object *o = &in.objects[i];
                if (!o->present || !o->dir_name)
                        continue;
                if (substitute_words(o, f) < 0 ||
                    write_object(o->cert ? f->cert_dir : in.revision_dir, o) < 0)
                        return EXIT_RUNTIME;
        }
        /* The manifest is what restarts etcd on this node: the quorum guard goes last. */
        if (write_manifest(in.revision_dir, f->pod, manifest, manifest_len) < 0 || quorum_guard(&in) < 0 ||
            write_manifest(f->manifest_dir, f->pod, manifest, manifest_len) < 0)
                return EXIT_RUNTIME;
        log_info("installer: revision %u of %s installed on node %s", f->revision, f->pod, f->node_name);
        return EXIT_OK;
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator installer [FLAGS]\n"
                "\n"
                "Installs revision N of a static pod on this node: copies the revisioned ConfigMaps and\n"
                "Secrets (<name>-N) to <resource-dir>/<pod>-N/{configmaps,secrets}/<name>/<key>, the\n"
                "cert copies (unrevisioned) to <cert-dir>/{configmaps,secrets}/<name>/<key>, then writes\n"
                "pod.yaml of ConfigMap <pod>-N with REVISION, NODE_NAME and NODE_ENVVAR_NAME replaced to\n"
                "<pod-manifest-dir>/<pod>.yaml, last.\n"
                "\n"
                "  --revision N                     the revision to install (required)\n"
                "  --namespace NS                   namespace of the ConfigMaps and Secrets (required)\n"
                "  --pod NAME                       ConfigMap holding pod.yaml, e.g. etcd-pod (required)\n"
                "  --node-name NAME                 this node (default: $NODE_NAME)\n"
                "  --configmaps A,B                 required revisioned ConfigMaps\n"
                "  --secrets A,B                    required revisioned Secrets\n"
                "  --optional-configmaps A,B        revisioned ConfigMaps skipped when absent\n"
                "  --optional-secrets A,B           revisioned Secrets skipped when absent\n"
                "  --cert-configmaps A,B            required unrevisioned ConfigMaps for --cert-dir\n"
                "  --cert-secrets A,B               required unrevisioned Secrets for --cert-dir\n"
                "  --optional-cert-configmaps A,B   unrevisioned ConfigMaps skipped when absent\n"
                "  --optional-cert-secrets A,B      unrevisioned Secrets skipped when absent\n"
                "  --resource-dir DIR               e.g. /etc/kubernetes/static-pod-resources (required)\n"
                "  --pod-manifest-dir DIR           e.g. /etc/kubernetes/manifests (required)\n"
                "  --cert-dir DIR                   e.g. .../static-pod-resources/etcd-certs (required\n"
                "                                   with any --*cert-* list)\n"
                "  --etcd-address-alias NEW=OLD     (repeatable) a member at NEW may serve a certificate\n"
                "                                   for OLD (its master moved): checked for OLD there when\n"
                "                                   it is not one for NEW\n"
                "  --etcd-endpoints URL,...         the quorum guard: before the manifest, which restarts\n"
                "                                   this node's etcd member, is written, wait until the\n"
                "                                   other voting members that answer /health make quorum\n"
                "                                   without it (member list from the first URL that\n"
                "                                   answers; TLS: etcd-all-bundles' server-ca-bundle.crt\n"
                "                                   and etcd-all-certs' etcd-peer-<node> among the\n"
                "                                   fetched objects). Without it: no guard\n"
                "  --etcd-sole-voter-may-restart    the guard lets this node's member restart while it\n"
                "                                   is the only voting member (etcd stops until it is\n"
                "                                   back: the unsafe non-HA override of the disaster-\n"
                "                                   recovery runbooks); with two voters or more, quorum\n"
                "                                   is kept as ever\n"
                "  --timeout-duration D             give up after D (default: 120s)\n"
                "  --kubeconfig PATH                kubeconfig (default: $KUBECONFIG, in-cluster)\n"
                "  -v=N                             log verbosity (4 and up: debug)\n"
                "  -h, --help                       this text\n"
                "\n"
                "Lists may repeat and hold comma-separated names.\n"
                "Exit codes: 0 installed, 1 runtime failure (nothing partial is left as the manifest),\n"
                "2 usage error.\n");
}

#define usage_error(...) cmd_usage_error("installer", __VA_ARGS__)

/* Every value that becomes a path component or an object name, checked before any I/O. */
static int validate(Flags *f)
{
        bool any_cert = false;

        if (!f->revision_s)
                return usage_error("--revision is required (the revision number to install, e.g. 3)");
        if (nodecmd_parse_revision(f->revision_s, &f->revision) < 0)
                return usage_error("--revision \"%s\" is not a revision number (1 to 2147483647)",
                                   f->revision_s);
        if (!f->namespace)
                return usage_error("--namespace is required (e.g. openshift-etcd)");
        if (!f->pod)
                return usage_error("--pod is required (the ConfigMap holding pod.yaml, e.g. etcd-pod)");
        if (!dns1123_label_is_valid(f->namespace))
                return usage_error("--namespace \"%s\" is not a namespace name (DNS-1123 label, e.g. "
                                   "openshift-etcd)",
                                   f->namespace);
        if (!dns1123_subdomain_is_valid(f->pod) || strlen(f->pod) > 240)
                return usage_error("--pod \"%s\" is not a ConfigMap name (DNS-1123, e.g. etcd-pod)", f->pod);
        if (!f->node_name || !dns1123_subdomain_is_valid(f->node_name))
                return usage_error("--node-name \"%s\" is not a node name (DNS-1123 subdomain); pass "
                                   "--node-name or set NODE_NAME",
                                   strempty(f->node_name));
        for (size_t l = 0; l < _L_MAX; l++)
                for (size_t i = 0; i < f->lists[l].n; i++) {
                        const char *n = f->lists[l].v[i];
                        any_cert = any_cert || lists[l].cert;
                        if (!dns1123_subdomain_is_valid(n) || strlen(n) > 240)
                                return usage_error("--%s: \"%s\" is not a %s name (DNS-1123 subdomain, "
                                                   "no \"/\" or \"..\")",
                                                   lists[l].flag, n, kind(lists[l].secret));
                }
        if (!f->resource_dir || !*f->resource_dir)
                return usage_error("--resource-dir is required (e.g. /etc/kubernetes/static-pod-resources)");
        if (!f->manifest_dir || !*f->manifest_dir)
                return usage_error("--pod-manifest-dir is required (e.g. /etc/kubernetes/manifests)");
        for (size_t i = 0; i < f->etcd_endpoints.n; i++)
                if (!startswith(f->etcd_endpoints.v[i], "https://") || strlen(f->etcd_endpoints.v[i]) < 9)
                        return usage_error("--etcd-endpoints: \"%s\" is not an https:// URL (e.g. "
                                           "https://10.0.0.5:2379)",
                                           f->etcd_endpoints.v[i]);
        if (any_cert && (!f->cert_dir || !*f->cert_dir))
                return usage_error("--cert-dir is required with --cert-configmaps/--cert-secrets (e.g. "
                                   "/etc/kubernetes/static-pod-resources/etcd-certs)");
        return 0;
}

static int installer_main(int argc, char *argv[])
{
        enum {
                ARG_REVISION = 0x100,
                ARG_NAMESPACE,
                ARG_POD,
                ARG_RESOURCE_DIR,
                ARG_MANIFEST_DIR,
                ARG_CERT_DIR,
                ARG_TIMEOUT,
                ARG_NODE,
                ARG_KUBECONFIG,
                ARG_ETCD_ENDPOINTS,
                ARG_ETCD_ALIAS,
                ARG_SOLE_VOTER,
                ARG_LIST, /* + list index */
        };
        static const struct option options[] = {
                {"revision", required_argument, NULL, ARG_REVISION},
                {"namespace", required_argument, NULL, ARG_NAMESPACE},
                {"pod", required_argument, NULL, ARG_POD},
                {"resource-dir", required_argument, NULL, ARG_RESOURCE_DIR},
                {"pod-manifest-dir", required_argument, NULL, ARG_MANIFEST_DIR},
                {"cert-dir", required_argument, NULL, ARG_CERT_DIR},
                {"timeout-duration", required_argument, NULL, ARG_TIMEOUT},
                {"node-name", required_argument, NULL, ARG_NODE},
                {"kubeconfig", required_argument, NULL, ARG_KUBECONFIG},
                {"etcd-endpoints", required_argument, NULL, ARG_ETCD_ENDPOINTS},
                {"etcd-address-alias", required_argument, NULL, ARG_ETCD_ALIAS},
                {"etcd-sole-voter-may-restart", no_argument, NULL, ARG_SOLE_VOTER},
                {"configmaps", required_argument, NULL, ARG_LIST + L_CM},
                {"secrets", required_argument, NULL, ARG_LIST + L_SECRET},
                {"optional-configmaps", required_argument, NULL, ARG_LIST + L_OPT_CM},
                {"optional-secrets", required_argument, NULL, ARG_LIST + L_OPT_SECRET},
                {"cert-configmaps", required_argument, NULL, ARG_LIST + L_CERT_CM},
                {"cert-secrets", required_argument, NULL, ARG_LIST + L_CERT_SECRET},
                {"optional-cert-configmaps", required_argument, NULL, ARG_LIST + L_OPT_CERT_CM},
                {"optional-cert-secrets", required_argument, NULL, ARG_LIST + L_OPT_CERT_SECRET},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        Flags f = {.timeout = 120 * USEC_PER_SEC, .node_name = getenv("NODE_NAME")};
        int c, r = EXIT_OK;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while (r == EXIT_OK && (c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        r = -1;
                        break;
                case ARG_REVISION:
                        f.revision_s = optarg;
                        break;
                case ARG_NAMESPACE:
                        f.namespace = optarg;
                        break;
                case ARG_POD:
                        f.pod = optarg;
                        break;
                case ARG_RESOURCE_DIR:
                        f.resource_dir = optarg;
                        break;
                case ARG_MANIFEST_DIR:
                        f.manifest_dir = optarg;
                        break;
                case ARG_CERT_DIR:
                        f.cert_dir = optarg;
                        break;
                case ARG_NODE:
                        f.node_name = optarg;
                        break;
                case ARG_KUBECONFIG:
                        f.kubeconfig = optarg;
                        break;
                case ARG_SOLE_VOTER:
                        f.sole_voter_may_restart = true;
                        break;
                case ARG_ETCD_ALIAS: {
                        const char *eq = strchr(optarg, '=');
                        EtcdAddressAlias *a =
                                f.n_aliases < ELEMENTSOF(f.aliases) ? &f.aliases[f.n_aliases] : NULL;
                        if (!a || !eq || (size_t) (eq - optarg) >= sizeof a->serves_on ||
                            strlen(eq + 1) >= sizeof a->named) {
                                r = usage_error("--etcd-address-alias: \"%s\" is not NEW=OLD (two IP "
                                                "addresses, at most %zu of them)",
                                                optarg, ELEMENTSOF(f.aliases));
                                break;
                        }
                        (void) snprintf(a->serves_on, sizeof a->serves_on, "%.*s", (int) (eq - optarg),
                                        optarg);
                        (void) snprintf(a->named, sizeof a->named, "%s", eq + 1);
                        /* Checked as the client will take them. */
                        if (etcd_address_alias_is_valid(a))
                                f.n_aliases++;
                        else
                                r = usage_error("--etcd-address-alias: \"%s\" is not NEW=OLD (two IP "
                                                "addresses)",
                                                optarg);
                        break;
                }
                case ARG_ETCD_ENDPOINTS:
                        if (strlist_add_csv(&f.etcd_endpoints, optarg) < 0) {
                                log_error("out of memory");
                                r = EXIT_RUNTIME;
                        }
                        break;
                case ARG_TIMEOUT:
                        if (parse_duration(optarg, &f.timeout) < 0 || f.timeout == 0)
                                r = usage_error("--timeout-duration: \"%s\" is not a duration such as 120s "
                                                "or 2m",
                                                optarg);
                        break;
                default:
                        if (c >= ARG_LIST && c < ARG_LIST + _L_MAX) {
                                if (strlist_add_csv(&f.lists[c - ARG_LIST], optarg) < 0) {
                                        log_error("out of memory");
                                        r = EXIT_RUNTIME;
                                }
                                break;
                        }
                        nodecmd_flag_error("installer", c, argv);
                        r = EXIT_USAGE;
                }
        if (r == EXIT_OK && optind < argc)
                r = usage_error("unexpected argument \"%s\"; see --help", argv[optind]);
        if (r == EXIT_OK)
                r = validate(&f);
        if (r == EXIT_OK)
                r = installer_run(&f);
        for (size_t l = 0; l < _L_MAX; l++)
                strlist_done(&f.lists[l]);
        strlist_done(&f.etcd_endpoints);
        return r < 0 ? EXIT_OK : r;
}

const Command cmd_installer = {
        .name = "installer",
        .summary = "install one revision of the etcd static pod on this node",
        .run = installer_main,
};
