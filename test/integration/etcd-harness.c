/* The etcd test cluster harness. */
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/backoff.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "etcd-harness.h"

#define MAX_CLUSTERS 4

static EtcdTestCluster *live[MAX_CLUSTERS];

static void destroy_all(void)
{
        for (size_t i = 0; i < MAX_CLUSTERS; i++)
                if (live[i])
                        etcd_test_cluster_destroy(live[i]);
}

static void on_fatal_signal(int sig)
{
        destroy_all();
        signal(sig, SIG_DFL);
        raise(sig);
}

static unsigned pick(unsigned lo, unsigned hi)
{
        return lo + (unsigned) (random_unit() * (hi - lo));
}

static int issue(EtcdTestCluster *c, EtcdTestMember *m, usec_t now)
{
        const char *dns[] = {"localhost", NULL};
        const char *ips[] = {m->ip, "127.0.0.1", NULL};
        const char *wrong_ips[] = {"127.254.254.254", NULL};
        char dir[600];
        _cleanup_(pki_pair_freep) PkiPair *serving = NULL, *peer = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL, *pcrt = NULL, *pkey = NULL;
        int r;

        PkiCertRequest req = {.profile = PKI_PROFILE_SERVER_CLIENT,
                              .cn = m->name,
                              .dns = dns,
                              .ips = ips,
                              .validity = 24 * 3600 * USEC_PER_SEC,
                              .key_type = PKI_KEY_ECDSA_P256};
        PkiCertRequest wrong = req;
        wrong.dns = NULL;
        wrong.ips = wrong_ips;
        r = pki_cert_issue(c->ca, m->bad_serving_cert ? &wrong : &req, now, &serving);
        if (r < 0)
                return r;
        r = pki_cert_issue(c->ca, m->bad_peer_cert ? &wrong : &req, now, &peer);
        if (r < 0)
                return r;
        if ((r = pki_pair_to_pem(serving, &crt, &key)) < 0 || (r = pki_pair_to_pem(peer, &pcrt, &pkey)) < 0)
                return r;
        (void) snprintf(dir, sizeof dir, "%s", m->dir);
        if ((r = pki_write_pair(dir, "serving", crt, key)) < 0 ||
            (r = pki_write_pair(dir, "peer", pcrt, pkey)) < 0)
                return r;
        return 0;
}

int etcd_test_cluster_init(EtcdTestCluster *c, size_t n, const char *extra)
{
        usec_t now = now_usec(CLOCK_REALTIME);
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        _cleanup_(pki_pair_freep) PkiPair *client = NULL;
        int r;

        assert_return(c && n > 0 && n <= ETCD_TEST_MAX_MEMBERS, -EINVAL);
        *c = (EtcdTestCluster){};
        for (size_t i = 0; i < MAX_CLUSTERS; i++)
                if (!live[i]) {
                        live[i] = c;
                        break;
                }
        (void) atexit(destroy_all);
        (void) signal(SIGABRT, on_fatal_signal);
        (void) signal(SIGSEGV, on_fatal_signal);
        (void) signal(SIGTERM, on_fatal_signal);
        (void) signal(SIGINT, on_fatal_signal);
        (void) snprintf(c->dir, sizeof c->dir, "%s/ceo-etcd-test-XXXXXX", base);
        if (!mkdtemp(c->dir))
                return -errno;
        (void) snprintf(c->token, sizeof c->token, "test-%u-%u", (unsigned) getpid(), pick(0, 1u << 30));
        (void) snprintf(c->extra_flags, sizeof c->extra_flags, "%s", strempty(extra));

        r = pki_ca_new("etcd-test-signer", 24 * 3600 * USEC_PER_SEC, PKI_KEY_ECDSA_P256, now, &c->ca);
        if (r < 0)
                return r;
        _cleanup_free_ char *ca_key = NULL;
        if ((r = pki_pair_to_pem(c->ca, &c->ca_pem, &ca_key)) < 0)
                return r;
        (void) snprintf(c->ca_file, sizeof c->ca_file, "%s/ca.crt", c->dir);
        if ((r = write_file_atomic(c->ca_file, c->ca_pem, strlen(c->ca_pem), 0644)) < 0)
                return r;
        PkiCertRequest creq = {.profile = PKI_PROFILE_CLIENT,
                               .cn = "etcd-client",
                               .org = "system:etcd",
                               .validity = 24 * 3600 * USEC_PER_SEC,
                               .key_type = PKI_KEY_ECDSA_P256};
        if ((r = pki_cert_issue(c->ca, &creq, now, &client)) < 0 ||
            (r = pki_pair_to_pem(client, &c->client_cert_pem, &c->client_key_pem)) < 0)
                return r;
        c->tls =
                (HttpTls){.ca_pem = c->ca_pem, .cert_pem = c->client_cert_pem, .key_pem = c->client_key_pem};

        /* One /24 per cluster; one address per member, as on real nodes. */
        unsigned a = pick(10, 250), b = pick(1, 250), port = pick(20000, 60000);
        c->n = n;
        for (size_t i = 0; i < n; i++) {
                EtcdTestMember *m = &c->members[i];
                (void) snprintf(m->name, sizeof m->name, "m%zu", i + 1);
                (void) snprintf(m->ip, sizeof m->ip, "127.%u.%u.%zu", a, b, i + 2);
                m->client_port = port;
                m->peer_port = port + 1;
                (void) snprintf(m->client_url, sizeof m->client_url, "https://%s:%u", m->ip, m->client_port);
                (void) snprintf(m->peer_url, sizeof m->peer_url, "https://%s:%u", m->ip, m->peer_port);
                (void) snprintf(m->dir, sizeof m->dir, "%s/%s", c->dir, m->name);
                if (mkdir(m->dir, 0700) < 0)
                        return -errno;
                if ((r = issue(c, m, now)) < 0)
                        return r;
        }
        return 0;
}

