/* Requests for names on the real loop: c-ares (dns/hostnames.h) asks a real
 * dnsmasq on a random 127.x.y.z address and port, and curl connects where the
 * answer says, to the operator's own HTTP server on that address. The names
 * live only in that dnsmasq: a request that reached its server was resolved
 * by c-ares, not by curl or glibc, which know nothing of them. Names that do
 * not exist fail with c-ares' words, in the request's error text and in what
 * the Kubernetes, etcd and S3 clients hand their callers. Every wait is
 * loop_run_until() with a deadline. dnsmasq dies with us: PR_SET_PDEATHSIG in
 * the child, and atexit and signal handlers that kill it by PID. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "base/json.h"
#include "dns/hostnames.h"
#include "etcd/client.h"
#include "kube/client.h"
#include "loop/loop.h"
#include "runtime/httpserver.h"
#include "s3/s3.h"

#define DEADLINE  (10 * USEC_PER_SEC)
#define DNSMASQ   "/usr/sbin/dnsmasq"
#define DOMAIN    "example.test"
#define NOT_FOUND "Domain name not found" /* c-ares' words for NXDOMAIN */

static pid_t dnsmasq_pid = 0;
static char addr[INET_ADDRSTRLEN]; /* dnsmasq's, and the HTTP server's */
static unsigned port;
static char servers[64];
static char blackhole[64]; /* a UDP socket that never answers */
static int blackhole_fd = -EBADF;

/* ---- dnsmasq ---- */

static void kill_dnsmasq(void)
{
        if (dnsmasq_pid > 0) {
                (void) kill(dnsmasq_pid, SIGKILL);
                (void) waitpid(dnsmasq_pid, NULL, 0);
                dnsmasq_pid = 0;
        }
}

static void on_fatal_signal(int sig)
{
        if (dnsmasq_pid > 0)
                (void) kill(dnsmasq_pid, SIGKILL);
        (void) signal(sig, SIG_DFL);
        (void) raise(sig);
}

static pid_t spawn_dnsmasq(void)
{
        char listen[64], port_arg[32], web[96], web2[96], ttl0[96], v6only[96];
        char *argv[] = {DNSMASQ, "--no-daemon", "--conf-file=/dev/null", "--pid-file=", "--no-resolv",
                        "--no-hosts", "--bind-interfaces", "--log-facility=/dev/null", listen, port_arg,
                        "--local-ttl=60",
                        /* Everything under example.test is answered here: unknown names are NXDOMAIN. */
                        "--local=/" DOMAIN "/", web, web2, ttl0, v6only,
                        /* A name without addresses: A and AAAA both answer "no data". */
                        "--txt-record=txt." DOMAIN ",hello", NULL};
        pid_t parent = getpid();

        (void) snprintf(listen, sizeof listen, "--listen-address=%s", addr);
        (void) snprintf(port_arg, sizeof port_arg, "--port=%u", port);
        (void) snprintf(web, sizeof web, "--host-record=web." DOMAIN ",%s", addr);
        (void) snprintf(web2, sizeof web2, "--host-record=web2." DOMAIN ",%s", addr);
        (void) snprintf(ttl0, sizeof ttl0, "--host-record=ttl0." DOMAIN ",%s,0", addr);
        (void) snprintf(v6only, sizeof v6only, "--host-record=v6only." DOMAIN ",2001:db8::6");

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(127);
                execv(DNSMASQ, argv);
                _exit(127);
        }
        return pid;
}

/* dnsmasq listens on TCP as well as UDP: a TCP connect says it is up. */
static bool dnsmasq_ready(void)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        _cleanup_(closep) int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
        return connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0;
}

