/* The c-ares resolver on the real sd-event loop against a real dnsmasq on a
 * random 127.x.y.z address and port, plus two dead ends the test owns: a UDP
 * socket that swallows queries and never answers (timeouts) and a port where
 * nothing listens (refused). Every wait is loop_run_until() with a deadline,
 * so a lost callback or an unarmed timer fails the test instead of hanging
 * it. dnsmasq dies with us: PR_SET_PDEATHSIG in the child, and atexit and
 * signal handlers that kill it by PID. */
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

#include "dns/resolver.h"
#include "loop/loop.h"

#define DEADLINE    (10 * USEC_PER_SEC)
#define DNSMASQ     "/usr/sbin/dnsmasq"
#define DOMAIN      "example.test"
#define SRV_NAME    "_etcd-server-ssl._tcp." DOMAIN
#define N_PARALLEL  200
#define MAX_ANSWERS 16
#define N_BIG       300 /* A records of big.example.test */

static pid_t dnsmasq_pid = 0;
static char dnsmasq_log[] = "/tmp/test-dns-XXXXXX";
static int dnsmasq_log_fd = -EBADF;
static char addr[INET_ADDRSTRLEN];
static unsigned port;
static char servers[64];   /* dnsmasq */
static char blackhole[64]; /* reads nothing, answers nothing */
static char refused[64];   /* nothing listens */
static int blackhole_fd = -EBADF;

/* ---- dnsmasq ---- */

static void kill_dnsmasq(void)
{
        if (dnsmasq_pid > 0) {
                (void) kill(dnsmasq_pid, SIGKILL);
                (void) waitpid(dnsmasq_pid, NULL, 0);
                dnsmasq_pid = 0;
        }
        if (dnsmasq_log_fd >= 0) {
                (void) unlink(dnsmasq_log);
                (void) close(dnsmasq_log_fd);
                dnsmasq_log_fd = -EBADF;
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
        static char big[N_BIG][64];
        char listen[64], port_arg[32], server[96];
        char *argv[64 + N_BIG] = {
                DNSMASQ, "--no-daemon", "--conf-file=/dev/null", "--pid-file=", "--no-resolv", "--no-hosts",
                "--bind-interfaces", listen, port_arg, "--local-ttl=60",
                /* Everything under example.test is answered here: unknown names are NXDOMAIN. */
                "--local=/" DOMAIN "/", "--local=/2.0.192.in-addr.arpa/",
                "--host-record=api." DOMAIN ",192.0.2.10,2001:db8::10",
                "--host-record=multi." DOMAIN ",192.0.2.21", "--host-record=multi." DOMAIN ",192.0.2.22",
                "--host-record=multi." DOMAIN ",192.0.2.23", "--host-record=v4only." DOMAIN ",192.0.2.30",
                "--host-record=ttl." DOMAIN ",192.0.2.40,300",
                /* target,port,priority,weight: answered in this order, sorted by us */
                "--srv-host=" SRV_NAME ",etcd-b." DOMAIN ",2380,10,10",
                "--srv-host=" SRV_NAME ",etcd-a." DOMAIN ",2380,0,10",
                "--srv-host=" SRV_NAME ",etcd-c." DOMAIN ",2381,10,50",
                "--ptr-record=10.2.0.192.in-addr.arpa,api." DOMAIN,
                "--ptr-record=0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa,"
                "api6." DOMAIN,
                "--ptr-record=77.2.0.192.in-addr.arpa,one." DOMAIN,
                "--ptr-record=77.2.0.192.in-addr.arpa,two." DOMAIN,
                /* slow.test is forwarded to the blackhole: dnsmasq never answers it */
                server};
        size_t n = 0;
        pid_t parent = getpid();

        while (argv[n])
                n++;
        /* More than fits in a UDP answer: c-ares retries over TCP. */
        for (unsigned i = 0; i < N_BIG; i++) {
                (void) snprintf(big[i], sizeof big[i], "--host-record=big." DOMAIN ",10.1.%u.%u", i / 200,
                                1 + i % 200);
                argv[n++] = big[i];
        }
        assert_true(n < ELEMENTSOF(argv));

        (void) snprintf(listen, sizeof listen, "--listen-address=%s", addr);
        (void) snprintf(port_arg, sizeof port_arg, "--port=%u", port);
        (void) snprintf(server, sizeof server, "--server=/slow.test/%s", blackhole);
        *strchr(server + strlen("--server=/slow.test/"), ':') = '#';

        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(127);
                (void) dup2(dnsmasq_log_fd, STDOUT_FILENO);
                (void) dup2(dnsmasq_log_fd, STDERR_FILENO);
                execv(DNSMASQ, argv);
                _exit(127);
        }
        return pid;
}

