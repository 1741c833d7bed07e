/* Controller test fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/json.h"
#include "controller-fixture.h"
#include "pki/pki.h"
#include "runtime/apply.h"

Fixture *fixture_new(void)
{
        Fixture *f = calloc(1, sizeof *f);
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        assert_non_null(f);
        assert_non_null(cfg);
        cfg->server = strdup("http://127.0.0.1:1");
        f->loop = loop_new();
        f->client = kube_client_new(f->loop, cfg);
        f->factory = informer_factory_new(f->client);
        /* Controllers see objects trimmed as the operator caches them. */
        informer_factory_set_transform(f->factory, operator_cache_transform);
        f->now = 1795305600ULL * USEC_PER_SEC;
        f->rv = 100;
        f->state.etcd_image = "quay.io/openshift/etcd@sha256:0123";
        f->state.operator_image = "quay.io/openshift/cluster-etcd-operator@sha256:4567";
        f->state.machine = "x86_64"; /* the goldens', whatever this host is */
        return f;
}

void fixture_free(Fixture *f)
{
        if (!f)
                return;
        plan_done(&f->plan);
        pki_check_memo_free(f->state.check_memo);
        etcd_maint_log_free(f->state.maint);
        etcd_view_snapshot_unref(f->snap);
        informer_factory_free(f->factory);
        kube_client_free(f->client);
        loop_unref(f->loop);
        free(f);
}

static Informer *informer_of(Fixture *f, OperatorWatch w)
{
        const WatchSpec *ws = &operator_watches[w];
        Informer *inf =
                informer_factory_get(f->factory, ws->res, ws->namespace, ws->label_selector, ws->name);
        assert_non_null(inf);
        return inf;
}

static void apply(Fixture *f, OperatorWatch w, const char *type, cJSON *obj)
{
        char rv[32];
        cJSON *md = json_ensure_object(obj, "metadata");
        assert_non_null(md);
        if (!json_get_string(md, "resourceVersion")) {
                (void) snprintf(rv, sizeof rv, "%llu", (unsigned long long) ++f->rv);
                assert_int_equal(json_set_string(md, "resourceVersion", rv), 0);
        }
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", type);
        cJSON_AddItemToObject(line, "object", obj);
        assert_int_equal(informer_apply_watch_line(informer_of(f, w), line), 0);
        cJSON_Delete(line);
}

void fixture_add(Fixture *f, OperatorWatch w, const char *json)
{
        cJSON *obj = NULL;
        if (json_parse(json, strlen(json), &obj) < 0)
                fail_msg("fixture JSON does not parse: %s", json);
        apply(f, w, "ADDED", obj);
}

void fixture_delete(Fixture *f, OperatorWatch w, const char *ns, const char *name)
{
        cJSON *obj = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(obj, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        if (ns)
                cJSON_AddStringToObject(md, "namespace", ns);
        apply(f, w, "DELETED", obj);
}

static void add_node(Fixture *f, OperatorWatch w, const char *role, const char *name, const char *ip,
                     bool ready)
{
        char json[1024];
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
                "\"labels\":{\"node-role.kubernetes.io/%s\":\"\"}},\"status\":{\"addresses\":[{\"type\":"
                "\"InternalIP\",\"address\":\"%s\"},{\"type\":\"Hostname\",\"address\":\"%s\"}],"
                "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
                name, name, role, ip, name, ready ? "True" : "False");
        fixture_add(f, w, json);
}

void fixture_master(Fixture *f, const char *name, const char *ip, bool ready)
{
        add_node(f, W_MASTER_NODES, "master", name, ip, ready);
}

void fixture_arbiter(Fixture *f, const char *name, const char *ip, bool ready)
{
        add_node(f, W_ARBITER_NODES, "arbiter", name, ip, ready);
}

static EtcdViewSnapshot *snap_of(Fixture *f)
{
        if (!f->snap) {
                f->snap = calloc(1, sizeof *f->snap);
                f->snap->n_ref = 1;
                f->snap->cluster_id = 0x1234;
                f->snap->members = calloc(1, sizeof *f->snap->members);
                f->snap->members->members = calloc(16, sizeof(EtcdMember));
                f->snap->states = calloc(16, sizeof(EtcdMemberState));
        }
        return f->snap;
}

