/* Parsers for the etcd gateway's JSON, and its error mapping. */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>

#include "base/json.h"
#include "types.h"

const char *etcd_strerror(int error)
{
        switch (error) {
        case ETCD_ERR_NO_LEADER:
                return "etcd has no leader";
        case ETCD_ERR_SPLIT_BRAIN:
                return "the etcd members report different cluster IDs (split brain)";
        case ETCD_ERR_NO_QUORUM:
                return "etcd could not reach quorum in time";
        case ETCD_ERR_UNHEALTHY:
                return "etcd cluster is unhealthy (a voting member is unreachable or just joined)";
        case ETCD_ERR_NOT_ENOUGH_STARTED:
                return "an added etcd member has not started yet";
        case ETCD_ERR_TOO_MANY_LEARNERS:
                return "etcd already has a learner";
        case ETCD_ERR_LEARNER_NOT_READY:
                return "the learner is not yet in sync with the leader";
        case ETCD_ERR_NOT_LEARNER:
                return "the member is already a voter";
        case ETCD_ERR_MEMBER_NOT_FOUND:
                return "no such etcd member";
        case ETCD_ERR_NOSPACE:
                return "etcd database space exceeded (NOSPACE alarm)";
        case ETCD_ERR_LEARNER:
                return "request not supported by a learner";
        case ETCD_ERR_REMOVED:
                return "the etcd member has been removed from the cluster";
        case ETCD_ERR_PEER_URL_EXISTS:
                return "peer URL already in use by a member";
        case ETCD_ERR_COMPACTED:
                return "revision has been compacted";
        case ETCD_ERR_FUTURE_REV:
                return "revision is in the future";
        case ETCD_ERR_NOT_LEADER:
                return "request must go to the leader";
        case ETCD_ERR_BAD_URL:
                return "invalid member URL";
        case ETCD_ERR_STOPPING:
                return "the member's gateway cannot reach its gRPC server (stopping or starting)";
        default:
                return strerror(error < 0 ? -error : error);
        }
}

static bool contains(const char *s, const char *needle)
{
        return s && strstr(s, needle);
}

int etcd_parse_error(long http_status, const cJSON *body, const char **ret_message)
{
        const char *msg = json_get_string(body, "message");
        int64_t code = -1;

        /* Streaming errors nest everything under "error". */
        cJSON *nested = json_get_object(body, "error");
        if (nested) {
                msg = json_get_string(nested, "message");
                (void) json_get_int64(nested, "grpc_code", &code);
        } else {
                if (!msg)
                        msg = json_get_string(body, "error");
                (void) json_get_int64(body, "code", &code);
        }
        if (ret_message)
                *ret_message = msg;

        /* Messages first: the same gRPC code covers several situations. */
        if (contains(msg, "too many learner members"))
                return ETCD_ERR_TOO_MANY_LEARNERS;
        if (contains(msg, "in sync with leader"))
                return ETCD_ERR_LEARNER_NOT_READY;
        if (contains(msg, "can only promote a learner member"))
                return ETCD_ERR_NOT_LEARNER;
        if (contains(msg, "member not found"))
                return ETCD_ERR_MEMBER_NOT_FOUND;
        if (contains(msg, "not enough started members"))
                return ETCD_ERR_NOT_ENOUGH_STARTED;
        if (contains(msg, "unhealthy cluster"))
                return ETCD_ERR_UNHEALTHY;
        if (contains(msg, "no leader"))
                return ETCD_ERR_NO_LEADER;
        if (contains(msg, "database space exceeded"))
                return ETCD_ERR_NOSPACE;
        if (contains(msg, "not supported for learner"))
                return ETCD_ERR_LEARNER;
        if (contains(msg, "permanently removed") || contains(msg, "member has been removed"))
                return ETCD_ERR_REMOVED;
        /* The member ID is derived from the peer URLs, so re-adding a URL hits either check. */
        if (contains(msg, "Peer URLs already exists") || contains(msg, "member ID already exist"))
                return ETCD_ERR_PEER_URL_EXISTS;
        if (contains(msg, "member URLs are invalid"))
                return ETCD_ERR_BAD_URL;
        if (contains(msg, "has been compacted"))
                return ETCD_ERR_COMPACTED;
        if (contains(msg, "is a future revision"))
                return ETCD_ERR_FUTURE_REV;
        if (contains(msg, "not leader") || contains(msg, "bad leader transferee"))
                return ETCD_ERR_NOT_LEADER;
        /* With HTTP on its own listener (2381), a stopping member keeps answering there while
         * its gRPC port is closed: its gateway's dial fails before anything reaches etcd. */
        if (code == 14 && (contains(msg, "while dialing") || contains(msg, "connection refused")))
                return ETCD_ERR_STOPPING;
        if (code == 4 || http_status == 504)
                return -ETIMEDOUT;
        if (contains(msg, "request timed out") || contains(msg, "context deadline exceeded") ||
            contains(msg, "leader changed"))
                return ETCD_ERR_NO_QUORUM;
        switch (code) {
        case 3:
                return -EINVAL;
        case 5:
                return -ENOENT;
        case 7:
        case 16:
                return -EACCES;
        case 8:
                return -EBUSY;
        case 14:
                return -EAGAIN;
        default:
                break;
        }
        if (http_status == 404)
                return -EOPNOTSUPP; /* path not served by this version */
        if (http_status == 400)
                return -EINVAL;
        return -EIO;
}

