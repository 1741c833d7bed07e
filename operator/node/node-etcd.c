/* discover's decision table and initial-cluster string, the data-dir layout,
 * and revision.json encoding (pure functions, plus the rename and the read
 * that discover needs). */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/fileio.h"
#include "base/json.h"
#include "host/fs.h"
#include "node-etcd.h"

#define REVISION_FILE_MAX (1024 * 1024)
#define JSON_SAFE_MAX     9007199254740991ULL /* 2^53 - 1 */

static const char *const action_names[_NODECMD_DISCOVER_ACTION_MAX] = {
        [NODECMD_DISCOVER_PRINT] = "print",
        [NODECMD_DISCOVER_WAIT] = "wait",
        [NODECMD_DISCOVER_FAIL] = "fail",
        [NODECMD_DISCOVER_ARCHIVE] = "archive",
};

const char *nodecmd_discover_action_to_string(NodeCmdDiscoverAction a)
{
        return a >= 0 && a < _NODECMD_DISCOVER_ACTION_MAX ? action_names[a] : NULL;
}

int nodecmd_initial_cluster(const EtcdMemberList *l, const EtcdMember *self, const char *target_name,
                            char **ret)
{
        Buf b = BUF_INIT(0);
        int r = 0;

        assert_return(l && target_name && ret, -EINVAL);
        for (size_t i = 0; r >= 0 && i < l->n_members; i++) {
                const EtcdMember *m = &l->members[i];
                if (!etcd_member_is_started(m))
                        continue; /* unstarted peers have no name to list */
                for (size_t k = 0; r >= 0 && k < m->n_peer_urls; k++)
                        if ((b.len == 0 || (r = buf_append(&b, ",", 1)) >= 0) &&
                            (r = buf_append(&b, m->name, strlen(m->name))) >= 0 &&
                            (r = buf_append(&b, "=", 1)) >= 0)
                                r = buf_append(&b, m->peer_urls[k], strlen(m->peer_urls[k]));
        }
        if (self && !etcd_member_is_started(self))
                for (size_t k = 0; r >= 0 && k < self->n_peer_urls; k++)
                        if ((b.len == 0 || (r = buf_append(&b, ",", 1)) >= 0) &&
                            (r = buf_append(&b, target_name, strlen(target_name))) >= 0 &&
                            (r = buf_append(&b, "=", 1)) >= 0)
                                r = buf_append(&b, self->peer_urls[k], strlen(self->peer_urls[k]));
        if (r < 0) {
                buf_free(&b);
                return r;
        }
        char *s = buf_steal(&b);
        if (!s && !(s = strdup("")))
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int result_set(NodeCmdDiscoverResult *ret, NodeCmdDiscoverAction a, char *initial_cluster,
                      char *reason)
{
        if (!reason || (a == NODECMD_DISCOVER_PRINT && !initial_cluster)) {
                free(initial_cluster);
                free(reason);
                return -ENOMEM;
        }
        *ret = (NodeCmdDiscoverResult){.action = a, .initial_cluster = initial_cluster, .reason = reason};
        return 0;
}

/* The rows, in order:
 *   no endpoint answered     data         -> print ""  (start on the data; peers tell a removed member)
 *   no endpoint answered     no data      -> wait
 *   not in the list          data         -> archive   (removed, or the data is another cluster's)
 *   not in the list          no data      -> wait      (the operator has not added it yet)
 *   added, not started       data         -> archive   (left over from an earlier membership)
 *   added, not started       no data      -> print the initial cluster
 *   started                  no data      -> fail      (the member must be removed and re-added)
 *   started, IDs differ      data         -> wait, failing at the timeout (never start on foreign data;
 *                                            waiting lets a stale revision.json be rewritten by rev)
 *   started                  data         -> print "" */
int nodecmd_discover_decide(const NodeCmdDiscoverInput *in, NodeCmdDiscoverResult *ret)
{
        const char *url, *name;

        assert_return(in && in->target_peer_url && in->target_name && ret, -EINVAL);
        url = in->target_peer_url;
        name = in->target_name;
        if (!in->members)
                return in->data_present
                               ? result_set(ret, NODECMD_DISCOVER_PRINT, strdup(""),
                                            strdup_printf("no etcd endpoint answered and %s has a data dir: "
                                                          "starting etcd on its existing data",
                                                          name))
                               : result_set(ret, NODECMD_DISCOVER_WAIT, NULL,
                                            strdup("no etcd endpoint answered and there is no data dir"));

        const EtcdMemberList *l = in->members;
        const EtcdMember *self = etcd_member_list_find_by_peer_url(l, url);
        uint64_t cid = l->cluster_id, local = in->local_cluster_id;
        bool mismatch = local != 0 && cid != 0 && local != cid;
        char hex[17], lhex[17];

        (void) etcd_id_to_hex(cid, hex);
        (void) etcd_id_to_hex(local, lhex);
        if (!self) {
                if (!in->data_present)
                        return result_set(ret, NODECMD_DISCOVER_WAIT, NULL,
                                          strdup_printf("%s is not in the member list of cluster %s yet; "
                                                        "waiting for the operator to add it",
                                                        url, hex));
                if (mismatch)
                        return result_set(ret, NODECMD_DISCOVER_ARCHIVE, NULL,
                                          strdup_printf("%s is not in the member list of cluster %s and the "
                                                        "local data belongs to cluster %s: moving it aside",
                                                        url, hex, lhex));
                return result_set(
                        ret, NODECMD_DISCOVER_ARCHIVE, NULL,
                        strdup_printf("%s is not in the member list of cluster %s (it was removed) "
                                      "but has a data dir: moving it aside so that the member "
                                      "can be added again and start empty",
                                      url, hex));
        }
        if (!etcd_member_is_started(self)) {
                if (in->data_present)
                        return result_set(
                                ret, NODECMD_DISCOVER_ARCHIVE, NULL,
                                strdup_printf("%s is added to cluster %s but not started, and a data "
                                              "dir from an earlier membership exists: moving it aside",
                                              url, hex));
                char *ic = NULL;
                int r = nodecmd_initial_cluster(l, self, name, &ic);
                if (r < 0)
                        return r;
                return result_set(ret, NODECMD_DISCOVER_PRINT, ic,
                                  strdup_printf("%s is added to cluster %s%s and not started, with no data "
                                                "dir: joining",
                                                url, hex, self->is_learner ? " as a learner" : ""));
        }
        if (!in->data_present)
                return result_set(
                        ret, NODECMD_DISCOVER_FAIL, NULL,
                        strdup_printf("%s is a started member of cluster %s but its data dir is gone: "
                                      "remove the member (etcdctl member remove %016" PRIx64
                                      ") so that the operator adds it again",
                                      url, hex, self->id));
        if (mismatch)
                return result_set(
                        ret, NODECMD_DISCOVER_WAIT, NULL,
                        strdup_printf("%s is a started member of cluster %s but revision.json says "
                                      "the local data belongs to cluster %s: not starting etcd on it",
                                      url, hex, lhex));
        return result_set(ret, NODECMD_DISCOVER_PRINT, strdup(""),
                          strdup_printf("%s is a started member (%s) of cluster %s and has its data dir: "
                                        "starting etcd on it",
                                        url, self->name, hex));
}

void nodecmd_discover_result_done(NodeCmdDiscoverResult *r)
{
        free(r->initial_cluster);
        free(r->reason);
        *r = (NodeCmdDiscoverResult){};
}

int nodecmd_data_dir_present(const char *data_dir, bool *ret)
{
        _cleanup_free_ char *p = NULL;
        struct stat st;

        assert_return(data_dir && ret, -EINVAL);
        p = strdup_printf("%s/member", data_dir);
        if (!p)
                return -ENOMEM;
        if (lstat(p, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                *ret = false;
                return 0;
        }
        *ret = true;
        return 0;
}

char *nodecmd_archive_path(const char *data_dir, usec_t realtime)
{
        time_t t = (time_t) (realtime / USEC_PER_SEC);
        struct tm tm;
        char ts[32];

        if (!data_dir || !gmtime_r(&t, &tm) || strftime(ts, sizeof ts, "%Y-%m-%d-%H%M%S", &tm) == 0)
                return NULL;
        return strdup_printf("%s/member-removed-archive-%s", data_dir, ts);
}

int nodecmd_data_dir_archive(const char *data_dir, usec_t realtime, char **ret_path)
{
        _cleanup_free_ char *src = NULL, *base = NULL;

        assert_return(data_dir && ret_path, -EINVAL);
        src = strdup_printf("%s/member", data_dir);
        base = nodecmd_archive_path(data_dir, realtime);
        if (!src || !base)
                return -ENOMEM;
        return host_move_aside(src, base, ret_path);
}

int nodecmd_revision_add(NodeCmdRevision *r, const char *endpoint, uint64_t raft_index)
{
        assert_return(r && endpoint, -EINVAL);
        NodeCmdRevisionEndpoint *e = realloc(r->endpoints, (r->n_endpoints + 1) * sizeof *e);
        if (!e)
                return -ENOMEM;
        r->endpoints = e;
        e[r->n_endpoints].endpoint = strdup(endpoint);
        if (!e[r->n_endpoints].endpoint)
                return -ENOMEM;
        e[r->n_endpoints++].raft_index = raft_index;
        r->max_raft_index = MAX(r->max_raft_index, raft_index);
        return 0;
}

void nodecmd_revision_done(NodeCmdRevision *r)
{
        for (size_t i = 0; i < r->n_endpoints; i++)
                free(r->endpoints[i].endpoint);
        free(r->endpoints);
        *r = (NodeCmdRevision){};
}

/* A JSON number when every reader holds it exactly, a decimal string otherwise. */
static cJSON *uint_item(uint64_t v)
{
        char s[24];
        (void) snprintf(s, sizeof s, "%" PRIu64, v);
        return v <= JSON_SAFE_MAX ? cJSON_CreateRaw(s) : cJSON_CreateString(s);
}

int nodecmd_revision_encode(const NodeCmdRevision *r, char **ret)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        char id[24], created[32];
        cJSON *idx = NULL, *m = NULL;

        assert_return(r && ret, -EINVAL);
        if (!format_rfc3339(created, sizeof created, r->created))
                return -EINVAL;
        (void) snprintf(id, sizeof id, "%" PRIu64, r->cluster_id);
        /* Key order as upstream writes it: clusterId, raftIndex, maxRaftIndex, created. */
        if (!o || !cJSON_AddStringToObject(o, "clusterId", id) ||
            !(idx = cJSON_AddObjectToObject(o, "raftIndex")))
                return -ENOMEM;
        for (size_t i = 0; i < r->n_endpoints; i++) {
                cJSON *v = uint_item(r->endpoints[i].raft_index);
                if (!v)
                        return -ENOMEM;
                cJSON_AddItemToObject(idx, r->endpoints[i].endpoint, v);
        }
        if (!(m = uint_item(r->max_raft_index)))
                return -ENOMEM;
        cJSON_AddItemToObject(o, "maxRaftIndex", m);
        if (!cJSON_AddStringToObject(o, "created", created))
                return -ENOMEM;
        if (r->max_revision &&
            (!(m = uint_item(r->max_revision)) || !cJSON_AddItemToObject(o, "maxRevision", m)))
                return -ENOMEM;
        char *s = json_print(o);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* A top-level number too large for a double, read from the text itself: the
 * value of the first `"key":` whose value is a bare integer. */
static int scan_raw_uint(const char *text, size_t len, const char *key, uint64_t *ret)
{
        _cleanup_free_ char *needle = strdup_printf("\"%s\"", key);
        const char *end = text + len;

        if (!needle)
                return -ENOMEM;
        for (const char *p = memmem(text, len, needle, strlen(needle)); p;
             p = memmem(p + 1, (size_t) (end - p - 1), needle, strlen(needle))) {
                const char *q = p + strlen(needle);
                while (q < end && strchr(" \t\r\n", *q))
                        q++;
                if (q >= end || *q != ':')
                        continue;
                q++;
                while (q < end && strchr(" \t\r\n", *q))
                        q++;
                char digits[24];
                size_t n = 0;
                while (q + n < end && n < sizeof digits - 1 && q[n] >= '0' && q[n] <= '9')
                        digits[n] = q[n], n++;
                if (n == 0 || (q + n < end && q[n] >= '0' && q[n] <= '9'))
                        continue;
                digits[n] = 0;
                return parse_uint64(digits, ret);
        }
        return -ENOENT;
}

/* One item's value: a decimal string, or a number a double holds exactly. */
static int item_uint(const cJSON *j, uint64_t *ret)
{
        if (cJSON_IsString(j))
                return parse_uint64(j->valuestring, ret);
        if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble != floor(j->valuedouble))
                return -EINVAL;
        if (j->valuedouble > (double) JSON_SAFE_MAX)
                return -ERANGE;
        *ret = (uint64_t) j->valuedouble;
        return 0;
}

static int get_uint(const cJSON *o, const char *key, const char *text, size_t len, uint64_t *ret)
{
        int r = json_get_uint64(o, key, ret);
        if (r == -ERANGE && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, key)))
                return scan_raw_uint(text, len, key, ret);
        return r;
}

