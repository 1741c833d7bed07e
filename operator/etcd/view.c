/* The etcd view poller and snapshot queries. */
#include "view.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "quorum.h"

struct EtcdView {
        EtcdClient *client;
        usec_t period;
        usec_t started_at; /* CLOCK_MONOTONIC of etcd_view_start() */
        sd_event_source *timer;
        EtcdViewSnapshot *current;
        EtcdViewSnapshot *building;
        unsigned outstanding; /* per-member requests of the round in flight */
        bool in_round;
        bool again; /* a refresh was asked during the round */
        /* The alarm list goes through raft on 3.4 and can hang for the whole
         * request budget during an election. It runs beside the rounds, and
         * each snapshot carries the latest answer, so a slow alarm list never
         * holds back what the members said about their health. */
        bool alarms_pending;
        EtcdAlarm *alarms;
        size_t n_alarms;
        int alarms_error; /* -ENODATA until the first answer */
        EtcdViewFunc listener;
        void *userdata;
};

typedef struct MemberReq {
        EtcdView *view;
        EtcdViewSnapshot *snap; /* the round it belongs to (ref) */
        size_t index;           /* into states, or into strays for a stray's status */
} MemberReq;

static size_t n_members(const EtcdViewSnapshot *s)
{
        return s && s->states ? s->n_members : 0;
}

static void snapshot_free(EtcdViewSnapshot *s)
{
        for (size_t i = 0; i < n_members(s); i++)
                etcd_status_done(&s->states[i].status);
        free(s->states);
        for (size_t i = 0; s->strays && i < s->n_strays; i++)
                free(s->strays[i].url);
        free(s->strays);
        etcd_member_list_free(s->members);
        free(s->alarms);
        free(s->split_brain_detail);
        free(s);
}

EtcdViewSnapshot *etcd_view_snapshot_ref(const EtcdViewSnapshot *s)
{
        EtcdViewSnapshot *m = (EtcdViewSnapshot *) s;
        if (m)
                m->n_ref++;
        return m;
}

EtcdViewSnapshot *etcd_view_snapshot_unref(EtcdViewSnapshot *s)
{
        if (s && --s->n_ref == 0)
                snapshot_free(s);
        return NULL;
}

/* ---- queries ---- */

size_t etcd_view_count_voters(const EtcdViewSnapshot *s)
{
        size_t n = 0;
        for (size_t i = 0; i < n_members(s); i++)
                n += !s->states[i].is_learner;
        return n;
}

size_t etcd_view_count_healthy_voters(const EtcdViewSnapshot *s)
{
        size_t n = 0;
        for (size_t i = 0; i < n_members(s); i++)
                n += !s->states[i].is_learner && s->states[i].healthy;
        return n;
}

size_t etcd_view_count_reachable_voters(const EtcdViewSnapshot *s)
{
        size_t n = 0;
        for (size_t i = 0; i < n_members(s); i++) {
                const EtcdMemberState *st = &s->states[i];
                n += !st->is_learner && st->started &&
                     (st->healthy || st->error == -EAGAIN || st->has_status);
        }
        return n;
}

size_t etcd_view_quorum(const EtcdViewSnapshot *s)
{
        return etcd_quorum(etcd_view_count_voters(s));
}

int etcd_view_fault_tolerance(const EtcdViewSnapshot *s)
{
        return etcd_quorum_fault_tolerance(etcd_view_count_voters(s), etcd_view_count_healthy_voters(s));
}

bool etcd_view_is_fault_tolerant(const EtcdViewSnapshot *s)
{
        return etcd_view_count_healthy_voters(s) >= 3 && etcd_view_fault_tolerance(s) >= 1;
}

bool etcd_view_has_alarm(const EtcdViewSnapshot *s, const char *alarm)
{
        for (size_t i = 0; s && i < s->n_alarms; i++)
                if (streq(s->alarms[i].alarm, alarm))
                        return true;
        return false;
}

unsigned etcd_member_fragmented_percent(const EtcdMemberState *m)
{
        if (!m || !m->has_status || m->status.db_size == 0 || m->status.db_size_in_use >= m->status.db_size)
                return 0;
        uint64_t free_bytes = m->status.db_size - m->status.db_size_in_use;
        /* Rounded to the nearest percent, as upstream compares it. */
        return (unsigned) ((free_bytes * 200 / m->status.db_size + 1) / 2);
}