static void dump_dnsmasq_log(void)
{
        _cleanup_(fclosep) FILE *f = fopen(dnsmasq_log, "re");
        char line[512];

        while (f && fgets(line, sizeof line, f))
                print_message("dnsmasq: %s", line);
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

/* Binds a UDP socket on `addr` with a kernel-chosen port; returns the fd. */
static int udp_socket(unsigned *ret_port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t len = sizeof sa;
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_int_equal(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

static int setup(void **state)
{
        unsigned p;

        if (access(DNSMASQ, X_OK) < 0)
                fail_msg("dnsmasq not found: run hack/install-deps.sh (package dnsmasq-base)");
        (void) atexit(kill_dnsmasq);
        (void) signal(SIGTERM, on_fatal_signal);
        (void) signal(SIGINT, on_fatal_signal);
        (void) signal(SIGABRT, on_fatal_signal);
        srandom((unsigned) getpid() ^ (unsigned) time(NULL));
        dnsmasq_log_fd = mkostemp(dnsmasq_log, O_CLOEXEC);
        assert_true(dnsmasq_log_fd >= 0);

        /* A taken port makes dnsmasq exit at once: try a few. */
        for (int attempt = 0; attempt < 5 && dnsmasq_pid == 0; attempt++) {
                (void) snprintf(addr, sizeof addr, "127.%u.%u.%u", 20 + (unsigned) (random() % 230),
                                (unsigned) (random() % 256), 1 + (unsigned) (random() % 254));
                port = 20000 + (unsigned) (random() % 40000);
                if (blackhole_fd >= 0)
                        (void) close(blackhole_fd);
                blackhole_fd = udp_socket(&p);
                (void) snprintf(blackhole, sizeof blackhole, "%s:%u", addr, p);
                _cleanup_(closep) int closed = udp_socket(&p);
                (void) snprintf(refused, sizeof refused, "%s:%u", addr, p);
                (void) snprintf(servers, sizeof servers, "%s:%u", addr, port);

                pid_t pid = spawn_dnsmasq();
                usec_t until = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
                dnsmasq_pid = pid;
                while (now_usec(CLOCK_MONOTONIC) < until) {
                        if (waitpid(pid, NULL, WNOHANG) == pid) {
                                dump_dnsmasq_log();
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
                fail_msg("dnsmasq did not start (see its log above)");
        return 0;
}

static int teardown(void **state)
{
        kill_dnsmasq();
        if (blackhole_fd >= 0)
                (void) close(blackhole_fd);
        return 0;
}

/* ---- answers ---- */

typedef struct Answer {
        bool done;
        unsigned calls;
        int error;
        usec_t at;
        size_t total; /* answers in the result */
        size_t n;     /* answers kept here */
        char text[MAX_ANSWERS][256];
        uint32_t ttl[MAX_ANSWERS];
        DnsSrv srv[MAX_ANSWERS];
} Answer;

static void on_answer(DnsResolver *r, const DnsResult *res, void *userdata)
{
        Answer *a = userdata;

        assert_non_null(res->message);
        assert_non_null(res->name);
        a->calls++;
        a->done = true;
        a->error = res->error;
        a->at = now_usec(CLOCK_MONOTONIC);
        a->total = res->n_addresses + res->n_srv + res->n_names;
        if (res->error < 0) {
                assert_int_equal(res->n_addresses + res->n_srv + res->n_names, 0);
                return;
        }
        for (size_t i = 0; i < res->n_addresses && a->n < MAX_ANSWERS; i++, a->n++) {
                char buf[INET6_ADDRSTRLEN];
                const DnsAddress *ad = &res->addresses[i];

                /* the text form and the binary form agree */
                assert_non_null(inet_ntop(ad->family, &ad->in6, buf, sizeof buf));
                assert_string_equal(buf, ad->text);
                (void) snprintf(a->text[a->n], sizeof a->text[a->n], "%s", ad->text);
                a->ttl[a->n] = ad->ttl;
        }
        for (size_t i = 0; i < res->n_srv && a->n < MAX_ANSWERS; i++, a->n++) {
                (void) snprintf(a->text[a->n], sizeof a->text[a->n], "%s", res->srv[i].target);
                a->srv[a->n] = res->srv[i];
                a->srv[a->n].target = NULL; /* borrowed: gone after we return */
        }
        for (size_t i = 0; i < res->n_names && a->n < MAX_ANSWERS; i++, a->n++)
                (void) snprintf(a->text[a->n], sizeof a->text[a->n], "%s", res->names[i]);
}

static DnsResolver *resolver_new(Loop *l, const char *srv, usec_t timeout, unsigned tries)
{
        DnsConfig cfg = {.servers = srv, .timeout = timeout, .tries = tries};
        DnsResolver *r = NULL;

        assert_int_equal(dns_resolver_new(l, &cfg, &r), 0);
        assert_non_null(r);
        return r;
}

typedef int (*LookupFunc)(DnsResolver *r, const char *name, DnsCallback cb, void *userdata);

static void run(Loop *l, DnsResolver *r, LookupFunc f, const char *name, Answer *a)
{
        *a = (Answer){};
        assert_int_equal(f(r, name, on_answer, a), 0);
        assert_int_equal(loop_run_until(l, &a->done, DEADLINE), 0);
        assert_int_equal(a->calls, 1);
        assert_int_equal(dns_resolver_get_pending(r), 0);
}

static bool has(const Answer *a, const char *text)
{
        for (size_t i = 0; i < a->n; i++)
                if (streq(a->text[i], text))
                        return true;
        return false;
}

/* ---- tests ---- */

static void test_a_aaaa(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Answer a;

        run(l, r, dns_lookup_a, "api." DOMAIN, &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 1);
        assert_string_equal(a.text[0], "192.0.2.10");
        assert_int_equal(a.ttl[0], 60); /* --local-ttl */

        run(l, r, dns_lookup_aaaa, "api." DOMAIN ".", &a); /* absolute form */
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 1);
        assert_string_equal(a.text[0], "2001:db8::10");

        run(l, r, dns_lookup_a, "multi." DOMAIN, &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 3);
        assert_true(has(&a, "192.0.2.21") && has(&a, "192.0.2.22") && has(&a, "192.0.2.23"));

        run(l, r, dns_lookup_a, "ttl." DOMAIN, &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.ttl[0], 300);
}

/* 300 A records do not fit in UDP: the truncated answer makes c-ares ask
 * again over TCP (a socket watched for writing while it connects); we keep
 * the first DNS_MAX_RECORDS. */
static void test_large_answer_over_tcp(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Answer a;

        run(l, r, dns_lookup_a, "big." DOMAIN, &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.total, DNS_MAX_RECORDS);
        for (size_t i = 0; i < a.n; i++)
                assert_true(startswith(a.text[i], "10.1."));
}

static void test_errors(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Answer a = {};

        run(l, r, dns_lookup_a, "nope." DOMAIN, &a);
        assert_int_equal(a.error, -ENOENT); /* NXDOMAIN */
        run(l, r, dns_lookup_srv, "_nope._tcp." DOMAIN, &a);
        assert_int_equal(a.error, -ENOENT);
        run(l, r, dns_lookup_aaaa, "v4only." DOMAIN, &a);
        assert_int_equal(a.error, -ENODATA); /* the name exists, no AAAA */
        run(l, r, dns_lookup_ptr, "192.0.2.99", &a);
        assert_int_equal(a.error, -ENOENT);
        /* Outside its local domains dnsmasq has no upstream and answers
         * REFUSED. c-ares 1.18 moves on and, when no server is left, reports
         * "Could not contact DNS servers" like a refused connection; later
         * versions say ARES_EREFUSED, which is -EIO. */
        run(l, r, dns_lookup_a, "elsewhere.invalid", &a);
        assert_true(a.error == -ECONNREFUSED || a.error == -EIO);

        /* Rejected before anything is sent, and the callback never runs. */
        assert_int_equal(dns_lookup_a(r, "bad..name", on_answer, &a), -EINVAL);
        assert_int_equal(dns_lookup_a(r, "-bad." DOMAIN, on_answer, &a), -EINVAL);
        assert_int_equal(dns_lookup_srv(r, "", on_answer, &a), -EINVAL);
        assert_int_equal(dns_lookup_ptr(r, "192.0.2", on_answer, &a), -EINVAL);
        assert_int_equal(dns_lookup_ptr(r, "api." DOMAIN, on_answer, &a), -EINVAL);
        assert_int_equal(dns_resolver_get_pending(r), 0);

        DnsConfig bad = {.servers = "not-an-address"};
        DnsResolver *none = NULL;
        assert_int_equal(dns_resolver_new(l, &bad, &none), -EINVAL);
        assert_null(none);
        bad = (DnsConfig){.servers = ""};
        assert_int_equal(dns_resolver_new(l, &bad, &none), -EINVAL);
        bad = (DnsConfig){.servers = servers, .tries = 100};
        assert_int_equal(dns_resolver_new(l, &bad, &none), -EINVAL);
        assert_null(none);
}

static void test_srv(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Answer a;

        run(l, r, dns_lookup_srv, SRV_NAME, &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 3);
        assert_string_equal(a.text[0], "etcd-a." DOMAIN);
        assert_int_equal(a.srv[0].priority, 0);
        assert_int_equal(a.srv[0].port, 2380);
        assert_string_equal(a.text[1], "etcd-c." DOMAIN); /* same priority, heavier first */
        assert_int_equal(a.srv[1].priority, 10);
        assert_int_equal(a.srv[1].weight, 50);
        assert_int_equal(a.srv[1].port, 2381);
        assert_string_equal(a.text[2], "etcd-b." DOMAIN);
        assert_int_equal(a.srv[2].weight, 10);
}

static void test_ptr(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Answer a;

        run(l, r, dns_lookup_ptr, "192.0.2.10", &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 1);
        assert_string_equal(a.text[0], "api." DOMAIN);

        run(l, r, dns_lookup_ptr, "2001:db8::10", &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 1);
        assert_string_equal(a.text[0], "api6." DOMAIN);

        run(l, r, dns_lookup_ptr, "192.0.2.77", &a);
        assert_int_equal(a.error, 0);
        assert_int_equal(a.n, 2);
        assert_true(has(&a, "one." DOMAIN) && has(&a, "two." DOMAIN));
}

/* Nothing answers: -ETIMEDOUT after all tries, within the documented bound. */
static void test_timeout(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, blackhole, 150 * USEC_PER_MSEC, 2);
        usec_t max = dns_resolver_get_max_duration(r);
        Answer a;

        assert_int_equal(max, 450 * USEC_PER_MSEC); /* 150 ms, then 300 ms */
        usec_t start = now_usec(CLOCK_MONOTONIC);
        run(l, r, dns_lookup_a, "api." DOMAIN, &a);
        assert_int_equal(a.error, -ETIMEDOUT);
        assert_true(a.at - start >= max);
        assert_true(a.at - start <= max + 400 * USEC_PER_MSEC);
}

/* A name dnsmasq forwards into the blackhole times out; its neighbours on
 * the same server and socket are answered meanwhile. */
static void test_slow_name_does_not_block(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 300 * USEC_PER_MSEC, 1);
        Answer slow = {}, fast = {};

        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(dns_lookup_a(r, "x.slow.test", on_answer, &slow), 0);
        assert_int_equal(dns_lookup_a(r, "api." DOMAIN, on_answer, &fast), 0);
        assert_int_equal(dns_resolver_get_pending(r), 2);
        assert_int_equal(loop_run_until(l, &fast.done, DEADLINE), 0);
        assert_int_equal(fast.error, 0);
        assert_false(slow.done);
        assert_int_equal(loop_run_until(l, &slow.done, DEADLINE), 0);
        assert_int_equal(slow.error, -ETIMEDOUT);
        assert_true(slow.at - start <= dns_resolver_get_max_duration(r) + 400 * USEC_PER_MSEC);
        assert_int_equal(slow.calls + fast.calls, 2);
}

static void test_refused(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, refused, 2 * USEC_PER_SEC, 2);
        Answer a;

        usec_t start = now_usec(CLOCK_MONOTONIC);
        run(l, r, dns_lookup_a, "api." DOMAIN, &a);
        assert_int_equal(a.error, -ECONNREFUSED);
        assert_true(a.at - start < USEC_PER_SEC); /* the ICMP error, not a timeout */
}

/* The second server answers when the first is dead; order is preserved. */
static void test_failover(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_free_ char *list = strdup_printf("%s,%s", refused, servers);
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, list, 200 * USEC_PER_MSEC, 1);
        Answer a;

        assert_int_equal(dns_resolver_get_max_duration(r), 400 * USEC_PER_MSEC);
        run(l, r, dns_lookup_a, "api." DOMAIN, &a);
        assert_int_equal(a.error, 0);
        assert_string_equal(a.text[0], "192.0.2.10");
}

static unsigned n_finished;
static bool all_finished;

static void on_answer_count(DnsResolver *r, const DnsResult *res, void *userdata)
{
        on_answer(r, res, userdata);
        all_finished = ++n_finished == N_PARALLEL;
}

static void test_many_concurrent(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        static Answer answers[N_PARALLEL];
        static const int want_error[4] = {0, 0, 0, -ENOENT};
        static const size_t want_n[4] = {3, 3, 1, 0};
        static const LookupFunc f[4] = {dns_lookup_a, dns_lookup_srv, dns_lookup_ptr, dns_lookup_aaaa};
        static const char *const name[4] = {"multi." DOMAIN, SRV_NAME, "192.0.2.10", "nope." DOMAIN};

        n_finished = 0;
        all_finished = false;
        for (int i = 0; i < N_PARALLEL; i++) {
                answers[i] = (Answer){};
                assert_int_equal(f[i % 4](r, name[i % 4], on_answer_count, &answers[i]), 0);
        }
        assert_int_equal(dns_resolver_get_pending(r), N_PARALLEL);
        assert_int_equal(loop_run_until(l, &all_finished, DEADLINE), 0);
        for (int i = 0; i < N_PARALLEL; i++) {
                assert_int_equal(answers[i].calls, 1);
                assert_int_equal(answers[i].error, want_error[i % 4]);
                assert_int_equal(answers[i].n, want_n[i % 4]);
        }
        assert_int_equal(dns_resolver_get_pending(r), 0);
}

/* ---- callbacks that call back ---- */

typedef struct Chain {
        DnsResolver *r;
        Answer srv;
        Answer targets[3];
        unsigned started;
} Chain;

static void on_srv_then_a(DnsResolver *r, const DnsResult *res, void *userdata)
{
        Chain *c = userdata;

        on_answer(r, res, &c->srv);
        for (size_t i = 0; i < res->n_srv && i < ELEMENTSOF(c->targets); i++) {
                /* the targets have no A records: each ends in NXDOMAIN */
                assert_int_equal(dns_lookup_a(r, res->srv[i].target, on_answer, &c->targets[i]), 0);
                c->started++;
        }
}

static void test_lookup_from_callback(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        _cleanup_(dns_resolver_freep) DnsResolver *r = resolver_new(l, servers, 0, 0);
        Chain c = {.r = r};

        assert_int_equal(dns_lookup_srv(r, SRV_NAME, on_srv_then_a, &c), 0);
        assert_int_equal(loop_run_until(l, &c.srv.done, DEADLINE), 0);
        assert_int_equal(c.started, 3);
        for (unsigned i = 0; i < 3; i++) {
                assert_int_equal(loop_run_until(l, &c.targets[i].done, DEADLINE), 0);
                assert_int_equal(c.targets[i].calls, 1);
                assert_int_equal(c.targets[i].error, -ENOENT);
        }
        assert_int_equal(dns_resolver_get_pending(r), 0);
}

typedef struct Freeing {
        DnsResolver *r;
        Answer first;
        Answer others[20];
        unsigned cancelled_inside;
} Freeing;

static void on_answer_then_free(DnsResolver *r, const DnsResult *res, void *userdata)
{
        Freeing *f = userdata;

        on_answer(r, res, &f->first);
        dns_resolver_free(f->r); /* from inside c-ares' own processing */
        for (size_t i = 0; i < ELEMENTSOF(f->others); i++)
                f->cancelled_inside += f->others[i].done && f->others[i].error == -ECANCELED;
        /* a second free and new lookups are harmless */
        assert_null(dns_resolver_free(r));
        Answer ignored = {};
        assert_int_equal(dns_lookup_a(r, "api." DOMAIN, on_answer, &ignored), -ECANCELED);
        f->r = NULL;
}

static void test_free_from_callback(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        Freeing f = {.r = resolver_new(l, servers, 0, 0)};

        /* The first answer comes from dnsmasq; the others wait on slow.test. */
        assert_int_equal(dns_lookup_a(f.r, "api." DOMAIN, on_answer_then_free, &f), 0);
        for (size_t i = 0; i < ELEMENTSOF(f.others); i++)
                assert_int_equal(dns_lookup_a(f.r, "y.slow.test", on_answer, &f.others[i]), 0);
        assert_int_equal(loop_run_until(l, &f.first.done, DEADLINE), 0);
        assert_null(f.r);
        assert_int_equal(f.first.error, 0);
        assert_int_equal(f.cancelled_inside, ELEMENTSOF(f.others));

        /* Nothing runs afterwards: no stray callback, timer or socket. */
        bool never = false;
        assert_int_equal(loop_run_until(l, &never, 500 * USEC_PER_MSEC), -ETIMEDOUT);
        assert_int_equal(f.first.calls, 1);
        for (size_t i = 0; i < ELEMENTSOF(f.others); i++)
                assert_int_equal(f.others[i].calls, 1);
}

/* Freeing with lookups in flight completes every one of them with
 * -ECANCELED before dns_resolver_free() returns, and then never again. */
static void test_free_pending(void **state)
{
        _cleanup_(loop_unrefp) Loop *l = loop_new();
        DnsResolver *r = resolver_new(l, blackhole, 2 * USEC_PER_SEC, 3);
        static Answer answers[50];

        for (size_t i = 0; i < ELEMENTSOF(answers); i++) {
                answers[i] = (Answer){};
                assert_int_equal(dns_lookup_a(r, "api." DOMAIN, on_answer, &answers[i]), 0);
        }
        /* Let the queries reach the wire, so there are sockets and a timer. */
        bool never = false;
        assert_int_equal(loop_run_until(l, &never, 50 * USEC_PER_MSEC), -ETIMEDOUT);
        for (size_t i = 0; i < ELEMENTSOF(answers); i++)
                assert_false(answers[i].done);

        assert_null(dns_resolver_free(r));
        for (size_t i = 0; i < ELEMENTSOF(answers); i++) {
                assert_int_equal(answers[i].calls, 1);
                assert_int_equal(answers[i].error, -ECANCELED);
        }
        assert_int_equal(loop_run_until(l, &never, 300 * USEC_PER_MSEC), -ETIMEDOUT);
        for (size_t i = 0; i < ELEMENTSOF(answers); i++)
                assert_int_equal(answers[i].calls, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_aaaa),
                cmocka_unit_test(test_large_answer_over_tcp),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_srv),
                cmocka_unit_test(test_ptr),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_slow_name_does_not_block),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_failover),
                cmocka_unit_test(test_many_concurrent),
                cmocka_unit_test(test_lookup_from_callback),
                cmocka_unit_test(test_free_from_callback),
                cmocka_unit_test(test_free_pending),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