static void strv_free(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static int parse_strv(const cJSON *arr, char ***ret, size_t *ret_n)
{
        size_t n = (size_t) cJSON_GetArraySize(arr), k = 0;
        char **v = calloc(n + 1, sizeof *v);
        cJSON *s;

        if (!v)
                return -ENOMEM;
        JSON_ARRAY_FOREACH (s, arr) {
                if (!cJSON_IsString(s))
                        continue;
                v[k] = strdup(s->valuestring);
                if (!v[k]) {
                        strv_free(v, k);
                        return -ENOMEM;
                }
                k++;
        }
        *ret = v;
        *ret_n = k;
        return 0;
}

static void member_done(EtcdMember *m)
{
        free(m->name);
        strv_free(m->peer_urls, m->n_peer_urls);
        strv_free(m->client_urls, m->n_client_urls);
}

EtcdMemberList *etcd_member_list_free(EtcdMemberList *l)
{
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_members; i++)
                member_done(&l->members[i]);
        free(l->members);
        return mfree(l);
}

static int parse_member(const cJSON *j, EtcdMember *m)
{
        int r;

        *m = (EtcdMember){};
        r = json_get_uint64(j, "ID", &m->id);
        if (r < 0)
                return r == -ENOENT ? -EBADMSG : r;
        const char *name = json_get_string(j, "name");
        if (name && *name && !(m->name = strdup(name)))
                return -ENOMEM;
        r = parse_strv(json_get_array(j, "peerURLs"), &m->peer_urls, &m->n_peer_urls);
        if (r >= 0)
                r = parse_strv(json_get_array(j, "clientURLs"), &m->client_urls, &m->n_client_urls);
        m->is_learner = json_get_bool(j, "isLearner", false);
        if (r < 0)
                member_done(m);
        return r;
}