bool etcd_member_needs_defrag(const EtcdMemberState *m)
{
        return m && m->started && !m->is_learner && m->has_status &&
               m->status.db_size >= ETCD_DEFRAG_MIN_DB_SIZE &&
               etcd_member_fragmented_percent(m) >= ETCD_DEFRAG_MIN_FRAGMENTED_PERCENT;
}

bool etcd_view_all_healthy(const EtcdViewSnapshot *s)
{
        if (!s || s->error < 0 || s->split_brain || n_members(s) == 0 || etcd_view_has_alarm(s, "NOSPACE"))
                return false;
        for (size_t i = 0; i < n_members(s); i++)
                if (!s->states[i].started || !s->states[i].healthy)
                        return false;
        return true;
}

size_t etcd_view_count_pending(const EtcdViewSnapshot *s)
{
        size_t n = 0;
        for (size_t i = 0; i < n_members(s); i++)
                n += s->states[i].is_learner || !s->states[i].started;
        return n;
}

const EtcdMemberState *etcd_view_find(const EtcdViewSnapshot *s, uint64_t id)
{
        for (size_t i = 0; i < n_members(s); i++)
                if (s->states[i].id == id)
                        return &s->states[i];
        return NULL;
}

const EtcdMemberState *etcd_view_find_by_name(const EtcdViewSnapshot *s, const char *name)
{
        for (size_t i = 0; i < n_members(s); i++)
                if (streq_ptr(s->states[i].name, name))
                        return &s->states[i];
        return NULL;
}

bool etcd_view_removal_keeps_quorum(const EtcdViewSnapshot *s, uint64_t id)
{
        size_t voters = 0, healthy = 0;
        bool found = false;

        for (size_t i = 0; i < n_members(s); i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m->id == id) {
                        found = true;
                        continue;
                }
                if (m->is_learner)
                        continue;
                voters++;
                healthy += m->healthy;
        }
        /* After removal, every remaining voter must be healthy and at least one must remain. */
        return found && voters > 0 && healthy == voters;
}

static bool hinted_up(const EtcdQuorumHints *h, const EtcdMemberState *m)
{
        return !h || !h->up || h->up(m, h->userdata);
}

bool etcd_view_restart_keeps_quorum(const EtcdViewSnapshot *s, uint64_t id, const EtcdQuorumHints *hints,
                                    size_t *ret_up, size_t *ret_voters, size_t *ret_quorum)
{
        const EtcdMemberState *target = etcd_view_find(s, id);
        uint64_t leaving = hints ? hints->leaving : 0;
        size_t voters = 0, up = 0;

        if (!target || !target->started || (!target->healthy && !hinted_up(hints, target)))
                return true;
        for (size_t i = 0; i < n_members(s); i++) {
                const EtcdMemberState *m = &s->states[i];
                if (m->id == leaving && m != target)
                        continue;
                if (m->is_learner && !(m == target && m->started))
                        continue;
                voters++;
                up += m != target && m->started && m->healthy && hinted_up(hints, m);
        }
        if (ret_up)
                *ret_up = up;
        if (ret_voters)
                *ret_voters = voters;
        if (ret_quorum)
                *ret_quorum = etcd_quorum(voters);
        return etcd_quorum_holds(voters, up);
}

/* FNV-1a, 64 bit: stable across runs and cheap; not a defence against anyone. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
        const unsigned char *b = p;
        for (size_t i = 0; i < n; i++) {
                h ^= b[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
        return fnv(h, &v, sizeof v);
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
        /* The terminator is hashed too, so "ab","c" and "a","bc" differ; NULL differs from "". */
        return s ? fnv(h, s, strlen(s) + 1) : fnv_u64(h, UINT64_MAX);
}

