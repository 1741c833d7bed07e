/* Verification is on everywhere: our client refuses a server certificate
 * whose SANs do not match (also through an address alias, unless the alias
 * names the address the certificate was issued for); etcd refuses a client certificate from a foreign
 * CA; etcd refuses a peer whose certificate does not match its address. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/fileio.h"
#include "base/log.h"
#include "etcd-harness.h"
#include "etcd/snapshot.h"

static Loop *loop;

static int health(EtcdClient *e, const char *url)
{
        EtcdTestResult r = {};
        assert_int_equal(etcd_health(e, url, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 20 * USEC_PER_SEC), 0);
        int err = r.error;
        etcd_test_result_done(&r);
        return err;
}

/* One member serving a certificate for 127.254.254.254 instead of its address; a client
 * of it, once its answer is a TLS failure (no longer connection refused). */
static EtcdClient *start_with_wrong_serving_cert(EtcdTestCluster *c)
{
        assert_int_equal(etcd_test_cluster_init(c, 1, NULL), 0);
        c->members[0].bad_serving_cert = true;
        assert_int_equal(etcd_test_member_reissue(c, 0), 0);
        _cleanup_free_ char *ic = etcd_test_initial_cluster(c, 0x1);
        assert_int_equal(etcd_test_member_start(c, 0, ic, false), 0);
        EtcdClient *e = etcd_test_client(c, loop, 0x1);

        int err = -ECONNREFUSED;
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while ((err = health(e, c->members[0].client_url)) == -ECONNREFUSED &&
               now_usec(CLOCK_MONOTONIC) < end)
                (void) usleep(100000);
        assert_int_equal(err, -EPROTO);
        return e;
}