int nodecmd_revision_decode(const char *text, size_t len, NodeCmdRevision *ret)
{
        _cleanup_(cJSON_Deletep) cJSON *o = NULL;
        NodeCmdRevision rev = {};
        const cJSON *e;
        int r;

        assert_return(text && ret, -EINVAL);
        if (json_parse(text, len, &o) < 0 || !cJSON_IsObject(o))
                return -EBADMSG;
        r = get_uint(o, "clusterId", text, len, &rev.cluster_id);
        if (r < 0)
                return r == -ENOENT ? -ENOENT : -EBADMSG;
        JSON_ARRAY_FOREACH (e, json_get_object(o, "raftIndex")) {
                uint64_t v = 0;
                if (item_uint(e, &v) < 0)
                        continue; /* an index we cannot hold exactly is left out, not guessed */
                if ((r = nodecmd_revision_add(&rev, e->string, v)) < 0) {
                        nodecmd_revision_done(&rev);
                        return r;
                }
        }
        uint64_t max = 0;
        if (get_uint(o, "maxRaftIndex", text, len, &max) >= 0)
                rev.max_raft_index = MAX(rev.max_raft_index, max);
        if (get_uint(o, "maxRevision", text, len, &max) >= 0)
                rev.max_revision = max;
        const char *created = json_get_string(o, "created");
        if (!created || parse_rfc3339(created, &rev.created) < 0)
                rev.created = 0;
        *ret = rev;
        return 0;
}

char *nodecmd_revision_path(const char *data_dir)
{
        return data_dir ? strdup_printf("%s/revision.json", data_dir) : NULL;
}

int nodecmd_revision_read_cluster_id(const char *data_dir, uint64_t *ret)
{
        _cleanup_free_ char *path = nodecmd_revision_path(data_dir), *text = NULL;
        NodeCmdRevision rev = {};
        size_t len = 0;
        int r;

        assert_return(ret, -EINVAL);
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, REVISION_FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        r = nodecmd_revision_decode(text, len, &rev);
        if (r < 0)
                return r;
        *ret = rev.cluster_id;
        nodecmd_revision_done(&rev);
        return *ret ? 0 : -ENOENT;
}