static int setup(void **state)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof sa;

        if (access(DNSMASQ, X_OK) < 0)
                fail_msg("dnsmasq not found: run hack/install-deps.sh (package dnsmasq-base)");
        (void) atexit(kill_dnsmasq);
        (void) signal(SIGTERM, on_fatal_signal);
        (void) signal(SIGINT, on_fatal_signal);
        (void) signal(SIGABRT, on_fatal_signal);
        srandom((unsigned) getpid() ^ (unsigned) time(NULL));

        /* A taken port makes dnsmasq exit at once: try a few. */
        for (int attempt = 0; attempt < 5 && dnsmasq_pid == 0; attempt++) {
                (void) snprintf(addr, sizeof addr, "127.%u.%u.%u", 20 + (unsigned) (random() % 230),
                                (unsigned) (random() % 256), 1 + (unsigned) (random() % 254));
                port = 20000 + (unsigned) (random() % 40000);
                (void) snprintf(servers, sizeof servers, "%s:%u", addr, port);
                pid_t pid = spawn_dnsmasq();
                usec_t until = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
                dnsmasq_pid = pid;
                while (now_usec(CLOCK_MONOTONIC) < until) {
                        if (waitpid(pid, NULL, WNOHANG) == pid) {
                                dnsmasq_pid = 0;
                                break;
                        }
                        if (dnsmasq_ready())
                                break;
                        (void) usleep(20 * 1000);
                }
                if (dnsmasq_pid > 0 && !dnsmasq_ready())
                        fail_msg("dnsmasq did not come up on %s", servers);
        }
        if (dnsmasq_pid == 0)
                fail_msg("dnsmasq did not start");

        blackhole_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(blackhole_fd >= 0);
        assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
        assert_int_equal(bind(blackhole_fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(getsockname(blackhole_fd, (struct sockaddr *) &sa, &len), 0);
        (void) snprintf(blackhole, sizeof blackhole, "%s:%u", addr, ntohs(sa.sin_port));
        return 0;
}

static int teardown(void **state)
{
        kill_dnsmasq();
        if (blackhole_fd >= 0)
                (void) close(blackhole_fd);
        return 0;
}

/* ---- helpers ---- */

/* A loop whose names go to `dns` (dnsmasq unless told), with no hosts file and no search
 * list (this machine's resolv.conf would add its own domains to the names asked). */
static Loop *loop_with_names(const char *dns, usec_t timeout, unsigned tries, DnsHostnames **ret)
{
        Loop *l = loop_new();
        DnsHostnamesConfig cfg = {
                .dns = {.servers = dns ? dns : servers, .timeout = timeout, .tries = tries, .search = ""},
                .hosts = ""};

        assert_non_null(l);
        assert_int_equal(dns_hostnames_attach(l, &cfg, ret), 0);
        return l;
}

static HttpServer *server_new(Loop *l)
{
        HttpServerConfig cfg = {.address = addr};
        HttpServer *s = NULL;

        assert_int_equal(http_server_new(loop_get_event(l), &cfg, &s), 0);
        return s;
}

typedef struct Done {
        bool done;
        unsigned calls;
        int error;
} Done;

static void on_done(HttpRequest *req, int error, void *userdata)
{
        Done *d = userdata;

        d->done = true;
        d->calls++;
        d->error = error;
}

/* GET of `url` to the end: its error, the request kept for a look at it. */
static int get(Loop *l, const char *url, HttpRequest **ret)
{
        _cleanup_(http_request_unrefp) HttpRequest *req = http_request_new("GET", url);
        Done d = {};

        assert_non_null(req);
        assert_int_equal(loop_http_start(l, req, on_done, &d), 0);
        assert_int_equal(loop_run_until(l, &d.done, DEADLINE), 0);
        assert_int_equal(d.calls, 1);
        assert_int_equal(loop_http_in_flight(l), 0);
        if (ret)
                *ret = TAKE_PTR(req);
        return d.error;
}

static char *url_of(HttpServer *s, const char *host)
{
        char *u = strdup_printf("http://%s:%u/healthz", host, http_server_get_port(s));
        assert_non_null(u);
        return u;
}

/* ---- tests ---- */

/* The name exists only in dnsmasq: the answer reached curl, and the cache spares the second lookup. */
static void test_request_to_a_name(void **state)
{
        DnsHostnames *h = NULL;
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, &h);
        _cleanup_(http_server_freep) HttpServer *s = server_new(l);
        _cleanup_free_ char *url = url_of(s, "web." DOMAIN), *upper = url_of(s, "WEB." DOMAIN ".");
        DnsHostnamesStats st;
        HttpRequest *req = NULL;
        size_t len = 0;

        assert_int_equal(get(l, url, &req), 0);
        assert_int_equal(http_request_get_status(req), 200);
        assert_string_equal(http_request_get_body(req, &len), "ok");
        req = http_request_unref(req);
        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.lookups, 1);
        assert_int_equal(st.cached, 0);

        /* Within its TTL (60 s): no lookup, whatever the case and trailing dot of the name. */
        assert_int_equal(get(l, url, NULL), 0);
        assert_int_equal(get(l, upper, NULL), 0);
        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.lookups, 1);
        assert_int_equal(st.cached, 2);
        assert_int_equal(st.failures, 0);
}