void fixture_member(Fixture *f, uint64_t id, const char *name, const char *ip, bool learner, bool started,
                    bool healthy)
{
        EtcdViewSnapshot *s = snap_of(f);
        size_t i = s->members->n_members++;
        EtcdMember *m = &s->members->members[i];
        s->n_members = s->members->n_members;
        assert_true(i < 16);
        *m = (EtcdMember){.id = id, .is_learner = learner};
        m->peer_urls = calloc(2, sizeof(char *));
        m->peer_urls[0] =
                strdup_printf(strchr(ip, ':') && ip[0] != '[' ? "https://[%s]:2380" : "https://%s:2380", ip);
        m->n_peer_urls = 1;
        m->client_urls = calloc(2, sizeof(char *));
        if (started) {
                m->name = strdup(name);
                m->client_urls[0] = strdup_printf("https://%s:2379", ip);
                m->n_client_urls = 1;
        }
        s->states[i] =
                (EtcdMemberState){.id = id,
                                  .member = m,
                                  .name = m->name,
                                  .client_url = started ? m->client_urls[0] : NULL,
                                  .started = started,
                                  .is_learner = learner,
                                  .healthy = started && healthy,
                                  .error = started && healthy ? 0 : -ECONNREFUSED,
                                  .has_status = started,
                                  .status = {.cluster_id = 0x1234, .member_id = id, .is_learner = learner}};
        if (!learner && started && healthy && !s->leader)
                s->leader = id;
        for (size_t k = 0; k <= i; k++)
                s->states[k].status.leader = s->leader;
}

void fixture_no_etcd(Fixture *f)
{
        etcd_view_snapshot_unref(TAKE_PTR(f->snap));
}

void fixture_etcd_error(Fixture *f, int error)
{
        snap_of(f)->error = error;
}

int fixture_sync(Fixture *f, const ControllerSpec *spec)
{
        plan_done(&f->plan);
        f->plan = (Plan){};
        SyncContext ctx = {.spec = spec,
                           .key = "key",
                           .now = f->now,
                           .informers = f->factory,
                           .etcd = f->snap,
                           .state = &f->state};
        int r = spec->sync(&ctx, &f->plan);
        if (r >= 0 && f->plan.error < 0)
                fail_msg("%s: plan builder error %d", spec->name, f->plan.error);
        return r;
}

const Intent *fixture_find(Fixture *f, IntentType t, const char *plural, const char *name)
{
        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                if (in->type == t && (!plural || (in->res && streq(in->res->plural, plural))) &&
                    (!name || streq_ptr(in->name, name)))
                        return in;
        }
        return NULL;
}

const Intent *fixture_condition(Fixture *f, const char *type)
{
        for (size_t i = 0; i < f->plan.n; i++)
                if (f->plan.intents[i].type == INTENT_CONDITION &&
                    streq_ptr(f->plan.intents[i].cond_type, type))
                        return &f->plan.intents[i];
        return NULL;
}

size_t fixture_count(Fixture *f, IntentType t)
{
        size_t n = 0;
        for (size_t i = 0; i < f->plan.n; i++)
                n += f->plan.intents[i].type == t;
        return n;
}

void fixture_expect_condition(Fixture *f, const char *type, const char *status, const char *reason)
{
        const Intent *c = fixture_condition(f, type);
        if (!c)
                fail_msg("no condition %s in the plan", type);
        if (!streq_ptr(c->cond_status, status) || !streq_ptr(c->cond_reason, reason))
                fail_msg("condition %s: got %s/%s (%s), want %s/%s", type, c->cond_status, c->cond_reason,
                         strempty(c->cond_message), status, reason);
}

const KubeObject *fixture_get(Fixture *f, OperatorWatch w, const char *ns, const char *name)
{
        return informer_get(informer_of(f, w), ns, name);
}

static EtcdMemberState *state_of(Fixture *f, uint64_t id)
{
        EtcdViewSnapshot *s = snap_of(f);
        for (size_t i = 0; i < s->members->n_members; i++)
                if (s->states[i].id == id)
                        return &s->states[i];
        fail_msg("no member %llx in the fixture", (unsigned long long) id);
        return NULL;
}

void fixture_member_set(Fixture *f, uint64_t id, bool learner, bool healthy)
{
        EtcdMemberState *m = state_of(f, id);
        m->is_learner = learner;
        m->status.is_learner = learner;
        ((EtcdMember *) m->member)->is_learner = learner;
        m->healthy = healthy;
        m->error = healthy ? 0 : -ECONNREFUSED;
}

void fixture_member_db(Fixture *f, uint64_t id, uint64_t db_size, uint64_t in_use, uint64_t revision)
{
        EtcdMemberState *m = state_of(f, id);
        m->status.db_size = db_size;
        m->status.db_size_in_use = in_use;
        m->status.revision = revision;
}

