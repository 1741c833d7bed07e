/* Controller test fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "controller-fixture.h"

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
        f->now = 1795305600ULL * USEC_PER_SEC;
        f->rv = 100;
        f->state.etcd_image = "quay.io/openshift/etcd@sha256:0123";
        f->state.operator_image = "quay.io/openshift/cluster-etcd-operator@sha256:4567";
        return f;
}

void fixture_free(Fixture *f)
{
        if (!f)
                return;
        plan_done(&f->plan);
        etcd_view_snapshot_unref(f->snap);
        informer_factory_free(f->factory);
        kube_client_free(f->client);
        loop_unref(f->loop);
        free(f);
}

static Informer *informer_of(Fixture *f, OperatorWatch w)
{
        const WatchSpec *ws = &operator_watches[w];
        Informer *inf = informer_factory_get(f->factory, ws->res, ws->namespace, ws->label_selector);
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

void fixture_master(Fixture *f, const char *name, const char *ip, bool ready)
{
        char json[1024];
        (void) snprintf(
                json, sizeof json,
                "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
                "\"labels\":{\"node-role.kubernetes.io/master\":\"\"}},\"status\":{\"addresses\":[{\"type\":"
                "\"InternalIP\",\"address\":\"%s\"},{\"type\":\"Hostname\",\"address\":\"%s\"}],"
                "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
                name, name, ip, name, ready ? "True" : "False");
        fixture_add(f, W_MASTER_NODES, json);
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
                f->state.snapshot = f->snap;
        }
        return f->snap;
}

void fixture_member(Fixture *f, uint64_t id, const char *name, const char *ip, bool learner, bool started,
                    bool healthy)
{
        EtcdViewSnapshot *s = snap_of(f);
        size_t i = s->members->n_members++;
        EtcdMember *m = &s->members->members[i];
        assert_true(i < 16);
        *m = (EtcdMember){.id = id, .is_learner = learner};
        m->peer_urls = calloc(2, sizeof(char *));
        m->peer_urls[0] = strdup_printf("https://%s:2380", ip);
        m->n_peer_urls = 1;
        m->client_urls = calloc(2, sizeof(char *));
        if (started) {
                m->name = strdup(name);
                m->client_urls[0] = strdup_printf("https://%s:2379", ip);
                m->n_client_urls = 1;
        }
        s->states[i] =
                (EtcdMemberState){.id = id,
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
        f->state.snapshot = NULL;
}

void fixture_etcd_error(Fixture *f, int error)
{
        snap_of(f)->error = error;
}

int fixture_sync(Fixture *f, const ControllerSpec *spec)
{
        plan_done(&f->plan);
        f->plan = (Plan){};
        SyncContext ctx = {.key = "key", .now = f->now, .informers = f->factory, .userdata = &f->state};
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