uint64_t etcd_view_digest(const EtcdViewSnapshot *s)
{
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        if (!s)
                return h;
        h = fnv_u64(h, (uint64_t) (s->error < 0 ? s->error : 0));
        h = fnv_u64(h, s->cluster_id);
        h = fnv_u64(h, s->leader);
        h = fnv_u64(h, s->split_brain);
        h = fnv_u64(h, n_members(s));
        for (size_t i = 0; i < n_members(s); i++) {
                const EtcdMemberState *m = &s->states[i];
                h = fnv_u64(h, m->id);
                h = fnv_str(h, m->name);
                h = fnv_u64(h, (uint64_t) m->started | (uint64_t) m->is_learner << 1 |
                                       (uint64_t) m->healthy << 2 | (uint64_t) m->has_status << 3 |
                                       (uint64_t) etcd_member_needs_defrag(m) << 4);
                h = fnv_str(h, m->has_status ? m->status.version : NULL);
                /* etcd's downgrade moves these (3.6): the controllers that wait on it wake. */
                h = fnv_str(h, m->has_status ? m->status.storage_version : NULL);
                h = fnv_u64(h, m->has_status && m->status.downgrade_enabled);
                h = fnv_str(h, m->has_status ? m->status.downgrade_target : NULL);
                for (size_t k = 0; m->member && k < m->member->n_peer_urls; k++)
                        h = fnv_str(h, m->member->peer_urls[k]);
                for (size_t k = 0; m->member && k < m->member->n_client_urls; k++)
                        h = fnv_str(h, m->member->client_urls[k]);
        }
        h = fnv_u64(h, s->n_alarms);
        for (size_t i = 0; i < s->n_alarms; i++) {
                h = fnv_u64(h, s->alarms[i].member_id);
                h = fnv_str(h, s->alarms[i].alarm);
        }
        return fnv_u64(h, s->alarms_error < 0 && !s->n_alarms);
}

/* ---- polling ---- */

static void round_start(EtcdView *v);

/* Every request of a round is bounded by about the poll period, so one slow or dying member (or an
 * alarm list waiting on raft) cannot hold everyone's view for the client's default timeout. */
static usec_t round_timeout(const EtcdView *v)
{
        return MAX(v->period, 2 * USEC_PER_SEC);
}

static void arm(EtcdView *v, usec_t delay)
{
        if (v->timer) {
                (void) sd_event_source_set_time_relative(v->timer, delay);
                (void) sd_event_source_set_enabled(v->timer, SD_EVENT_ONESHOT);
        }
}

/* Adds `id` to the distinct IDs `ids` (of room `max`) unless it is there or is 0. */
static void add_cluster_id(uint64_t *ids, size_t max, size_t *n, bool *more, uint64_t id)
{
        size_t k = 0;
        if (id == 0)
                return;
        while (k < *n && ids[k] != id)
                k++;
        if (k < *n)
                return;
        if (*n < max)
                ids[(*n)++] = id;
        else
                *more = true;
}

void etcd_view_detect_split_brain(EtcdViewSnapshot *s)
{
        /* The distinct cluster IDs: the member list's first, then as members and strays report them. */
        uint64_t ids[8];
        size_t n_ids = 0;
        bool more = false;

        add_cluster_id(ids, ELEMENTSOF(ids), &n_ids, &more, s->cluster_id);
        for (size_t i = 0; i < n_members(s); i++)
                if (s->states[i].has_status)
                        add_cluster_id(ids, ELEMENTSOF(ids), &n_ids, &more, s->states[i].status.cluster_id);
        for (size_t i = 0; s->strays && i < s->n_strays; i++)
                if (s->strays[i].has_status)
                        add_cluster_id(ids, ELEMENTSOF(ids), &n_ids, &more, s->strays[i].cluster_id);
        s->split_brain = n_ids > 1;
        s->split_brain_detail = mfree(s->split_brain_detail);
        if (!s->split_brain)
                return;

        /* Both sides named: "members report N cluster IDs: X (the member list's): a, b; Y: c". */
        _cleanup_(buf_free) Buf b = BUF_INIT(4096);
        char head[64];
        int r = 0;
        (void) snprintf(head, sizeof head, "members report %zu%s cluster IDs:", n_ids,
                        more ? " or more" : "");
        r = buf_append(&b, head, strlen(head));
        for (size_t k = 0; r >= 0 && k < n_ids; k++) {
                char id[64];
                size_t named = 0;
                (void) snprintf(id, sizeof id, "%s %016llx%s", k ? ";" : "", (unsigned long long) ids[k],
                                ids[k] == s->cluster_id ? " (the member list's)" : "");
                r = buf_append(&b, id, strlen(id));
                for (size_t i = 0; r >= 0 && i < n_members(s); i++) {
                        const EtcdMemberState *st = &s->states[i];
                        if (!st->has_status || st->status.cluster_id != ids[k])
                                continue;
                        const char *name = st->name ? st->name : "(unnamed)";
                        if ((r = buf_append(&b, named++ ? ", " : ": ", 2)) >= 0)
                                r = buf_append(&b, name, strlen(name));
                }
                for (size_t i = 0; r >= 0 && s->strays && i < s->n_strays; i++) {
                        const EtcdEndpointState *e = &s->strays[i];
                        if (!e->has_status || e->cluster_id != ids[k])
                                continue;
                        const char *sep = named++ ? ", endpoint " : ": endpoint ";
                        if ((r = buf_append(&b, sep, strlen(sep))) >= 0)
                                r = buf_append(&b, e->url, strlen(e->url));
                }
                if (r >= 0 && named == 0)
                        r = buf_append(&b, ": no member reports it", 22);
        }
        s->split_brain_detail = r >= 0 ? buf_steal(&b) : NULL;
        if (!s->split_brain_detail)
                s->split_brain_detail = strdup("members report different cluster IDs");
}