void fixture_leader(Fixture *f, uint64_t id)
{
        EtcdViewSnapshot *s = snap_of(f);
        s->leader = id;
        for (size_t i = 0; i < s->members->n_members; i++)
                s->states[i].status.leader = id;
}

void fixture_alarm(Fixture *f, uint64_t id, const char *alarm)
{
        EtcdViewSnapshot *s = snap_of(f);
        if (!s->alarms)
                s->alarms = calloc(8, sizeof *s->alarms);
        assert_non_null(s->alarms);
        assert_true(s->n_alarms < 8);
        s->alarms[s->n_alarms].member_id = id;
        (void) snprintf(s->alarms[s->n_alarms].alarm, sizeof s->alarms[0].alarm, "%s", alarm);
        s->n_alarms++;
}

void fixture_maint(Fixture *f, EtcdMaintKind kind, uint64_t id, uint64_t revision, usec_t finished,
                   int error)
{
        if (!f->state.maint)
                f->state.maint = etcd_maint_log_new();
        assert_non_null(f->state.maint);
        EtcdMaintRecord r = {.kind = kind,
                             .member_id = id,
                             .revision = revision,
                             .started = finished - USEC_PER_SEC,
                             .finished = finished,
                             .error = error};
        etcd_maint_log_add(f->state.maint, &r);
}

void fixture_move_leader(Fixture *f, uint64_t from, uint64_t to, usec_t finished, int error)
{
        fixture_maint(f, ETCD_MAINT_MOVE_LEADER, to, 0, finished, error);
        ((EtcdMaintRecord *) etcd_maint_log_at(f->state.maint, etcd_maint_log_size(f->state.maint) - 1))
                ->from_id = from;
}

void fixture_member_version(Fixture *f, uint64_t id, const char *version)
{
        EtcdViewSnapshot *s = snap_of(f);
        for (size_t i = 0; i < s->members->n_members; i++)
                if (s->states[i].id == id) {
                        (void) snprintf(s->states[i].status.version, sizeof s->states[i].status.version,
                                        "%s", version);
                        return;
                }
        fail_msg("no member %llx in the fixture", (unsigned long long) id);
}

static void replace_item(cJSON *obj, const char *key, const cJSON *value)
{
        cJSON *copy = cJSON_Duplicate(value, true);
        assert_non_null(copy);
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
        cJSON_AddItemToObject(obj, key, copy);
}

/* RFC 7386 on objects: null deletes, objects merge, everything else replaces. */
static void merge_patch(cJSON *target, const cJSON *patch)
{
        cJSON *p;
        JSON_ARRAY_FOREACH (p, patch) {
                cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);
                if (cJSON_IsNull(p))
                        cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
                else if (cJSON_IsObject(p) && cJSON_IsObject(t))
                        merge_patch(t, p);
                else if (cJSON_IsObject(p)) {
                        cJSON *o = cJSON_CreateObject();
                        merge_patch(o, p);
                        cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
                        cJSON_AddItemToObject(target, p->string, o);
                } else
                        replace_item(target, p->string, p);
        }
}

static cJSON *carry_out(const Intent *in, const KubeObject *cur)
{
        cJSON *obj = NULL;
        const char *want_rv = json_get_string(in->object, "metadata.resourceVersion");

        if ((in->type == INTENT_UPDATE || in->type == INTENT_UPDATE_STATUS) &&
            (!cur || (want_rv && !streq(want_rv, kube_object_rv_string(cur)))))
                fail_msg("%s %s: object missing or resourceVersion %s is stale",
                         intent_type_to_string(in->type), in->name, strempty(want_rv));
        switch (in->type) {
        case INTENT_CREATE:
                if (cur)
                        fail_msg("create %s: already exists", in->name);
                obj = cJSON_Duplicate(in->object, true);
                break;
        case INTENT_APPLY:
                obj = cur ? apply_merge(cur->json, in->object) : cJSON_Duplicate(in->object, true);
                break;
        case INTENT_UPDATE:
                obj = cJSON_Duplicate(in->object, true);
                cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
                if (json_get(cur->json, "status"))
                        replace_item(obj, "status", json_get(cur->json, "status"));
                break;
        case INTENT_UPDATE_STATUS:
                obj = cJSON_Duplicate(cur->json, true);
                replace_item(obj, "status", json_get(in->object, "status"));
                break;
        case INTENT_PATCH:
                if (!cur || in->patch_type != KUBE_PATCH_MERGE)
                        fail_msg("patch %s: object missing or not a merge patch", in->name);
                obj = cJSON_Duplicate(cur->json, true);
                merge_patch(obj, in->object);
                break;
        default:
                return NULL;
        }
        assert_non_null(obj);
        cJSON_DeleteItemFromObjectCaseSensitive(json_ensure_object(obj, "metadata"), "resourceVersion");
        return obj;
}