/* A short name through the search list, as glibc's resolver would take it in a pod: "web"
 * (fewer dots than ndots) is asked as web.example.test first; a full name is still asked
 * as it is; a search list of more domains than resolv.conf allows is refused. */
static void test_search_list(void **state)
{
        Loop *l = loop_new();
        DnsHostnames *h = NULL;
        DnsHostnamesConfig cfg = {.dns = {.servers = servers, .search = "other." DOMAIN "," DOMAIN},
                                  .hosts = ""};

        assert_non_null(l);
        assert_int_equal(dns_hostnames_attach(l, &cfg, &h), 0);
        _cleanup_(loop_unrefp) Loop *owned = l;
        _cleanup_(http_server_freep) HttpServer *srv = server_new(l);
        _cleanup_free_ char *short_url = url_of(srv, "web"), *full_url = url_of(srv, "web2." DOMAIN),
                            *absent = url_of(srv, "absent");
        HttpRequest *req = NULL;

        assert_int_equal(get(l, short_url, &req), 0);
        assert_int_equal(http_request_get_status(req), 200);
        req = http_request_unref(req);
        assert_int_equal(get(l, full_url, NULL), 0);
        /* Not under any of the domains either: still c-ares' words and the name asked. */
        assert_int_equal(get(l, absent, &req), -EHOSTUNREACH);
        assert_non_null(strstr(strempty(http_request_get_error(req)), "absent"));
        req = http_request_unref(req);

        Loop *l2 = loop_new();
        DnsHostnamesConfig seven = {.dns = {.servers = servers,
                                            .search = "a.test,b.test,c.test,d.test,e.test,"
                                                      "f.test,g.test"},
                                    .hosts = ""};
        assert_non_null(l2);
        assert_int_equal(dns_hostnames_attach(l2, &seven, NULL), -EINVAL);
        loop_unref(l2);
        (void) state;
}

/* TTL 0: nothing kept, every request asks. */
static void test_ttl_zero_is_not_kept(void **state)
{
        DnsHostnames *h = NULL;
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, &h);
        _cleanup_(http_server_freep) HttpServer *s = server_new(l);
        _cleanup_free_ char *url = url_of(s, "ttl0." DOMAIN);
        DnsHostnamesStats st;

        assert_int_equal(get(l, url, NULL), 0);
        assert_int_equal(get(l, url, NULL), 0);
        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.lookups, 2);
        assert_int_equal(st.cached, 0);
}

/* Requests started together for one name share one lookup. */
static void test_concurrent_requests_share_a_lookup(void **state)
{
        DnsHostnames *h = NULL;
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, &h);
        _cleanup_(http_server_freep) HttpServer *s = server_new(l);
        _cleanup_free_ char *url = url_of(s, "web2." DOMAIN);
        HttpRequest *reqs[5] = {};
        Done d[ELEMENTSOF(reqs)] = {};
        DnsHostnamesStats st;

        for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
                reqs[i] = http_request_new("GET", url);
                assert_int_equal(loop_http_start(l, reqs[i], on_done, &d[i]), 0);
        }
        for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
                assert_int_equal(loop_run_until(l, &d[i].done, DEADLINE), 0);
                assert_int_equal(d[i].error, 0);
                assert_int_equal(http_request_get_status(reqs[i]), 200);
                reqs[i] = http_request_unref(reqs[i]);
        }
        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.lookups, 1);
        assert_int_equal(st.joined, ELEMENTSOF(reqs) - 1);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* A name that does not exist: the request fails naming it, in c-ares' words. */