static void round_finish(EtcdView *v)
{
        EtcdViewSnapshot *s = TAKE_PTR(v->building);

        s->taken_at = now_usec(CLOCK_MONOTONIC);
        for (size_t i = 0; i < n_members(s); i++)
                if (s->states[i].has_status && s->states[i].status.leader && !s->states[i].is_learner)
                        s->leader = s->states[i].status.leader;
        etcd_view_detect_split_brain(s);
        if (s->error >= 0 && n_members(s) > 0 && etcd_view_count_voters(s) > 0 &&
            etcd_view_fault_tolerance(s) >= 0)
                s->quorate_at = s->taken_at;
        else
                s->quorate_at = v->current ? v->current->quorate_at : v->started_at;
        s->alarms_error = v->alarms_error;
        if (v->n_alarms && (s->alarms = calloc(v->n_alarms, sizeof *v->alarms))) {
                memcpy(s->alarms, v->alarms, v->n_alarms * sizeof *v->alarms);
                s->n_alarms = v->n_alarms;
        } else if (v->n_alarms)
                s->alarms_error = -ENOMEM;
        /* Said when it begins or what it names changes, and when it ends: not every round. */
        const EtcdViewSnapshot *was = v->current;
        if (s->split_brain &&
            !(was && was->split_brain && streq_ptr(was->split_brain_detail, s->split_brain_detail)))
                log_warning("etcd split brain: %s", s->split_brain_detail);
        else if (!s->split_brain && s->error >= 0 && was && was->split_brain)
                log_info("etcd split brain over: the members report one cluster ID");
        /* Membership changes go to the leader first. */
        for (size_t i = 0; i < n_members(s); i++)
                if (s->states[i].id == s->leader && s->states[i].client_url)
                        (void) etcd_client_set_leader(v->client, s->states[i].client_url);

        etcd_view_snapshot_unref(v->current);
        v->current = s;
        v->in_round = false;
        if (v->listener)
                v->listener(v, s, v->userdata);
        if (v->again) {
                v->again = false;
                round_start(v);
        } else
                arm(v, v->period);
}

static void on_alarms(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        EtcdView *v = userdata;
        EtcdAlarm *a = NULL;
        size_t n = 0;

        (void) c;
        if (resp->error == -ECANCELED)
                return;
        v->alarms_pending = false;
        if (resp->error < 0) {
                v->alarms_error = resp->error; /* keep the last list we had, marked stale */
                return;
        }
        if (etcd_parse_alarms(resp->body, &a, &n) < 0) {
                v->alarms_error = -EBADMSG;
                return;
        }
        free(v->alarms);
        v->alarms = a;
        v->n_alarms = n;
        v->alarms_error = 0;
}

static void ask_alarms(EtcdView *v)
{
        _cleanup_(cJSON_Deletep) cJSON *get = cJSON_CreateObject();
        int r;

        if (v->alarms_pending)
                return;
        r = get && cJSON_AddStringToObject(get, "action", "GET")
                    ? etcd_call(v->client, NULL, "/v3/maintenance/alarm", get, ETCD_CALL_IDEMPOTENT,
                                round_timeout(v), on_alarms, v)
                    : -ENOMEM;
        if (r < 0)
                v->alarms_error = r;
        else
                v->alarms_pending = true;
}