size_t fixture_feed(Fixture *f, OperatorWatch w)
{
        const WatchSpec *ws = &operator_watches[w];
        size_t n = 0;

        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                if (!in->res || in->res != ws->res ||
                    (ws->namespace && !streq_ptr(in->namespace, ws->namespace)) ||
                    (ws->name && !streq_ptr(in->name, ws->name))) /* the server sends it that one alone */
                        continue;
                const KubeObject *cur = fixture_get(f, w, in->namespace, in->name);
                cJSON *obj = carry_out(in, cur);
                if (!obj)
                        continue;
                apply(f, w, cur ? "MODIFIED" : "ADDED", obj);
                n++;
        }
        return n;
}

/* ---- objects of informers outside the shared set (a controller's own watches) ---- */

static Informer *informer_at_selected(Fixture *f, const KubeResource *res, const char *ns, const char *sel)
{
        Informer *inf = informer_factory_get(f->factory, res, res->namespaced ? ns : NULL, sel, NULL);
        assert_non_null(inf);
        return inf;
}

static Informer *informer_at(Fixture *f, const KubeResource *res, const char *ns)
{
        return informer_at_selected(f, res, ns, NULL);
}

static void apply_at(Fixture *f, Informer *inf, const char *type, cJSON *obj)
{
        char rv[32];
        cJSON *md = json_ensure_object(obj, "metadata");
        assert_non_null(md);
        if (!json_get_string(md, "resourceVersion")) {
                (void) snprintf(rv, sizeof rv, "%llu", (unsigned long long) ++f->rv);
                assert_int_equal(json_set_string(md, "resourceVersion", rv), 0);
        }
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "type", type);
        cJSON_AddItemToObject(line, "object", obj);
        assert_int_equal(informer_apply_watch_line(inf, line), 0);
        cJSON_Delete(line);
}

void fixture_add_to(Fixture *f, const KubeResource *res, const char *ns, const char *json)
{
        cJSON *obj = NULL;
        if (json_parse(json, strlen(json), &obj) < 0)
                fail_msg("fixture JSON does not parse: %s", json);
        apply_at(f, informer_at(f, res, ns), "ADDED", obj);
}

void fixture_delete_from(Fixture *f, const KubeResource *res, const char *ns, const char *name)
{
        cJSON *obj = cJSON_CreateObject();
        cJSON *md = cJSON_AddObjectToObject(obj, "metadata");
        cJSON_AddStringToObject(md, "name", name);
        if (ns && res->namespaced)
                cJSON_AddStringToObject(md, "namespace", ns);
        apply_at(f, informer_at(f, res, ns), "DELETED", obj);
}

const KubeObject *fixture_get_from(Fixture *f, const KubeResource *res, const char *ns, const char *name)
{
        return informer_get(informer_at(f, res, ns), res->namespaced ? ns : NULL, name);
}

size_t fixture_feed_to(Fixture *f, const KubeResource *res, const char *ns)
{
        return fixture_feed_to_selected(f, res, ns, NULL);
}

size_t fixture_feed_to_selected(Fixture *f, const KubeResource *res, const char *ns, const char *selector)
{
        Informer *inf = informer_at_selected(f, res, ns, selector);
        size_t n = 0;

        for (size_t i = 0; i < f->plan.n; i++) {
                const Intent *in = &f->plan.intents[i];
                if (in->res != res || (res->namespaced && !streq_ptr(in->namespace, ns)))
                        continue;
                const KubeObject *cur = informer_get(inf, res->namespaced ? ns : NULL, in->name);
                cJSON *obj = carry_out(in, cur);
                if (!obj)
                        continue;
                apply_at(f, inf, cur ? "MODIFIED" : "ADDED", obj);
                n++;
        }
        return n;
}

void fixture_addf(Fixture *f, OperatorWatch w, const char *fmt, ...)
{
        va_list ap;
        char *json = NULL;
        va_start(ap, fmt);
        if (vasprintf(&json, fmt, ap) < 0)
                json = NULL;
        va_end(ap);
        assert_non_null(json);
        fixture_add(f, w, json);
        free(json);
}