int etcd_test_member_reissue(EtcdTestCluster *c, size_t i)
{
        assert_return(i < c->n, -EINVAL);
        return issue(c, &c->members[i], now_usec(CLOCK_REALTIME));
}

char *etcd_test_initial_cluster(EtcdTestCluster *c, unsigned mask)
{
        char *s = strdup("");
        for (size_t i = 0; s && i < c->n; i++) {
                if (!(mask & (1u << i)))
                        continue;
                char *n = strdup_printf("%s%s%s=%s", s, *s ? "," : "", c->members[i].name,
                                        c->members[i].peer_url);
                free(s);
                s = n;
        }
        return s;
}

int etcd_test_member_start(EtcdTestCluster *c, size_t i, const char *initial_cluster, bool existing)
{
        EtcdTestMember *m = &c->members[i];
        char f[32][640];
        char *argv[64];
        size_t k = 0;

        assert_return(i < c->n && m->pid <= 0, -EINVAL);
#define ARG(...) (void) snprintf(f[k], sizeof f[k], __VA_ARGS__), argv[k] = f[k], k++
        ARG("etcd");
        ARG("--name=%s", m->name);
        ARG("--data-dir=%s/data", m->dir);
        ARG("--listen-client-urls=%s", m->client_url);
        ARG("--advertise-client-urls=%s", m->client_url);
        ARG("--listen-peer-urls=%s", m->peer_url);
        ARG("--initial-advertise-peer-urls=%s", m->peer_url);
        ARG("--initial-cluster=%s", initial_cluster);
        ARG("--initial-cluster-state=%s", existing ? "existing" : "new");
        ARG("--initial-cluster-token=%s", c->token);
        ARG("--client-cert-auth");
        ARG("--trusted-ca-file=%s", c->ca_file);
        ARG("--cert-file=%s/serving.crt", m->dir);
        ARG("--key-file=%s/serving.key", m->dir);
        ARG("--peer-client-cert-auth");
        ARG("--peer-trusted-ca-file=%s", c->ca_file);
        ARG("--peer-cert-file=%s/peer.crt", m->dir);
        ARG("--peer-key-file=%s/peer.key", m->dir);
        /* A loaded 2-core machine: slower heartbeats so leaders do not flap. */
        ARG("--heartbeat-interval=200");
        ARG("--election-timeout=2000");
        ARG("--logger=zap");
        ARG("--log-outputs=stderr");
#undef ARG
        _cleanup_free_ char *extra = strdup(c->extra_flags);
        for (char *save = NULL, *t = extra ? strtok_r(extra, " ", &save) : NULL; t && k < 60;
             t = strtok_r(NULL, " ", &save))
                argv[k++] = t;
        argv[k] = NULL;

        char log[600];
        (void) snprintf(log, sizeof log, "%s/etcd.log", m->dir);
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                /* Never outlive the test. */
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        (void) dup2(fd, STDOUT_FILENO);
                        (void) dup2(fd, STDERR_FILENO);
                }
                execvp(c->etcd_binary ? c->etcd_binary : "etcd", argv);
                fprintf(stderr,
                        "cannot run etcd: %s (install it: hack/install-deps.sh, package etcd-server)\n",
                        strerror(errno));
                _exit(127);
        }
        m->pid = pid;
        return 0;
}