static void member_done(EtcdView *v)
{
        if (--v->outstanding > 0)
                return;
        round_finish(v);
}

static void on_health(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        _cleanup_free_ MemberReq *q = userdata;
        (void) c;
        if (resp->error == -ECANCELED) {
                etcd_view_snapshot_unref(q->snap);
                return;
        }
        EtcdMemberState *st = &q->snap->states[q->index];
        st->healthy = resp->error >= 0;
        if (resp->error < 0 && st->error == 0)
                st->error = resp->error;
        etcd_view_snapshot_unref(q->snap);
        member_done(q->view);
}

static void on_status(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        _cleanup_free_ MemberReq *q = userdata;
        (void) c;
        if (resp->error == -ECANCELED) {
                etcd_view_snapshot_unref(q->snap);
                return;
        }
        EtcdMemberState *st = &q->snap->states[q->index];
        if (resp->error >= 0 && etcd_parse_status(resp->body, &st->status) >= 0) {
                st->has_status = true;
                /* The status is newer than the list: a voter here was promoted meanwhile. */
                st->is_learner = st->is_learner && st->status.is_learner;
        } else if (st->error == 0)
                st->error = resp->error < 0 ? resp->error : -EBADMSG;
        etcd_view_snapshot_unref(q->snap);
        member_done(q->view);
}

static void on_stray_status(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        _cleanup_free_ MemberReq *q = userdata;
        EtcdStatus st = {};
        (void) c;
        if (resp->error == -ECANCELED) {
                etcd_view_snapshot_unref(q->snap);
                return;
        }
        EtcdEndpointState *e = &q->snap->strays[q->index];
        if (resp->error >= 0 && etcd_parse_status(resp->body, &st) >= 0) {
                e->has_status = true;
                e->cluster_id = st.cluster_id;
                e->member_id = st.member_id;
        } else
                e->error = resp->error < 0 ? resp->error : -EBADMSG;
        etcd_status_done(&st);
        etcd_view_snapshot_unref(q->snap);
        member_done(q->view);
}

/* Every endpoint of the client that is no started member's client URL in the list. */
static int ask_strays(EtcdView *v)
{
        EtcdViewSnapshot *s = v->building;
        char *const *eps = NULL;
        size_t n = etcd_client_get_endpoints(v->client, &eps);

        if (n == 0)
                return 0;
        if (!(s->strays = calloc(n, sizeof *s->strays)))
                return -ENOMEM;
        for (size_t k = 0; k < n; k++) {
                bool listed = false;
                for (size_t i = 0; i < s->n_members && !listed; i++)
                        listed = s->states[i].started && streq_ptr(s->states[i].client_url, eps[k]);
                if (listed)
                        continue;
                EtcdEndpointState *e = &s->strays[s->n_strays];
                MemberReq *q = calloc(1, sizeof *q);
                if (!q || !(e->url = strdup(eps[k]))) {
                        free(q);
                        return -ENOMEM;
                }
                s->n_strays++;
                *q = (MemberReq){.view = v, .snap = etcd_view_snapshot_ref(s), .index = s->n_strays - 1};
                int r = etcd_status_timeout(v->client, e->url, round_timeout(v), on_stray_status, q);
                if (r < 0) {
                        e->error = r;
                        etcd_view_snapshot_unref(q->snap);
                        free(q);
                        continue;
                }
                v->outstanding++;
        }
        return 0;
}

static int ask_member(EtcdView *v, size_t i, bool health)
{
        MemberReq *q = calloc(1, sizeof *q);
        int r;
        if (!q)
                return -ENOMEM;
        *q = (MemberReq){.view = v, .snap = etcd_view_snapshot_ref(v->building), .index = i};
        const char *url = v->building->states[i].client_url;
        r = health ? etcd_health_reads(v->client, url, round_timeout(v), on_health, q)
                   : etcd_status_timeout(v->client, url, round_timeout(v), on_status, q);
        if (r < 0) {
                etcd_view_snapshot_unref(q->snap);
                free(q);
                return r;
        }
        v->outstanding++;
        return 0;
}