void fixture_etcd_cr(Fixture *f, const char *spec, const char *status)
{
        fixture_addf(f, W_ETCD_CR,
                     "{\"apiVersion\":\"operator.openshift.io/v1\",\"kind\":\"Etcd\",\"metadata\":{\"name\":"
                     "\"cluster\",\"generation\":1},\"spec\":{\"managementState\":\"Managed\"%s%s},"
                     "\"status\":{%s}}",
                     spec ? "," : "", strempty(spec), strempty(status));
}

void fixture_etcd_pod(Fixture *f, const char *node, unsigned revision, bool ready)
{
        const char *r = ready ? "true" : "false";
        fixture_addf(
                f, W_ETCD_PODS,
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"etcd-%s\",\"namespace\":"
                "\"openshift-etcd\",\"uid\":\"mirror-%s-%u\",\"labels\":{\"app\":\"etcd\",\"k8s-app\":"
                "\"etcd\",\"etcd\":\"true\",\"revision\":\"%u\"},\"annotations\":{"
                "\"kubernetes.io/config.mirror\":\"hash-%u\"}},\"spec\":{\"nodeName\":\"%s\"},"
                "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}],"
                "\"containerStatuses\":[{\"name\":\"etcd\",\"ready\":%s,\"restartCount\":0,\"state\":"
                "{\"running\":{}}},{\"name\":\"etcd-readyz\",\"ready\":%s,\"restartCount\":0,"
                "\"state\":{\"running\":{}}}]}}",
                node, node, revision, revision, revision, node, ready ? "True" : "False", r, r);
}

void fixture_all_certs(Fixture *f, const char *node, const char *secret, const char *const *ips)
{
        usec_t now = now_usec(CLOCK_REALTIME);
        _cleanup_(pki_pair_freep) PkiPair *ca = NULL, *srv = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL, *b64 = NULL,
                            *cn = strdup_printf("system:etcd-server:%s", node);
        const char *dns[] = {"localhost", NULL};
        assert_int_equal(pki_ca_new("etcd-signer", 3600 * USEC_PER_SEC, PKI_KEY_ECDSA_P256, now, &ca), 0);
        PkiCertRequest req = {.profile = PKI_PROFILE_SERVER_CLIENT,
                              .cn = cn,
                              .dns = dns,
                              .ips = ips,
                              .validity = 3600 * USEC_PER_SEC,
                              .key_type = PKI_KEY_ECDSA_P256};
        assert_int_equal(pki_cert_issue(ca, &req, now, &srv), 0);
        assert_int_equal(pki_pair_to_pem(srv, &crt, &key), 0);
        assert_non_null(b64 = base64_encode(crt, strlen(crt)));
        fixture_addf(f, W_ETCD_SECRETS,
                     "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s\","
                     "\"namespace\":\"openshift-etcd\"},\"data\":{\"etcd-serving-%s.crt\":\"%s\","
                     "\"broken.crt\":\"bm90IGEgY2VydA==\"}}",
                     secret, node, b64);
}

void fixture_add_object(Fixture *f, OperatorWatch w, cJSON *obj)
{
        char *json = json_print(obj);
        assert_non_null(json);
        fixture_add(f, w, json);
        free(json);
        cJSON_Delete(obj);
}

static void shape_walk(const cJSON *j, const char *path, Buf *out)
{
        char line[1024];
        int k = 0;
        const cJSON *c;
        if (cJSON_IsString(j))
                (void) snprintf(line, sizeof line, "%s string\n", path);
        else if (cJSON_IsNumber(j))
                (void) snprintf(line, sizeof line, "%s number %g\n", path, j->valuedouble);
        else if (cJSON_IsBool(j))
                (void) snprintf(line, sizeof line, "%s bool %d\n", path, cJSON_IsTrue(j));
        else if (cJSON_IsNull(j))
                (void) snprintf(line, sizeof line, "%s null\n", path);
        else
                (void) snprintf(line, sizeof line, "%s %s\n", path, cJSON_IsArray(j) ? "array" : "object");
        assert_int_equal(buf_append(out, line, strlen(line)), 0);
        JSON_ARRAY_FOREACH (c, cJSON_IsArray(j) || cJSON_IsObject(j) ? j : NULL) {
                char sub[1024];
                if (cJSON_IsArray(j))
                        (void) snprintf(sub, sizeof sub, "%s[%d]", path, k++);
                else
                        (void) snprintf(sub, sizeof sub, "%s.%s", path, c->string);
                shape_walk(c, sub, out);
        }
}

char *fixture_shape(const cJSON *obj)
{
        Buf out = BUF_INIT(0);
        shape_walk(obj, "", &out);
        assert_int_equal(buf_append(&out, "", 1), 0);
        return out.data;
}
