/* etcd gateway parsers on bodies recorded from etcd 3.4 (and 3.5/3.6 shapes),
 * error mapping, URL validation, and the address aliases of the client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/json.h"
#include "etcd/client.h"
#include "etcd/maintlog.h"
#include "etcd/quorum.h"
#include "etcd/types.h"
#include "etcd/view.h"

static cJSON *parse(const char *s)
{
        cJSON *j = NULL;
        assert_int_equal(json_parse(s, strlen(s), &j), 0);
        return j;
}

static void test_member_list(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *j = parse(
                "{\"header\":{\"cluster_id\":\"2443363948774318917\",\"member_id\":\"17076828041006572404\","
                "\"raft_term\":\"2\"},\"members\":[{\"ID\":\"17076828041006572404\",\"name\":\"m2\","
                "\"peerURLs\":"
                "[\"https://127.0.0.2:2380\"],\"clientURLs\":[\"https://127.0.0.2:2379\"]},{\"ID\":"
                "\"17396737218538499082\",\"peerURLs\":[\"https://127.0.0.3:2380\"],\"isLearner\":true}]}");
        _cleanup_(etcd_member_list_freep) EtcdMemberList *l = NULL;
        char hex[17];

        assert_int_equal(etcd_parse_member_list(j, &l), 0);
        assert_true(l->cluster_id == 2443363948774318917ULL);
        assert_int_equal(l->n_members, 2);
        assert_true(l->members[0].id == 17076828041006572404ULL);
        assert_string_equal(l->members[0].name, "m2");
        assert_true(etcd_member_is_started(&l->members[0]));
        assert_false(l->members[0].is_learner);
        /* Added but not started: no name, no client URLs. */
        assert_null(l->members[1].name);
        assert_false(etcd_member_is_started(&l->members[1]));
        assert_true(l->members[1].is_learner);
        assert_ptr_equal(etcd_member_list_find_by_peer_url(l, "https://127.0.0.3:2380"), &l->members[1]);
        assert_ptr_equal(etcd_member_list_find_by_name(l, "m2"), &l->members[0]);
        assert_null(etcd_member_list_find(l, 1));
        assert_string_equal(etcd_id_to_hex(9463884445025896243ULL, hex), "835678c2cd1d0733");

        _cleanup_(etcd_member_list_freep) EtcdMemberList *d = etcd_member_list_dup(l);
        assert_non_null(d);
        assert_string_equal(d->members[1].peer_urls[0], "https://127.0.0.3:2380");

        _cleanup_(cJSON_Deletep) cJSON *added =
                parse("{\"header\":{},\"member\":{\"ID\":\"17396737218538499082\",\"peerURLs\":[\"https://"
                      "127.0.0.3:2380\"],"
                      "\"isLearner\":true},\"members\":[]}");
        uint64_t id = 0;
        assert_int_equal(etcd_parse_added_member(added, &id), 0);
        assert_true(id == 17396737218538499082ULL);

        /* An ID sent as a (rounded) double is refused rather than misread. */
        _cleanup_(cJSON_Deletep) cJSON *bad = parse("{\"members\":[{\"ID\":1.7076828041006572e+19}]}");
        EtcdMemberList *x = NULL;
        assert_int_equal(etcd_parse_member_list(bad, &x), -ERANGE);
}