int etcd_parse_member_list(const cJSON *body, EtcdMemberList **ret)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = calloc(1, sizeof *l);
        cJSON *arr = json_get_array(body, "members"), *m;
        int r;

        assert_return(ret, -EINVAL);
        if (!l)
                return -ENOMEM;
        if (!cJSON_IsObject(body))
                return -EBADMSG;
        (void) json_get_uint64(body, "header.cluster_id", &l->cluster_id);
        (void) json_get_uint64(body, "header.member_id", &l->responder_id);
        l->members = calloc((size_t) cJSON_GetArraySize(arr) + 1, sizeof *l->members);
        if (!l->members)
                return -ENOMEM;
        JSON_ARRAY_FOREACH (m, arr) {
                r = parse_member(m, &l->members[l->n_members]);
                if (r < 0)
                        return r;
                l->n_members++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int dup_strv(char **src, size_t n, char ***ret)
{
        char **v = calloc(n + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(v[i] = strdup(src[i]))) {
                        strv_free(v, i);
                        return -ENOMEM;
                }
        *ret = v;
        return 0;
}

EtcdMemberList *etcd_member_list_dup(const EtcdMemberList *l)
{
        _cleanup_(etcd_member_list_freep) EtcdMemberList *d = calloc(1, sizeof *d);
        if (!d || !l)
                return NULL;
        d->cluster_id = l->cluster_id;
        d->responder_id = l->responder_id;
        d->members = calloc(l->n_members + 1, sizeof *d->members);
        if (!d->members)
                return NULL;
        for (size_t i = 0; i < l->n_members; i++) {
                const EtcdMember *s = &l->members[i];
                EtcdMember *m = &d->members[i];
                d->n_members++;
                *m = (EtcdMember){.id = s->id, .is_learner = s->is_learner};
                if ((s->name && !(m->name = strdup(s->name))) ||
                    dup_strv(s->peer_urls, s->n_peer_urls, &m->peer_urls) < 0)
                        return NULL;
                m->n_peer_urls = s->n_peer_urls;
                if (dup_strv(s->client_urls, s->n_client_urls, &m->client_urls) < 0)
                        return NULL;
                m->n_client_urls = s->n_client_urls;
        }
        return TAKE_PTR(d);
}

int etcd_parse_added_member(const cJSON *body, uint64_t *ret_id)
{
        int r = json_get_uint64(body, "member.ID", ret_id);
        return r == -ENOENT ? -EBADMSG : r;
}

const EtcdMember *etcd_member_list_find(const EtcdMemberList *l, uint64_t id)
{
        for (size_t i = 0; l && i < l->n_members; i++)
                if (l->members[i].id == id)
                        return &l->members[i];
        return NULL;
}

const EtcdMember *etcd_member_list_find_by_name(const EtcdMemberList *l, const char *name)
{
        for (size_t i = 0; l && name && i < l->n_members; i++)
                if (streq_ptr(l->members[i].name, name))
                        return &l->members[i];
        return NULL;
}

const EtcdMember *etcd_member_list_find_by_peer_url(const EtcdMemberList *l, const char *url)
{
        for (size_t i = 0; l && url && i < l->n_members; i++)
                for (size_t k = 0; k < l->members[i].n_peer_urls; k++)
                        if (streq(l->members[i].peer_urls[k], url))
                                return &l->members[i];
        return NULL;
}

bool etcd_member_is_started(const EtcdMember *m)
{
        return m && m->name && m->n_client_urls > 0;
}

void etcd_status_done(EtcdStatus *s)
{
        strv_free(s->errors, s->n_errors);
        *s = (EtcdStatus){};
}

int etcd_parse_status(const cJSON *body, EtcdStatus *ret)
{
        EtcdStatus s = {};
        int r;

        assert_return(ret, -EINVAL);
        if (!cJSON_IsObject(body))
                return -EBADMSG;
        /* Every uint64 is optional (zero omitted) but must be well-formed when present. */
        static const struct {
                const char *path;
                size_t off;
        } fields[] = {
                {"header.cluster_id", offsetof(EtcdStatus, cluster_id)},
                {"header.member_id", offsetof(EtcdStatus, member_id)},
                {"header.revision", offsetof(EtcdStatus, revision)},
                {"leader", offsetof(EtcdStatus, leader)},
                {"raftIndex", offsetof(EtcdStatus, raft_index)},
                {"raftTerm", offsetof(EtcdStatus, raft_term)},
                {"raftAppliedIndex", offsetof(EtcdStatus, raft_applied_index)},
                {"dbSize", offsetof(EtcdStatus, db_size)},
                {"dbSizeInUse", offsetof(EtcdStatus, db_size_in_use)},
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                r = json_get_uint64(body, fields[i].path, (uint64_t *) ((char *) &s + fields[i].off));
                if (r < 0 && r != -ENOENT)
                        return -EBADMSG;
        }
        s.is_learner = json_get_bool(body, "isLearner", false);
        (void) snprintf(s.version, sizeof s.version, "%s", strempty(json_get_string(body, "version")));
        (void) snprintf(s.storage_version, sizeof s.storage_version, "%s",
                        strempty(json_get_string(body, "storageVersion")));
        s.downgrade_enabled = json_get_bool(body, "downgradeInfo.enabled", false);
        (void) snprintf(s.downgrade_target, sizeof s.downgrade_target, "%s",
                        strempty(json_get_string(body, "downgradeInfo.targetVersion")));
        r = parse_strv(json_get_array(body, "errors"), &s.errors, &s.n_errors);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

int etcd_status_copy(const EtcdStatus *src, EtcdStatus *dst)
{
        *dst = *src;
        dst->errors = NULL;
        dst->n_errors = 0;
        if (dup_strv(src->errors, src->n_errors, &dst->errors) < 0)
                return -ENOMEM;
        dst->n_errors = src->n_errors;
        return 0;
}

int etcd_parse_alarms(const cJSON *body, EtcdAlarm **ret, size_t *ret_n)
{
        cJSON *arr = json_get_array(body, "alarms"), *a;
        size_t n = 0;

        assert_return(ret && ret_n, -EINVAL);
        if (!cJSON_IsObject(body))
                return -EBADMSG;
        _cleanup_free_ EtcdAlarm *v = calloc((size_t) cJSON_GetArraySize(arr) + 1, sizeof *v);
        if (!v)
                return -ENOMEM;
        JSON_ARRAY_FOREACH (a, arr) {
                const char *kind = json_get_string(a, "alarm");
                int r = json_get_uint64(a, "memberID", &v[n].member_id);
                if (r < 0 && r != -ENOENT)
                        return -EBADMSG;
                /* NONE is the zero value and is omitted; an entry without it is no alarm. */
                if (!kind || streq(kind, "NONE"))
                        continue;
                (void) snprintf(v[n].alarm, sizeof v[n].alarm, "%s", kind);
                n++;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

bool etcd_url_is_valid(const char *url)
{
        const char *host, *end, *p;
        char buf[64];

        if (!url)
                return false;
        if (startswith(url, "https://"))
                host = url + 8;
        else if (startswith(url, "http://"))
                host = url + 7;
        else
                return false;
        if (*host == '[') {
                end = strchr(host, ']');
                if (!end || (size_t) (end - host - 1) >= sizeof buf || end[1] != ':')
                        return false;
                memcpy(buf, host + 1, (size_t) (end - host - 1));
                buf[end - host - 1] = 0;
                struct in6_addr a6;
                if (inet_pton(AF_INET6, buf, &a6) != 1)
                        return false;
                p = end + 2;
        } else {
                end = strchr(host, ':');
                if (!end || end == host || (size_t) (end - host) >= sizeof buf)
                        return false;
                for (const char *c = host; c < end; c++)
                        if (!isalnum((unsigned char) *c) && *c != '-' && *c != '.')
                                return false;
                p = end + 1;
        }
        /* Port: 1..65535 and nothing after it (no path, query or userinfo). */
        if (!*p)
                return false;
        unsigned long port = 0;
        for (; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return false;
                port = port * 10 + (unsigned long) (*p - '0');
                if (port > 65535)
                        return false;
        }
        return port > 0;
}

char *etcd_id_to_hex(uint64_t id, char buf[static 17])
{
        (void) snprintf(buf, 17, "%016" PRIx64, id);
        return buf;
}