static void test_name_not_found(void **state)
{
        DnsHostnames *h = NULL;
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, &h);
        _cleanup_(http_server_freep) HttpServer *s = server_new(l);
        _cleanup_free_ char *url = url_of(s, "nope." DOMAIN);
        DnsHostnamesStats st;
        HttpRequest *req = NULL;

        assert_int_equal(get(l, url, &req), -EHOSTUNREACH);
        assert_int_equal(http_request_get_status(req), 0);
        assert_string_equal(http_request_get_error(req), "cannot resolve nope." DOMAIN ": " NOT_FOUND);
        req = http_request_unref(req);

        /* Not remembered: asked again. */
        assert_int_equal(get(l, url, NULL), -EHOSTUNREACH);
        dns_hostnames_get_stats(h, &st);
        assert_int_equal(st.lookups, 2);
        assert_int_equal(st.failures, 2);
}

typedef struct Heard {
        bool done;
        int error;
        char message[128];
        size_t n;
        char first[INET6_ADDRSTRLEN];
} Heard;

static void on_heard(void *token, const LoopResolveAnswer *a)
{
        Heard *h = token;

        h->done = true;
        h->error = a->error;
        (void) snprintf(h->message, sizeof h->message, "%s", strempty(a->message));
        h->n = a->n_addresses;
        if (a->n_addresses > 0)
                (void) snprintf(h->first, sizeof h->first, "%s", a->addresses[0]);
}

/* An AAAA alone is an answer; a name with neither is "no data", in c-ares' words. */
static void test_answers_by_family(void **state)
{
        DnsHostnames *h = NULL;
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, &h);
        Heard heard = {};

        assert_int_equal(dns_hostnames_resolve(h, "v6only." DOMAIN, on_heard, &heard), 0);
        assert_int_equal(loop_run_until(l, &heard.done, DEADLINE), 0);
        assert_int_equal(heard.error, 0);
        assert_int_equal(heard.n, 1);
        assert_string_equal(heard.first, "2001:db8::6");

        heard = (Heard){};
        assert_int_equal(dns_hostnames_resolve(h, "txt." DOMAIN, on_heard, &heard), 0);
        assert_int_equal(loop_run_until(l, &heard.done, DEADLINE), 0);
        assert_int_equal(heard.error, -ENODATA);
        assert_string_equal(heard.message, "DNS server returned answer with no data");
}

/* No server answers: the request fails once c-ares gives up, in its words; one cancelled
 * meanwhile hears nothing, and its lookup ends on its own. */
static void test_no_answer(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(blackhole, 100 * USEC_PER_MSEC, 1, NULL);
        _cleanup_(http_request_unrefp) HttpRequest *cancelled =
                http_request_new("GET", "http://a." DOMAIN "/");
        HttpRequest *req = NULL;
        Done d = {};

        assert_int_equal(loop_http_start(l, cancelled, on_done, &d), 0);
        http_request_cancel(cancelled);
        assert_int_equal(loop_http_in_flight(l), 0);

        assert_int_equal(get(l, "http://b." DOMAIN "/", &req), -EHOSTUNREACH);
        assert_string_equal(http_request_get_error(req),
                            "cannot resolve b." DOMAIN ": Timeout while contacting DNS servers");
        req = http_request_unref(req);
        assert_int_equal(d.calls, 0);
}

/* What the clients hand their callers carries the resolver's words. */
static void on_kube(KubeClient *c, const KubeResponse *resp, void *userdata)
{
        Heard *h = userdata;

        h->done = true;
        h->error = resp->error;
        (void) snprintf(h->message, sizeof h->message, "%s",
                        resp->status && resp->status->message ? resp->status->message : "");
}