static void test_status(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *j = parse(
                "{\"header\":{\"cluster_id\":\"2443363948774318917\",\"member_id\":\"17076828041006572404\","
                "\"revision\":\"1\",\"raft_term\":\"2\"},\"version\":\"3.4.23\",\"dbSize\":\"20480\","
                "\"leader\":"
                "\"17076828041006572404\",\"raftIndex\":\"5\",\"raftTerm\":\"2\",\"raftAppliedIndex\":\"5\","
                "\"dbSizeInUse\":\"16384\",\"storageVersion\":\"3.6.0\",\"dbSizeQuota\":\"2147483648\"}");
        _cleanup_(etcd_status_done) EtcdStatus s = {};

        assert_int_equal(etcd_parse_status(j, &s), 0);
        assert_true(s.leader == s.member_id);
        assert_int_equal(s.db_size, 20480);
        assert_int_equal(s.db_size_in_use, 16384);
        assert_int_equal(s.raft_index, 5);
        assert_string_equal(s.version, "3.4.23");
        assert_false(s.is_learner);
        assert_int_equal(s.n_errors, 0);
        assert_string_equal(s.storage_version, "3.6.0");
        assert_false(s.downgrade_enabled);

        /* etcd 3.6 during a downgrade (as 3.6.16 answers after `etcdctl downgrade enable 3.5`). */
        _cleanup_(cJSON_Deletep) cJSON *dg = parse(
                "{\"header\":{\"member_id\":\"5\"},\"version\":\"3.6.16\",\"storageVersion\":\"3.5.0\","
                "\"downgradeInfo\":{\"targetVersion\":\"3.5.0\",\"enabled\":true}}");
        _cleanup_(etcd_status_done) EtcdStatus d = {};
        assert_int_equal(etcd_parse_status(dg, &d), 0);
        assert_true(d.downgrade_enabled);
        assert_string_equal(d.downgrade_target, "3.5.0");
        assert_string_equal(d.storage_version, "3.5.0");

        _cleanup_(cJSON_Deletep) cJSON *noleader = parse(
                "{\"header\":{\"member_id\":\"5\"},\"version\":\"3.4.23\",\"isLearner\":true,"
                "\"errors\":[\"etcdserver: no leader\",\"memberID:6813868901776108619 alarm:NOSPACE \"]}");
        _cleanup_(etcd_status_done) EtcdStatus n = {};
        assert_int_equal(etcd_parse_status(noleader, &n), 0);
        assert_int_equal(n.leader, 0);
        assert_true(n.is_learner);
        assert_int_equal(n.n_errors, 2);
        assert_string_equal(n.errors[0], "etcdserver: no leader");
        _cleanup_(etcd_status_done) EtcdStatus c = {};
        assert_int_equal(etcd_status_copy(&n, &c), 0);
        assert_string_equal(c.errors[1], n.errors[1]);
}

/* The maintenance log: newest first lookups, failures in a row, a bounded ring. */
static void test_maint_log(void **state)
{
        _cleanup_(etcd_maint_log_freep) EtcdMaintLog *l = etcd_maint_log_new();
        assert_non_null(l);
        assert_null(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 0, false));
        assert_int_equal(etcd_maint_log_failures_in_row(l, ETCD_MAINT_DEFRAG), 0);
        EtcdMaintRecord r = {.kind = ETCD_MAINT_DEFRAG, .member_id = 1, .finished = 10};
        etcd_maint_log_add(l, &r);
        r = (EtcdMaintRecord){
                .kind = ETCD_MAINT_DEFRAG, .member_id = 2, .finished = 20, .error = -ETIMEDOUT};
        etcd_maint_log_add(l, &r);
        r = (EtcdMaintRecord){.kind = ETCD_MAINT_COMPACT, .revision = 7, .finished = 25};
        etcd_maint_log_add(l, &r);
        r = (EtcdMaintRecord){.kind = ETCD_MAINT_DEFRAG, .member_id = 1, .finished = 30, .error = -EIO};
        etcd_maint_log_add(l, &r);
        assert_int_equal(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 1, true)->finished, 10);
        assert_int_equal(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 1, false)->finished, 30);
        assert_int_equal(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 0, false)->member_id, 1);
        assert_null(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 2, true));
        assert_int_equal(etcd_maint_log_last(l, ETCD_MAINT_COMPACT, 0, true)->revision, 7);
        assert_int_equal(etcd_maint_log_failures_in_row(l, ETCD_MAINT_DEFRAG), 2);
        assert_int_equal(etcd_maint_log_failures_in_row(l, ETCD_MAINT_COMPACT), 0);
        /* Past the bound the oldest go first. */
        for (unsigned i = 0; i < ETCD_MAINT_LOG_MAX; i++) {
                r = (EtcdMaintRecord){.kind = ETCD_MAINT_DISARM, .member_id = 9, .finished = 100 + i};
                etcd_maint_log_add(l, &r);
        }
        assert_int_equal(etcd_maint_log_size(l), ETCD_MAINT_LOG_MAX);
        assert_null(etcd_maint_log_last(l, ETCD_MAINT_DEFRAG, 0, false));
        assert_int_equal(etcd_maint_log_at(l, 0)->finished, 100);
        assert_int_equal(etcd_maint_log_last(l, ETCD_MAINT_DISARM, 9, true)->finished,
                         100 + ETCD_MAINT_LOG_MAX - 1);
        assert_null(etcd_maint_log_at(l, ETCD_MAINT_LOG_MAX));
        assert_string_equal(etcd_maint_kind_to_string(ETCD_MAINT_MOVE_LEADER), "move-leader");
        assert_string_equal(etcd_maint_kind_to_string(ETCD_MAINT_DOWNGRADE), "downgrade");
        (void) state;
}