int etcd_test_member_kill(EtcdTestCluster *c, size_t i, int sig)
{
        EtcdTestMember *m = &c->members[i];
        int status = 0;
        if (m->pid <= 0)
                return -ESRCH;
        if (kill(m->pid, sig) < 0)
                return -errno;
        (void) waitpid(m->pid, &status, 0);
        m->pid = 0;
        return 0;
}

int etcd_test_member_wait_exit(EtcdTestCluster *c, size_t i, usec_t timeout)
{
        EtcdTestMember *m = &c->members[i];
        usec_t end = now_usec(CLOCK_MONOTONIC) + timeout;
        int status = 0;

        while (m->pid > 0) {
                pid_t p = waitpid(m->pid, &status, WNOHANG);
                if (p == m->pid) {
                        m->pid = 0;
                        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                }
                if (now_usec(CLOCK_MONOTONIC) > end)
                        return -ETIMEDOUT;
                (void) usleep(50000);
        }
        return -ESRCH;
}

bool etcd_test_keep_dirs(void)
{
        const char *k = getenv("KEEP_TEST_DIRS");

        return k && *k && strcmp(k, "0") != 0;
}

void etcd_test_cluster_destroy(EtcdTestCluster *c)
{
        for (size_t i = 0; i < c->n; i++)
                if (c->members[i].pid > 0)
                        (void) etcd_test_member_kill(c, i, SIGKILL);
        if (c->dir[0] && !etcd_test_keep_dirs()) {
                _cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", c->dir);
                if (cmd && system(cmd) != 0)
                        fprintf(stderr, "could not remove %s\n", c->dir);
        }
        c->dir[0] = 0;
        c->ca = pki_pair_free(c->ca);
        c->ca_pem = mfree(c->ca_pem);
        c->client_cert_pem = mfree(c->client_cert_pem);
        if (c->client_key_pem)
                explicit_bzero(c->client_key_pem, strlen(c->client_key_pem));
        c->client_key_pem = mfree(c->client_key_pem);
        for (size_t i = 0; i < MAX_CLUSTERS; i++)
                if (live[i] == c)
                        live[i] = NULL;
}

EtcdClient *etcd_test_client(EtcdTestCluster *c, Loop *loop, unsigned mask)
{
        char *urls[ETCD_TEST_MAX_MEMBERS];
        size_t n = 0;
        EtcdClient *e = etcd_client_new(loop, &c->tls);
        if (!e)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                if (mask & (1u << i))
                        urls[n++] = c->members[i].client_url;
        if (etcd_client_set_endpoints(e, urls, n) < 0)
                return etcd_client_free(e);
        return e;
}

void etcd_test_result_cb(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        EtcdTestResult *r = userdata;
        (void) c;
        r->done = true;
        r->error = resp->error;
        (void) snprintf(r->message, sizeof r->message, "%s", strempty(resp->message));
        r->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
}

void etcd_test_result_done(EtcdTestResult *r)
{
        cJSON_Delete(r->body);
        *r = (EtcdTestResult){};
}

int etcd_test_wait(Loop *loop, EtcdTestResult *r, usec_t timeout)
{
        return loop_run_until(loop, &r->done, timeout);
}

/* ETCD_TEST_VERSION (e.g. "3.6."; test/integration/with-etcd.sh sets it): the members must say
 * they run that release, so that a variant meant for another etcd cannot pass on this one. */
static int check_version(EtcdTestCluster *c, Loop *loop, EtcdClient *e)
{
        const char *want = getenv("ETCD_TEST_VERSION");
        if (!want || !*want)
                return 0;
        EtcdTestResult res = {};
        if (etcd_status(e, c->members[0].client_url, etcd_test_result_cb, &res) >= 0)
                (void) etcd_test_wait(loop, &res, 5 * USEC_PER_SEC);
        const char *v = res.done && res.error == 0 ? json_get_string(res.body, "version") : NULL;
        int r = v && startswith(v, want) ? 0 : -EPROTO;
        if (r < 0)
                fprintf(stderr, "etcd member %s runs etcd %s, not the %s* ETCD_TEST_VERSION asks for\n",
                        c->members[0].name, v ? v : "(no status)", want);
        etcd_test_result_done(&res);
        return r;
}