static void on_etcd(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Heard *h = userdata;

        h->done = true;
        h->error = resp->error;
        (void) snprintf(h->message, sizeof h->message, "%s", strempty(resp->message));
}

static void test_clients_report_the_name(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, NULL);
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        Heard heard = {};

        assert_non_null(cfg);
        cfg->server = strdup("https://api.nope." DOMAIN ":6443");
        _cleanup_(kube_client_freep) KubeClient *kc = kube_client_new(l, cfg);
        assert_non_null(kc);
        _cleanup_(cJSON_Deletep) cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"x\"}}");
        assert_int_equal(kube_create(kc, &KUBE_CONFIGMAPS, "default", obj, on_kube, &heard), 0);
        assert_int_equal(loop_run_until(l, &heard.done, DEADLINE), 0);
        assert_int_equal(heard.error, -EHOSTUNREACH);
        assert_string_equal(heard.message, "cannot resolve api.nope." DOMAIN ": " NOT_FOUND);

        HttpTls tls = {};
        _cleanup_(etcd_client_freep) EtcdClient *ec = etcd_client_new(l, &tls);
        char *endpoints[] = {"https://etcd-0.nope." DOMAIN ":2379"};
        assert_non_null(ec);
        assert_int_equal(etcd_client_set_endpoints(ec, endpoints, 1), 0);
        heard = (Heard){};
        assert_int_equal(etcd_member_list(ec, on_etcd, &heard), 0);
        assert_int_equal(loop_run_until(l, &heard.done, DEADLINE), 0);
        assert_int_equal(heard.error, -EHOSTUNREACH);
        /* The member's HTTP port (etcd_http_url()): the name is the same. */
        assert_string_equal(heard.message, "cannot resolve etcd-0.nope." DOMAIN ": " NOT_FOUND);
        assert_int_equal(loop_http_in_flight(l), 0);
}

/* The S3 client runs on the loop's HTTP stack: its endpoint's name is c-ares' too. */
static void test_s3_endpoint_by_name(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_with_names(NULL, 0, 0, NULL);
        _cleanup_(http_server_freep) HttpServer *s = server_new(l);
        _cleanup_free_ char *found = strdup_printf("http://web." DOMAIN ":%u", http_server_get_port(s)),
                            *missing = strdup_printf("http://nope." DOMAIN ":%u", http_server_get_port(s));
        S3Store st = {.region = (char *) "us-east-1",
                      .bucket = (char *) "bkt",
                      .prefix = (char *) "",
                      .access_key = (char *) "a",
                      .secret_key = (char *) "s",
                      .dir = (char *) "/creds",
                      .path_style = true,
                      .insecure_http = true,
                      .loop = l};
        S3Object o = {};
        char *err = NULL;

        /* It got to the server, which has no S3 paths. */
        st.endpoint = found;
        assert_int_equal(s3_head(&st, "k", &o, &err), -ENOENT);
        assert_non_null(strstr(err, "HTTP 404"));
        err = mfree(err);

        /* Retried (3.5 s), then reported in c-ares' words. */
        st.endpoint = missing;
        assert_int_equal(s3_head(&st, "k", &o, &err), -EHOSTUNREACH);
        _cleanup_free_ char *want = strdup_printf("S3 HEAD s3://bkt/k at %s: cannot resolve nope." DOMAIN
                                                  ": " NOT_FOUND " (after 4 attempts; check the endpoint in "
                                                  "/creds)",
                                                  missing);
        assert_string_equal(err, want);
        err = mfree(err);
        assert_int_equal(loop_http_in_flight(l), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_to_a_name),
                cmocka_unit_test(test_ttl_zero_is_not_kept),
                cmocka_unit_test(test_concurrent_requests_share_a_lookup),
                cmocka_unit_test(test_name_not_found),
                cmocka_unit_test(test_answers_by_family),
                cmocka_unit_test(test_no_answer),
                cmocka_unit_test(test_clients_report_the_name),
                cmocka_unit_test(test_s3_endpoint_by_name),
                cmocka_unit_test(test_search_list),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