static void test_server_san_mismatch(void **state)
{
        EtcdTestCluster c;
        _cleanup_(etcd_client_freep) EtcdClient *e = start_with_wrong_serving_cert(&c);
        /* And it stays refused. */
        assert_int_equal(health(e, c.members[0].client_url), -EPROTO);
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

/* A member whose certificate names another address (127.254.254.254: its master's
 * old one) is reached through an alias, verified against the address the
 * certificate names; without the alias, or with one naming yet another address,
 * it is still refused. */
static void test_server_reached_by_alias(void **state)
{
        EtcdTestCluster c;
        _cleanup_(etcd_client_freep) EtcdClient *e = start_with_wrong_serving_cert(&c);

        EtcdAddressAlias wrong = {}, right = {};
        (void) snprintf(wrong.serves_on, sizeof wrong.serves_on, "%s", c.members[0].ip);
        (void) snprintf(wrong.named, sizeof wrong.named, "127.254.254.253");
        assert_int_equal(etcd_client_set_aliases(e, &wrong, 1), 0);
        assert_int_equal(health(e, c.members[0].client_url), -EPROTO);

        right = wrong;
        (void) snprintf(right.named, sizeof right.named, "127.254.254.254");
        assert_int_equal(etcd_client_set_aliases(e, &right, 1), 0);
        assert_int_equal(health(e, c.members[0].client_url), 0);
        /* Failover calls (no endpoint given) go the same way. */
        EtcdTestResult r = {};
        assert_int_equal(etcd_member_list(e, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 20 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        etcd_test_result_done(&r);

        assert_int_equal(etcd_client_set_aliases(e, NULL, 0), 0);
        assert_int_equal(health(e, c.members[0].client_url), -EPROTO);
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

/* Restarts member i on the certificate it has now (no connection of before survives) and
 * returns the first answer that is not "connection refused". */
static int restart_and_ask(EtcdTestCluster *c, size_t i, EtcdClient *e)
{
        assert_int_equal(etcd_test_member_kill(c, i, SIGTERM), 0);
        _cleanup_free_ char *ic = etcd_test_initial_cluster(c, 1u << i);
        assert_int_equal(etcd_test_member_start(c, i, ic, true), 0);
        int err = -ECONNREFUSED;
        usec_t end = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        while ((err = health(e, c->members[i].client_url)) == -ECONNREFUSED &&
               now_usec(CLOCK_MONOTONIC) < end)
                (void) usleep(100000);
        return err;
}

static bool routed_through_alias(EtcdClient *e, const char *url)
{
        _cleanup_free_ char *u = NULL, *ct = NULL;
        assert_int_equal(etcd_client_route(e, url, &u, &ct), 0);
        return ct != NULL;
}

/* An alias is a second way to the same member, not a replacement: the node's certificates
 * are replaced while the client still has the alias (an installer wrote the new revision's
 * before its quorum guard asked), and the member is reached as it is; when it serves a
 * certificate for its old address again, through the alias again. The way that worked
 * is tried first next time. */
static void test_alias_is_a_second_way(void **state)
{
        EtcdTestCluster c;
        _cleanup_(etcd_client_freep) EtcdClient *e = start_with_wrong_serving_cert(&c);
        const char *url = c.members[0].client_url;

        EtcdAddressAlias a = {};
        (void) snprintf(a.serves_on, sizeof a.serves_on, "%s", c.members[0].ip);
        (void) snprintf(a.named, sizeof a.named, "127.254.254.254");
        assert_int_equal(etcd_client_set_aliases(e, &a, 1), 0);
        assert_int_equal(health(e, url), 0);
        assert_true(routed_through_alias(e, url));

        c.members[0].bad_serving_cert = false;
        assert_int_equal(etcd_test_member_reissue(&c, 0), 0);
        assert_int_equal(restart_and_ask(&c, 0, e), 0);
        assert_false(routed_through_alias(e, url));
        /* Setting the same alias again keeps what was learnt of it. */
        assert_int_equal(etcd_client_set_aliases(e, &a, 1), 0);
        assert_false(routed_through_alias(e, url));

        c.members[0].bad_serving_cert = true;
        assert_int_equal(etcd_test_member_reissue(&c, 0), 0);
        assert_int_equal(restart_and_ask(&c, 0, e), 0);
        assert_true(routed_through_alias(e, url));
        /* Without the alias the old certificate is refused, as ever. */
        assert_int_equal(etcd_client_set_aliases(e, NULL, 0), 0);
        assert_int_equal(health(e, url), -EPROTO);
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

static void test_foreign_client_ca(void **state)
{
        EtcdTestCluster c;
        _cleanup_(pki_pair_freep) PkiPair *foreign_ca = NULL, *client = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL;
        usec_t now = now_usec(CLOCK_REALTIME);

        assert_int_equal(etcd_test_cluster_init(&c, 1, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
        _cleanup_(etcd_client_freep) EtcdClient *good = etcd_test_client(&c, loop, 0x1);
        assert_int_equal(health(good, c.members[0].client_url), 0);

        assert_int_equal(
                pki_ca_new("foreign-signer", 3600 * USEC_PER_SEC, PKI_KEY_ECDSA_P256, now, &foreign_ca), 0);
        PkiCertRequest req = {.profile = PKI_PROFILE_CLIENT,
                              .cn = "etcd-client",
                              .org = "system:etcd",
                              .validity = 3600 * USEC_PER_SEC,
                              .key_type = PKI_KEY_ECDSA_P256};
        assert_int_equal(pki_cert_issue(foreign_ca, &req, now, &client), 0);
        assert_int_equal(pki_pair_to_pem(client, &crt, &key), 0);
        HttpTls tls = {.ca_pem = c.ca_pem, .cert_pem = crt, .key_pem = key};
        _cleanup_(etcd_client_freep) EtcdClient *bad = etcd_client_new(loop, &tls);
        int err = health(bad, c.members[0].client_url);
        printf("foreign client certificate: %s\n", etcd_strerror(err));
        assert_true(err == -EPROTO || err == -ECONNRESET);
        /* And without any client certificate. */
        HttpTls none = {.ca_pem = c.ca_pem};
        _cleanup_(etcd_client_freep) EtcdClient *anon = etcd_client_new(loop, &none);
        err = health(anon, c.members[0].client_url);
        assert_true(err == -EPROTO || err == -ECONNRESET);
        good = etcd_client_free(good);
        bad = etcd_client_free(bad);
        anon = etcd_client_free(anon);
        etcd_test_cluster_destroy(&c);
}

static void test_peer_san_mismatch(void **state)
{
        EtcdTestCluster c;
        EtcdTestResult r = {};
        uint64_t id = 0;

        assert_int_equal(etcd_test_cluster_init(&c, 2, NULL), 0);
        c.members[1].bad_peer_cert = true;
        assert_int_equal(etcd_test_member_reissue(&c, 1), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&c, loop, 0x1);
        assert_int_equal(etcd_member_add(e, c.members[1].peer_url, true, etcd_test_result_cb, &r), 0);
        assert_int_equal(etcd_test_wait(loop, &r, 20 * USEC_PER_SEC), 0);
        assert_int_equal(r.error, 0);
        assert_int_equal(etcd_parse_added_member(r.body, &id), 0);
        etcd_test_result_done(&r);
        _cleanup_free_ char *ic = etcd_test_initial_cluster(&c, 0x3);
        assert_int_equal(etcd_test_member_start(&c, 1, ic, true), 0);

        /* The learner never joins: promotion keeps failing and m1 logs the rejection. */
        usec_t end = now_usec(CLOCK_MONOTONIC) + 8 * USEC_PER_SEC;
        while (now_usec(CLOCK_MONOTONIC) < end) {
                assert_int_equal(etcd_member_promote(e, id, etcd_test_result_cb, &r), 0);
                assert_int_equal(etcd_test_wait(loop, &r, 20 * USEC_PER_SEC), 0);
                assert_int_equal(r.error, ETCD_ERR_LEARNER_NOT_READY);
                etcd_test_result_done(&r);
                (void) usleep(500000);
        }
        _cleanup_free_ char *log = NULL, *path = strdup_printf("%s/etcd.log", c.members[0].dir);
        assert_int_equal(read_full_file(path, 64u << 20, &log, NULL), 0);
        assert_non_null(strstr(log, "rejected connection"));
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

typedef struct SnapDone {
        bool done;
        int error;
} SnapDone;

static void on_snapshot(const EtcdSnapshotResult *res, void *userdata)
{
        SnapDone *d = userdata;
        d->error = res->error;
        d->done = true;
}

static int snapshot(EtcdClient *e, const char *endpoint, const char *path, EtcdSnapshotTransport t)
{
        SnapDone d = {};
        assert_int_equal(etcd_snapshot_save(e, endpoint, path, t, 0, NULL, on_snapshot, &d), 0);
        assert_int_equal(loop_run_until(loop, &d.done, 60 * USEC_PER_SEC), 0);
        return d.error;
}

/* etcd's HTTP listener: a member laid out as the etcd pods (gRPC alone on its
 * client port 2379, HTTP on TLS 2381) and one of the older layout (HTTP on
 * 2379, nothing on 2381, as etcd 3.4 or a pod not rolled yet): the client
 * reaches both by the same client URL, and the snapshot over gRPC stays on 2379. */
static void test_http_listener(void **state)
{
        for (int older = 0; older <= 1; older++) {
                EtcdTestCluster c;
                EtcdTestResult r = {};
                assert_int_equal(etcd_test_cluster_init(&c, 1, NULL), 0);
                EtcdTestMember *m = &c.members[0];
                m->client_port = ETCD_CLIENT_PORT;
                (void) snprintf(m->client_url, sizeof m->client_url, "https://%s:%d", m->ip,
                                ETCD_CLIENT_PORT);
                if (!older)
                        (void) snprintf(c.extra_flags, sizeof c.extra_flags,
                                        "--listen-client-http-urls=https://%s:%d", m->ip, ETCD_HTTP_PORT);
                assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
                _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&c, loop, 0x1);
                assert_int_equal(health(e, m->client_url), 0);
                assert_int_equal(etcd_member_list(e, etcd_test_result_cb, &r), 0);
                assert_int_equal(etcd_test_wait(loop, &r, 20 * USEC_PER_SEC), 0);
                assert_int_equal(r.error, 0);
                etcd_test_result_done(&r);

                /* Which port answered HTTP: 2381 for the pods' layout, 2379 for the older one. */
                _cleanup_free_ char *on_http = strdup_printf("https://%s:%d", m->ip, ETCD_HTTP_PORT);
                _cleanup_(etcd_client_freep) EtcdClient *direct = etcd_test_client(&c, loop, 0x1);
                char *const eps[] = {on_http};
                assert_int_equal(etcd_client_set_endpoints(direct, eps, 1), 0);
                assert_int_equal(health(direct, on_http), older ? -ECONNREFUSED : 0);

                /* A backup's snapshot goes over gRPC on the client port itself; through the
                 * gateway it goes to the HTTP listener. */
                _cleanup_free_ char *snap = strdup_printf("%s/grpc.db", c.dir);
                assert_int_equal(snapshot(e, m->client_url, snap, ETCD_SNAPSHOT_GRPC), 0);
                _cleanup_free_ char *gw = strdup_printf("%s/gateway.db", c.dir);
                if (!older)
                        assert_int_equal(snapshot(e, m->client_url, gw, ETCD_SNAPSHOT_GATEWAY), 0);

                e = etcd_client_free(e);
                direct = etcd_client_free(direct);
                etcd_test_cluster_destroy(&c);
        }
}

/* Requests started together to one member share one HTTP/2 connection: the
 * later ones wait for the first connection's ALPN (CURLOPT_PIPEWAIT) instead
 * of each opening its own, as the etcd view's rounds (health and status of
 * every member at once) did, two TLS connections a member. */
static void test_requests_share_a_connection(void **state)
{
        EtcdTestCluster c;
        EtcdTestResult r[4] = {};

        assert_int_equal(etcd_test_cluster_init(&c, 1, NULL), 0);
        assert_int_equal(etcd_test_cluster_bootstrap(&c, 1), 0);
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(&c, loop, 0x1);
        uint64_t before = loop_http_connections(loop);
        for (size_t i = 0; i < ELEMENTSOF(r); i++)
                assert_int_equal(i % 2 ? etcd_status(e, c.members[0].client_url, etcd_test_result_cb, &r[i])
                                       : etcd_health(e, c.members[0].client_url, etcd_test_result_cb, &r[i]),
                                 0);
        for (size_t i = 0; i < ELEMENTSOF(r); i++) {
                assert_int_equal(etcd_test_wait(loop, &r[i], 20 * USEC_PER_SEC), 0);
                assert_int_equal(r[i].error, 0);
                etcd_test_result_done(&r[i]);
        }
        printf("%zu requests started together opened %" PRIu64 " connection(s)\n", ELEMENTSOF(r),
               loop_http_connections(loop) - before);
        assert_int_equal(loop_http_connections(loop) - before, 1);
        e = etcd_client_free(e);
        etcd_test_cluster_destroy(&c);
}

static int setup(void **state)
{
        if (getenv("TEST_VERBOSE"))
                log_set_verbosity(4);
        loop = loop_new();
        return loop ? 0 : -1;
}

static int teardown(void **state)
{
        assert_int_equal(loop_http_in_flight(loop), 0);
        loop = loop_unref(loop);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_server_san_mismatch),
                cmocka_unit_test(test_server_reached_by_alias),
                cmocka_unit_test(test_alias_is_a_second_way),
                cmocka_unit_test(test_foreign_client_ca),
                cmocka_unit_test(test_peer_san_mismatch),
                cmocka_unit_test(test_http_listener),
                cmocka_unit_test(test_requests_share_a_connection),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