static void on_members(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        EtcdView *v = userdata;
        EtcdViewSnapshot *s = v->building;
        int r = 0;

        (void) c;
        if (resp->error == -ECANCELED)
                return;
        if (resp->error < 0 || (r = etcd_parse_member_list(resp->body, &s->members)) < 0) {
                s->error = resp->error < 0 ? resp->error : r;
                log_debug("etcd view: member list failed: %s", etcd_strerror(s->error));
                round_finish(v);
                return;
        }
        s->cluster_id = s->members->cluster_id;
        s->states = calloc(s->members->n_members + 1, sizeof *s->states);
        s->n_members = s->states ? s->members->n_members : 0;
        if (!s->states) {
                s->error = -ENOMEM;
                round_finish(v);
                return;
        }
        v->outstanding = 1; /* held until every request is sent */
        for (size_t i = 0; i < s->members->n_members; i++) {
                const EtcdMember *m = &s->members->members[i];
                EtcdMemberState *st = &s->states[i];
                *st = (EtcdMemberState){.id = m->id,
                                        .member = m,
                                        .name = m->name,
                                        .client_url = m->n_client_urls ? m->client_urls[0] : NULL,
                                        .started = etcd_member_is_started(m),
                                        .is_learner = m->is_learner};
                if (!st->started) {
                        st->error = ETCD_ERR_NOT_ENOUGH_STARTED;
                        continue;
                }
                if ((r = ask_member(v, i, true)) < 0 || (r = ask_member(v, i, false)) < 0)
                        st->error = r;
        }
        if ((r = ask_strays(v)) < 0)
                log_debug("etcd view: the endpoints beyond the list not asked: %s", strerror(-r));
        member_done(v);
}

static void round_start(EtcdView *v)
{
        int r;

        if (v->in_round) {
                v->again = true;
                return;
        }
        /* No endpoint known yet (the operator learns them from its informers just after it
         * starts): nothing to ask, so no round, rather than a snapshot saying etcd is
         * unreachable. The snapshot stays as it is (none at first: "not observed yet"). */
        char *const *eps = NULL;
        if (etcd_client_get_endpoints(v->client, &eps) == 0) {
                arm(v, MIN(v->period, 200 * USEC_PER_MSEC));
                return;
        }
        v->building = calloc(1, sizeof *v->building);
        if (!v->building) {
                arm(v, v->period);
                return;
        }
        v->building->n_ref = 1;
        v->building->started_at = now_usec(CLOCK_MONOTONIC);
        v->in_round = true;
        ask_alarms(v);
        r = etcd_call(v->client, NULL, "/v3/cluster/member/list", NULL, ETCD_CALL_IDEMPOTENT,
                      round_timeout(v), on_members, v);
        if (r < 0) {
                v->building->error = r;
                round_finish(v);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void) s;
        (void) usec;
        round_start(userdata);
        return 0;
}

EtcdView *etcd_view_new(EtcdClient *c, usec_t period)
{
        EtcdView *v = calloc(1, sizeof *v);
        if (!v)
                return NULL;
        v->client = c;
        v->period = period ? period : 5 * USEC_PER_SEC;
        v->alarms_error = -ENODATA;
        return v;
}

EtcdView *etcd_view_free(EtcdView *v)
{
        if (!v)
                return NULL;
        v->timer = sd_event_source_disable_unref(v->timer);
        etcd_view_snapshot_unref(v->current);
        etcd_view_snapshot_unref(v->building);
        free(v->alarms);
        return mfree(v);
}

void etcd_view_set_listener(EtcdView *v, EtcdViewFunc f, void *userdata)
{
        v->listener = f;
        v->userdata = userdata;
}

int etcd_view_start(EtcdView *v)
{
        sd_event *e = loop_get_event(etcd_client_get_loop(v->client));
        int r;

        assert_return(v, -EINVAL);
        if (v->timer)
                return 0;
        v->started_at = now_usec(CLOCK_MONOTONIC);
        r = sd_event_add_time_relative(e, &v->timer, CLOCK_MONOTONIC, v->period, 0, on_timer, v);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(v->timer, SD_EVENT_OFF);
        round_start(v);
        return 0;
}

void etcd_view_refresh(EtcdView *v)
{
        round_start(v);
}

const EtcdViewSnapshot *etcd_view_get(EtcdView *v)
{
        return v->current;
}