static void test_alarms(void **state)
{
        _cleanup_(cJSON_Deletep) cJSON *none = parse("{}");
        _cleanup_(cJSON_Deletep) cJSON *one = parse("{\"alarms\":[{\"memberID\":\"6813868901776108619\","
                                                    "\"alarm\":\"NOSPACE\"},{\"memberID\":\"1\"}]}");
        _cleanup_free_ EtcdAlarm *a = NULL, *b = NULL;
        size_t n = 9;

        assert_int_equal(etcd_parse_alarms(none, &a, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(etcd_parse_alarms(one, &b, &n), 0);
        assert_int_equal(n, 1);
        assert_true(b[0].member_id == 6813868901776108619ULL);
        assert_string_equal(b[0].alarm, "NOSPACE");
}

static void expect(long http, const char *body, int error)
{
        _cleanup_(cJSON_Deletep) cJSON *j = body ? parse(body) : NULL;
        const char *msg = NULL;
        int got = etcd_parse_error(http, j, &msg);
        if (got != error)
                fail_msg("%ld %s: got %d (%s), want %d (%s)", http, body, got, etcd_strerror(got), error,
                         etcd_strerror(error));
}

#define E34(code, m) "{\"error\":\"" m "\",\"message\":\"" m "\",\"code\":" #code "}"

static void test_errors(void **state)
{
        expect(412, E34(9, "etcdserver: too many learner members in cluster"), ETCD_ERR_TOO_MANY_LEARNERS);
        expect(412, E34(9, "etcdserver: can only promote a learner member which is in sync with leader"),
               ETCD_ERR_LEARNER_NOT_READY);
        expect(412, E34(9, "etcdserver: can only promote a learner member"), ETCD_ERR_NOT_LEARNER);
        expect(404, E34(5, "etcdserver: member not found"), ETCD_ERR_MEMBER_NOT_FOUND);
        expect(500, E34(2, "etcdserver: re-configuration failed due to not enough started members"),
               ETCD_ERR_NOT_ENOUGH_STARTED);
        expect(503, E34(14, "etcdserver: unhealthy cluster"), ETCD_ERR_UNHEALTHY);
        /* etcd 3.5's HTTP listener of a member whose gRPC port closed (it is stopping), as recorded. */
        expect(503,
               "{\"code\":14, \"message\":\"connection error: desc = \\\"transport: Error while dialing: "
               "dial tcp "
               "127.0.77.2:2379: connect: connection refused\\\"\"}",
               ETCD_ERR_STOPPING);
        expect(503, E34(14, "etcdserver: no leader"), ETCD_ERR_NO_LEADER);
        expect(503, E34(14, "etcdserver: request timed out"), ETCD_ERR_NO_QUORUM);
        expect(500, E34(2, "context deadline exceeded"), ETCD_ERR_NO_QUORUM);
        expect(504, E34(4, "context deadline exceeded"), -ETIMEDOUT);
        expect(429, E34(8, "etcdserver: mvcc: database space exceeded"), ETCD_ERR_NOSPACE);
        expect(503, E34(14, "etcdserver: rpc not supported for learner"), ETCD_ERR_LEARNER);
        expect(412, E34(9, "etcdserver: Peer URLs already exists"), ETCD_ERR_PEER_URL_EXISTS);
        expect(400, E34(3, "etcdserver: given member URLs are invalid"), ETCD_ERR_BAD_URL);
        expect(412, E34(9, "etcdserver: member ID already exist"), ETCD_ERR_PEER_URL_EXISTS);
        expect(400, E34(11, "etcdserver: mvcc: required revision has been compacted"), ETCD_ERR_COMPACTED);
        expect(400, E34(11, "etcdserver: mvcc: required revision is a future revision"),
               ETCD_ERR_FUTURE_REV);
        expect(412, E34(9, "etcdserver: not leader"), ETCD_ERR_NOT_LEADER);
        expect(400, E34(3, "etcdserver: key is not provided"), -EINVAL);
        expect(400, E34(3, "illegal base64 data at input byte 4"), -EINVAL);
        /* 3.6 drops the "error" string; the streaming shape nests it. */
        expect(412, "{\"code\":9,\"message\":\"etcdserver: too many learner members in cluster\"}",
               ETCD_ERR_TOO_MANY_LEARNERS);
        expect(503,
               "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: rpc not supported "
               "for "
               "learner\",\"http_status\":\"Service Unavailable\"}}",
               ETCD_ERR_LEARNER);
        expect(404, NULL, -EOPNOTSUPP);
        expect(502, NULL, -EIO);
}

static void test_urls(void **state)
{
        assert_true(etcd_url_is_valid("https://127.0.0.3:2380"));
        assert_true(etcd_url_is_valid("http://etcd-0.example.com:2380"));
        assert_true(etcd_url_is_valid("https://[fd00::1]:2380"));
        assert_false(etcd_url_is_valid("not a url"));
        assert_false(etcd_url_is_valid("127.0.0.9:2380"));
        assert_false(etcd_url_is_valid("ftp://127.0.0.1:2380"));
        assert_false(etcd_url_is_valid("https://127.0.0.1"));
        assert_false(etcd_url_is_valid("https://127.0.0.1:"));
        assert_false(etcd_url_is_valid("https://127.0.0.1:70000"));
        assert_false(etcd_url_is_valid("https://127.0.0.1:0"));
        assert_false(etcd_url_is_valid("https://127.0.0.1:2380/path"));
        assert_false(etcd_url_is_valid("https://user@127.0.0.1:2380"));
        assert_false(etcd_url_is_valid("https://[fd00::1:2380"));
        assert_false(etcd_url_is_valid("https://[nothex]:2380"));
        assert_false(etcd_url_is_valid(""));
        assert_false(etcd_url_is_valid(NULL));
}

static void check_route(EtcdClient *c, const char *url, const char *want_url, const char *want_connect_to)
{
        _cleanup_free_ char *u = NULL, *ct = NULL;
        assert_int_equal(etcd_client_route(c, url, &u, &ct), 0);
        assert_string_equal(u, want_url);
        if (want_connect_to)
                assert_string_equal(strempty(ct), want_connect_to);
        else
                assert_null(ct);
}

static void test_route(void **state)
{
        _cleanup_(loop_unrefp) Loop *loop = loop_new();
        HttpTls tls = {};
        _cleanup_(etcd_client_freep) EtcdClient *c = etcd_client_new(loop, &tls);
        assert_non_null(c);
        check_route(c, "https://10.0.0.9:2379/health", "https://10.0.0.9:2379/health", NULL);

        EtcdAddressAlias a[] = {{"10.0.0.9", "10.0.0.5"}, {"fd00::9", "fd00::5"}, {"10.0.1.9", "fd00::7"}};
        assert_int_equal(etcd_client_set_aliases(c, a, ELEMENTSOF(a)), 0);
        check_route(c, "https://10.0.0.9:2379/health", "https://10.0.0.5:2379/health",
                    "10.0.0.5:2379:10.0.0.9:2379");
        check_route(c, "https://10.0.0.9:2379", "https://10.0.0.5:2379", "10.0.0.5:2379:10.0.0.9:2379");
        check_route(c, "https://[fd00:0::9]:2379/v3/kv/range", "https://[fd00::5]:2379/v3/kv/range",
                    "[fd00::5]:2379:[fd00:0::9]:2379");
        check_route(c, "https://10.0.1.9:2379/health", "https://[fd00::7]:2379/health",
                    "[fd00::7]:2379:10.0.1.9:2379");
        /* Other addresses, and what is no URL of an address, go as they are. */
        check_route(c, "https://10.0.0.99:2379/health", "https://10.0.0.99:2379/health", NULL);
        check_route(c, "https://etcd.example.com:2379/health", "https://etcd.example.com:2379/health", NULL);
        check_route(c, "not a url", "not a url", NULL);

        EtcdAddressAlias bad = {"10.0.0.9", "not-an-ip"};
        assert_int_equal(etcd_client_set_aliases(c, &bad, 1), -EINVAL);
        check_route(c, "https://10.0.0.9:2379/health", "https://10.0.0.5:2379/health",
                    "10.0.0.5:2379:10.0.0.9:2379");
        assert_int_equal(etcd_client_set_aliases(c, NULL, 0), 0);
        check_route(c, "https://10.0.0.9:2379/health", "https://10.0.0.9:2379/health", NULL);
}

static void check_http_url(const char *url, const char *want)
{
        _cleanup_free_ char *got = etcd_http_url(url);
        assert_non_null(got);
        assert_string_equal(got, want);
}

/* HTTP goes to etcd's HTTP listener 2381 of a client URL on 2379; any other port serves both. */
/* The one majority rule (etcd/quorum.h): voters / 2 + 1, and what it allows. */
static void test_quorum(void **state)
{
        static const struct {
                size_t voters, quorum, tolerates_with_all_up;
        } t[] = {{0, 1, 0}, {1, 1, 0}, {2, 2, 0}, {3, 2, 1}, {4, 3, 1}, {5, 3, 2}, {6, 4, 2}, {7, 4, 3}};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                assert_int_equal(etcd_quorum(t[i].voters), t[i].quorum);
                assert_true(etcd_quorum_holds(t[i].voters, t[i].quorum));
                assert_false(etcd_quorum_holds(t[i].voters, t[i].quorum - 1));
                if (t[i].voters > 0)
                        assert_int_equal(etcd_quorum_fault_tolerance(t[i].voters, t[i].voters),
                                         (int) t[i].tolerates_with_all_up);
        }
        /* Lost already: negative. */
        assert_int_equal(etcd_quorum_fault_tolerance(3, 1), -1);
        /* A promotion: two healthy voters make the quorum of three, one does not make two's. */
        assert_true(etcd_quorum_holds(3, 2));
        assert_false(etcd_quorum_holds(2, 1));
}

/* Split brain as the view judges it at the end of a round (the integration test
 * test-etcd-membership shows the stray endpoints against real etcd): a listed member
 * answering for another cluster, both sides named; one cluster ID, nothing. */
static void test_split_brain_detail(void **state)
{
        (void) state;
        EtcdMemberState states[3] = {
                {.id = 1, .name = "master-0", .has_status = true, .status = {.cluster_id = 0xa}},
                {.id = 2, .name = "master-1", .has_status = true, .status = {.cluster_id = 0xa}},
                {.id = 3, .name = "master-2", .has_status = true, .status = {.cluster_id = 0xb}},
        };
        EtcdViewSnapshot s = {.n_ref = 1, .cluster_id = 0xa, .states = states, .n_members = 3};
        etcd_view_detect_split_brain(&s);
        assert_true(s.split_brain);
        assert_string_equal(s.split_brain_detail,
                            "members report 2 cluster IDs: 000000000000000a (the member list's): master-0, "
                            "master-1; 000000000000000b: master-2");

        /* A stray endpoint too, and a member without status (named nowhere). */
        EtcdEndpointState strays[1] = {
                {.url = (char *) "https://10.0.0.9:2379", .has_status = true, .cluster_id = 0xc}};
        states[1].has_status = false;
        s.strays = strays;
        s.n_strays = 1;
        etcd_view_detect_split_brain(&s);
        assert_string_equal(s.split_brain_detail,
                            "members report 3 cluster IDs: 000000000000000a (the member list's): master-0; "
                            "000000000000000b: master-2; 000000000000000c: endpoint https://10.0.0.9:2379");

        /* One cluster again: no split brain, no detail. */
        states[2].status.cluster_id = 0xa;
        strays[0].cluster_id = 0xa;
        etcd_view_detect_split_brain(&s);
        assert_false(s.split_brain);
        assert_null(s.split_brain_detail);
}

static void test_http_url(void **state)
{
        check_http_url("https://10.0.0.1:2379", "https://10.0.0.1:2381");
        check_http_url("https://10.0.0.1:2379/v3/kv/range", "https://10.0.0.1:2381/v3/kv/range");
        check_http_url("https://[fd00::1]:2379/health", "https://[fd00::1]:2381/health");
        check_http_url("https://localhost:2379", "https://localhost:2381");
        check_http_url("http://127.0.0.1:2379/health", "http://127.0.0.1:2381/health");
        /* Not the client port: as it is. */
        check_http_url("https://10.0.0.1:23790/health", "https://10.0.0.1:23790/health");
        check_http_url("https://10.0.0.1:12379", "https://10.0.0.1:12379");
        check_http_url("https://127.0.0.1:40000/v3/kv/put", "https://127.0.0.1:40000/v3/kv/put");
        check_http_url("https://10.0.0.1:2381/health", "https://10.0.0.1:2381/health");
        check_http_url("https://10.0.0.1/health", "https://10.0.0.1/health");
        check_http_url("not a url:2379", "not a url:2379");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_member_list), cmocka_unit_test(test_status),
                cmocka_unit_test(test_alarms),      cmocka_unit_test(test_errors),
                cmocka_unit_test(test_maint_log),   cmocka_unit_test(test_urls),
                cmocka_unit_test(test_route),       cmocka_unit_test(test_http_url),
                cmocka_unit_test(test_quorum),      cmocka_unit_test(test_split_brain_detail),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