int etcd_test_cluster_bootstrap(EtcdTestCluster *c, size_t k)
{
        _cleanup_free_ char *ic = etcd_test_initial_cluster(c, (1u << k) - 1);
        int r;

        if (!ic)
                return -ENOMEM;
        for (size_t i = 0; i < k; i++)
                if ((r = etcd_test_member_start(c, i, ic, false)) < 0)
                        return r;
        /* Wait until every started member says healthy. */
        _cleanup_(loop_unrefp) Loop *loop = loop_new();
        _cleanup_(etcd_client_freep) EtcdClient *e = etcd_test_client(c, loop, (1u << k) - 1);
        if (!e)
                return -ENOMEM;
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        for (size_t i = 0; i < k;) {
                EtcdTestResult res = {};
                if (etcd_health(e, c->members[i].client_url, etcd_test_result_cb, &res) >= 0)
                        (void) etcd_test_wait(loop, &res, 5 * USEC_PER_SEC);
                bool ok = res.done && res.error == 0;
                etcd_test_result_done(&res);
                if (ok) {
                        i++;
                        continue;
                }
                if (now_usec(CLOCK_MONOTONIC) > end) {
                        fprintf(stderr, "etcd member %s did not become healthy; see %s/etcd.log\n",
                                c->members[i].name, c->members[i].dir);
                        return -ETIMEDOUT;
                }
                (void) usleep(100000);
        }
        return check_version(c, loop, e);
}

typedef struct Loader {
        Loop *loop;
        EtcdClient *c;
        unsigned next, total, in_flight;
        int first_error;
        char *value;
        size_t value_size;
        bool done;
} Loader;

static void load_next(Loader *l);

static void on_put(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Loader *l = userdata;
        (void) c;
        l->in_flight--;
        if (resp->error < 0 && l->first_error == 0)
                l->first_error = resp->error;
        load_next(l);
}

static void load_next(Loader *l)
{
        while (l->in_flight < 16 && l->next < l->total && l->first_error == 0) {
                char key[32];
                int n = snprintf(key, sizeof key, "/load/%06u", l->next++);
                int r = etcd_kv_put(l->c, key, (size_t) n, l->value, l->value_size, on_put, l);
                if (r < 0) {
                        l->first_error = r;
                        break;
                }
                l->in_flight++;
        }
        if (l->in_flight == 0 && (l->next == l->total || l->first_error))
                l->done = true;
}

int etcd_test_load(Loop *loop, EtcdClient *e, unsigned n, size_t value_size)
{
        Loader l = {.loop = loop, .c = e, .total = n, .value_size = value_size};
        int r;

        l.value = malloc(value_size);
        if (!l.value)
                return -ENOMEM;
        /* Incompressible-ish values so the database has its real size. */
        for (size_t i = 0; i < value_size; i++)
                l.value[i] = (char) ('a' + (i * 7919 + i / 13) % 26);
        load_next(&l);
        r = loop_run_until(loop, &l.done, 600 * USEC_PER_SEC);
        free(l.value);
        return r < 0 ? r : l.first_error;
}

typedef struct HttpGet {
        bool done;
        int error;
        long status;
        char body[1024];
} HttpGet;

static void on_http_get(HttpRequest *req, int error, void *userdata)
{
        HttpGet *g = userdata;
        size_t n = 0;
        const char *b = http_request_get_body(req, &n);
        g->done = true;
        g->error = error;
        g->status = http_request_get_status(req);
        (void) snprintf(g->body, sizeof g->body, "%.*s", (int) MIN(n, sizeof g->body - 1), b ? b : "");
}

long etcd_test_http_get(Loop *loop, const char *url, char *body, size_t n)
{
        _cleanup_(http_request_unrefp) HttpRequest *req = http_request_new("GET", url);
        HttpGet g = {};
        if (!req)
                return -ENOMEM;
        http_request_set_timeout(req, 5 * USEC_PER_SEC);
        int r = loop_http_start(loop, req, on_http_get, &g);
        if (r < 0)
                return r;
        r = loop_run_until(loop, &g.done, 10 * USEC_PER_SEC);
        if (r < 0)
                return r;
        if (body && n)
                (void) snprintf(body, n, "%s", g.body);
        return g.error < 0 ? g.error : g.status;
}
