/* `cluster-etcd-operator operator`: the long-running operator. It loads the
 * Kubernetes configuration, serves /healthz, /readyz and /metrics, takes the
 * leader lease, and then starts the controllers on one shared informer
 * cache. SIGTERM drains the controllers, releases the lease and exits 0;
 * losing the lease exits 1 so the Deployment restarts us as a follower. */
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/contract.h"
#include "base/log.h"
#include "config-file.h"
#include "controllers/common.h"
#include "controllers/controllers.h"
#include "dns/hostnames.h"
#include "etcd-wiring.h"
#include "kube/informer.h"
#include "process.h"
#include "runtime/controller.h"
#include "runtime/etcd-metrics.h"
#include "runtime/httpserver.h"
#include "runtime/leader.h"
#include "serving.h"

/* Every controller the operator runs, in start order. The controllers of the
 * later milestones (static resources, certificates, members, ...) are added
 * here as they land; see README.md for what exists today. */
/* clang-format off */
static const ControllerSpec *const controllers[] = {
        &controller_static_resources,
        &controller_cert_signer,
        &controller_resource_sync,
        &controller_target_config,
        &controller_revision,
        &controller_installer,
        &controller_node_status,
        &controller_prune,
        &controller_cert_cleaner,
        &controller_defrag,
        &controller_guard,
        &controller_backup,
        &controller_periodic_backup,
        &controller_backup_removal,
        &controller_etcd_members,
        &controller_cluster_member,
        &controller_member_removal,
        &controller_machine_hooks,
        &controller_host_endpoints,
        &controller_etcd_endpoints,
        &controller_bootstrap_teardown,
        &controller_config_overrides,
        &controller_topology,
        &controller_member_view,
        &controller_etcd_downgrade,
        &controller_status,
};
/* clang-format on */

/* $name, or NULL when unset or empty. */
static const char *nonempty_env(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

static size_t operator_controllers_count(void)
{
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                n += controllers[i] != NULL;
        return n;
}

static int operator_controllers_register(Runtime *rt)
{
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                if (!controllers[i])
                        continue;
                int r = runtime_add(rt, controllers[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

typedef struct Operator {
        Loop *loop;
        KubeClient *client;
        InformerFactory *informers;
        EventRecorder *recorder;
        Runtime *runtime;
        LeaderElector *elector;
        Serving *http;
        MetricsRegistry *metrics;
        Metric *m_leader, *m_requests, *m_retries, *m_signer_days, *m_last_backup;
        Metric *m_syncs, *m_sync_failures, *m_sync_cost;
        Metric *m_cached_objects, *m_cached_bytes;
        EtcdMetrics *etcd_metrics;
        EtcdClient *etcd;
        EtcdView *view;
        EtcdWiring *wiring;
        OperatorState state;
        uint64_t view_digest; /* of the last etcd snapshot that woke the controllers */
        bool view_seen;
        int exit_code;
        bool stopping;
} Operator;

typedef struct Flags {
        const char *kubeconfig;
        const char *context;
        const char *namespace;
        const char *listen;
        const char *tls_cert, *tls_key;
        const char *identity;
        const char *etcd_image, *operator_image;
        const char *etcd_version; /* what etcd_image carries (--etcd-image-version or env) */
        EtcdMinor etcd_minor;
        const char *etcd_ca, *etcd_cert, *etcd_key;
        usec_t etcd_poll;
        bool listen_on_node_ip;
        bool ecdsa;
        bool leader_elect;
        usec_t lease_duration, renew_deadline, retry_period;
} Flags;

static void operator_done(Operator *o)
{
        o->http = serving_free(o->http);
        o->runtime = runtime_free(o->runtime);
        o->state.keys = key_pool_free(o->state.keys);
        o->state.check_memo = pki_check_memo_free(o->state.check_memo);
        o->state.maint = etcd_maint_log_free(o->state.maint);
        /* The etcd client first: it completes the view's requests while the view exists. */
        o->etcd = etcd_client_free(o->etcd);
        o->view = etcd_view_free(o->view);
        o->wiring = etcd_wiring_free(o->wiring);
        o->elector = leader_elector_free(o->elector);
        o->recorder = event_recorder_free(o->recorder);
        o->informers = informer_factory_free(o->informers);
        o->client = kube_client_free(o->client);
        o->metrics = metrics_registry_free(o->metrics);
        o->etcd_metrics = etcd_metrics_free(o->etcd_metrics);
        o->loop = loop_unref(o->loop);
}

/* glibc keeps freed heap pages after a burst (a rollout, a relist) until
 * told otherwise; give them back every half minute. Costs a walk over the
 * free lists, well under a millisecond at our sizes. */
#define TRIM_PERIOD (30 * USEC_PER_SEC)
/* How long the cert signer trusts a verdict on unchanged inputs (expiry windows are days). */
#define CHECK_MEMO_TTL (10 * 60 * USEC_PER_SEC)

static int on_trim(sd_event_source *s, uint64_t usec, void *userdata)
{
        (void) userdata;
        (void) malloc_trim(0);
        int r = sd_event_source_set_time(s, usec + TRIM_PERIOD);
        return r < 0 ? r : sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* A key arrived after the cert signer found the pool empty. */
static void on_key_ready(KeyPool *p, void *userdata)
{
        Operator *o = userdata;
        (void) p;
        if (o->runtime)
                (void) runtime_enqueue(o->runtime, controller_cert_signer.name);
}

static void on_lease_released(LeaderElector *le, void *userdata)
{
        Operator *o = userdata;
        (void) le;
        (void) loop_exit(o->loop, o->exit_code);
}

static void on_drained(Runtime *rt, void *userdata)
{
        Operator *o = userdata;
        (void) rt;
        if (!o->elector || leader_elector_release(o->elector, on_lease_released) < 0)
                (void) loop_exit(o->loop, o->exit_code);
}

static void stop(Operator *o, int code)
{
        if (o->stopping)
                return;
        o->stopping = true;
        o->exit_code = code;
        runtime_shutdown(o->runtime, on_drained, o);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        (void) s;
        log_info("received signal %u, shutting down", si->ssi_signo);
        stop(userdata, EXIT_OK);
        return 0;
}

static void on_started_leading(LeaderElector *le, void *userdata)
{
        Operator *o = userdata;
        int r;

        (void) le;
        log_info("became leader; starting %zu controllers (etcd image %s, etcd %s)",
                 operator_controllers_count(), o->state.etcd_image, etcd_minor_name(o->state.etcd_minor));
        r = etcd_view_start(o->view);
        if (r >= 0)
                r = runtime_start(o->runtime);
        if (r < 0) {
                log_error_errno(r, "cannot start the controllers");
                stop(o, EXIT_RUNTIME);
        }
}

static void on_stopped_leading(LeaderElector *le, void *userdata)
{
        Operator *o = userdata;
        (void) le;
        log_error("lost the leader lease; exiting so that a new leader can take over");
        o->exit_code = EXIT_RUNTIME;
        (void) loop_exit(o->loop, EXIT_RUNTIME);
}

static void on_view(EtcdView *v, const EtcdViewSnapshot *snap, void *userdata)
{
        Operator *o = userdata;
        uint64_t d = etcd_view_digest(snap);
        (void) v;
        if (o->view_seen && d == o->view_digest)
                return; /* the same picture: nothing any controller decides from has changed */
        o->view_seen = true;
        o->view_digest = d;
        /* The controllers that read etcd see the new picture at once. */
        runtime_kick_etcd_readers(o->runtime);
}

static void on_etcd_change(void *userdata)
{
        const OperatorState *s = userdata;
        etcd_view_refresh(s->view);
}

static const EtcdViewSnapshot *etcd_snapshot(void *userdata)
{
        const OperatorState *s = userdata;
        return s->view ? etcd_view_get(s->view) : NULL;
}

static bool etcd_view_fresh(void *userdata, usec_t since)
{
        const OperatorState *s = userdata;
        const EtcdViewSnapshot *snap = etcd_view_get(s->view);
        return snap && snap->error >= 0 && snap->started_at > since;
}

static bool is_ready(void *userdata, const char **ret_reason)
{
        Operator *o = userdata;
        if (o->elector && !leader_elector_is_leader(o->elector)) {
                *ret_reason = "not the leader (standby)\n";
                return true; /* a standby is healthy and ready; it just does nothing */
        }
        if (!informer_factory_has_synced(o->informers)) {
                *ret_reason = "informer caches not synced yet\n";
                return false;
        }
        return true;
}

/* /healthz: the loop answers (or the probe times out), and no controller stopped. */
static bool is_alive(void *userdata, const char **ret_reason)
{
        static char why[256];
        Operator *o = userdata;
        if (!runtime_check_alive(o->runtime, now_usec(CLOCK_MONOTONIC), why, sizeof why - 1)) {
                (void) strncat(why, "\n", sizeof why - strlen(why) - 1);
                *ret_reason = why;
                log_warning("healthz: %s", why);
                return false;
        }
        return true;
}

static void collect_informer(const char *key, Informer *inf, void *userdata)
{
        Operator *o = userdata;
        InformerStats st;

        informer_get_stats(inf, &st);
        (void) metrics_set(o->m_cached_objects, (double) st.objects, key, NULL);
        (void) metrics_set(o->m_cached_bytes, (double) st.cached_bytes, key, NULL);
}

static int collect(MetricsRegistry *reg, void *userdata)
{
        Operator *o = userdata;
        uint64_t req = 0, retries = 0;

        (void) reg;
        kube_client_get_counters(o->client, &req, &retries);
        (void) metrics_set(o->m_requests, (double) req, NULL);
        (void) metrics_set(o->m_retries, (double) retries, NULL);
        (void) metrics_set(o->m_leader, leader_elector_is_leader(o->elector) ? 1 : 0, NULL);
        ControllerStats cs;
        const char *name;
        for (size_t i = 0; runtime_get_stats_at(o->runtime, i, &name, &cs) >= 0; i++) {
                (void) metrics_set(o->m_syncs, (double) cs.syncs, name, NULL);
                (void) metrics_set(o->m_sync_failures, (double) cs.failures, name, NULL);
                (void) metrics_set(o->m_sync_cost, (double) cs.sync_cost / USEC_PER_SEC, name, NULL);
        }
        informer_factory_foreach(o->informers, collect_informer, o);
        etcd_metrics_update(o->etcd_metrics, o->view ? etcd_view_get(o->view) : NULL, o->state.maint);
        usec_t last_backup;
        metrics_reset(o->m_last_backup);
        if (backup_last_completed(o->informers, &last_backup) >= 0)
                (void) metrics_set(o->m_last_backup, (double) last_backup / USEC_PER_SEC, NULL);
        metrics_reset(o->m_signer_days);
        for (size_t i = 0; cert_signer_names[i]; i++) {
                double days = 0;
                if (cert_signer_expiration_days(o->informers, cert_signer_names[i], now_usec(CLOCK_REALTIME),
                                                &days) >= 0)
                        (void) metrics_set(o->m_signer_days, days, cert_signer_metric_labels[i], NULL);
        }
        return 0;
}

static int setup_metrics(Operator *o)
{
        int r;

        o->metrics = metrics_registry_new();
        if (!o->metrics)
                return -ENOMEM;
        if ((r = metrics_gauge(o->metrics, &o->m_leader, "openshift_etcd_operator_leader",
                               "1 while this process holds the leader lease", NULL)) < 0 ||
            (r = metrics_counter(o->metrics, &o->m_requests, "openshift_etcd_operator_kube_requests_total",
                                 "Requests sent to the Kubernetes API", NULL)) < 0 ||
            (r = metrics_counter(o->metrics, &o->m_retries, "openshift_etcd_operator_kube_retries_total",
                                 "Kubernetes API requests retried after 429/5xx or transport errors",
                                 NULL)) < 0 ||
            (r = metrics_counter(o->metrics, &o->m_syncs, "openshift_etcd_operator_controller_syncs_total",
                                 "Syncs run per controller", "controller", NULL)) < 0 ||
            (r = metrics_counter(o->metrics, &o->m_sync_failures,
                                 "openshift_etcd_operator_controller_sync_failures_total",
                                 "Syncs per controller that failed or whose plan failed", "controller",
                                 NULL)) < 0 ||
            (r = metrics_gauge(o->metrics, &o->m_sync_cost,
                               "openshift_etcd_operator_controller_sync_seconds",
                               "Moving average of the time a controller's sync function runs on the loop "
                               "(its scheduling rank)",
                               "controller", NULL)) < 0 ||
            (r = metrics_gauge(o->metrics, &o->m_cached_objects,
                               "openshift_etcd_operator_informer_cached_objects",
                               "Objects in an informer's cache", "informer", NULL)) < 0 ||
            (r = metrics_gauge(o->metrics, &o->m_cached_bytes,
                               "openshift_etcd_operator_informer_cached_bytes",
                               "Heap bytes an informer's cached objects hold (after the cache transform)",
                               "informer", NULL)) < 0 ||
            (r = metrics_gauge(
                     o->metrics, &o->m_signer_days, "openshift_etcd_operator_signer_expiration_days",
                     "Days until a signer certificate in openshift-etcd expires (negative once it has)",
                     "name", NULL)) < 0 ||
            (r = metrics_gauge(o->metrics, &o->m_last_backup,
                               "openshift_etcd_operator_last_backup_timestamp_seconds",
                               "When the newest EtcdBackup (one now, or one a Backup's schedule made) "
                               "completed, as Unix time; absent until one has",
                               NULL)) < 0)
                return r;
        r = etcd_metrics_register(o->metrics, &o->etcd_metrics);
        if (r < 0)
                return r;
        return metrics_register_collector(o->metrics, collect, o);
}

static int parse_listen(const char *listen, char *addr, size_t n, uint16_t *port)
{
        const char *colon = strrchr(listen, ':');
        char *end = NULL;

        if (!colon || (size_t) (colon - listen) >= n)
                return -EINVAL;
        unsigned long p = strtoul(colon + 1, &end, 10);
        if (*end || p > 65535 || end == colon + 1)
                return -EINVAL;
        memcpy(addr, listen, (size_t) (colon - listen));
        addr[colon - listen] = 0;
        /* "[::1]:8443" */
        if (addr[0] == '[') {
                size_t l = strlen(addr);
                if (l < 2 || addr[l - 1] != ']')
                        return -EINVAL;
                memmove(addr, addr + 1, l - 2);
                addr[l - 2] = 0;
        }
        *port = (uint16_t) p;
        return 0;
}

static int run(const Flags *f)
{
        _cleanup_(operator_done) Operator o = {};
        _cleanup_free_ char *err = NULL;
        KubeConfig *cfg = NULL;
        char addr[128];
        uint16_t port = 0;
        int r;

        if (parse_listen(f->listen, addr, sizeof addr, &port) < 0) {
                log_error("--listen: \"%s\" is not ADDRESS:PORT (e.g. 0.0.0.0:8443 or [::1]:8443)",
                          f->listen);
                return EXIT_USAGE;
        }
        r = kube_config_load(f->kubeconfig, f->context, &cfg, &err);
        if (r < 0) {
                log_error("%s", err ? err : strerror(-r));
                return EXIT_USAGE;
        }
        o.loop = loop_new();
        /* Every host name the operator reaches (its kubeconfig's API server, etcd
         * endpoints by name) resolves through c-ares on the loop. */
        r = o.loop ? dns_hostnames_attach(o.loop, NULL, NULL) : -ENOMEM;
        if (r < 0 && r != -ENOMEM) {
                kube_config_free(cfg);
                return log_error_errno(r, "cannot start the resolver of host names (/etc/resolv.conf)"),
                       EXIT_RUNTIME;
        }
        o.client = r >= 0 ? kube_client_new(o.loop, cfg) : NULL;
        if (!o.client) {
                kube_config_free(cfg);
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        }
        const char *ns = f->namespace ? f->namespace : NS_OPERATOR;
        o.informers = informer_factory_new(o.client);
        informer_factory_set_transform(o.informers, operator_cache_transform);
        EventSource src = {.component = EVENT_COMPONENT,
                           .api_version = "apps/v1",
                           .kind = "Deployment",
                           .namespace = ns,
                           .name = "etcd-operator"};
        o.recorder = event_recorder_new(o.client, &src);
        HttpTls none = {};
        o.etcd = etcd_client_new(o.loop, &none);
        o.view = o.etcd ? etcd_view_new(o.etcd, f->etcd_poll) : NULL;
        if (!o.informers || !o.view)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        etcd_view_set_listener(o.view, on_view, &o);
        o.state = (OperatorState){.view = o.view,
                                  .etcd_image = f->etcd_image,
                                  .operator_image = f->operator_image,
                                  .etcd_minor = f->etcd_minor,
                                  .operator_version = nonempty_env("OPERATOR_IMAGE_VERSION"),
                                  .operand_version = nonempty_env("OPERAND_IMAGE_VERSION"),
                                  .listen_on_node_ip = f->listen_on_node_ip,
                                  .cert_key_type = f->ecdsa ? PKI_KEY_ECDSA_P256 : PKI_KEY_RSA_2048};
        /* One node's leaf certificates (peer, serving, metrics) without waiting. */
        r = key_pool_new(loop_get_event(o.loop), o.state.cert_key_type, 3, &o.state.keys);
        if (r < 0)
                return log_error_errno(r, "cannot start the key generator"), EXIT_RUNTIME;
        key_pool_set_ready_callback(o.state.keys, on_key_ready, &o);
        o.state.check_memo = pki_check_memo_new(CHECK_MEMO_TTL);
        o.state.maint = etcd_maint_log_new();
        if (!o.state.check_memo || !o.state.maint)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        EtcdWiringFiles files = {.ca = f->etcd_ca, .cert = f->etcd_cert, .key = f->etcd_key};
        r = etcd_wiring_new(o.etcd, o.informers, &files, &o.wiring);
        if (r < 0)
                return log_error_errno(r, "cannot read the etcd client credentials"), EXIT_RUNTIME;
        RuntimeConfig rc = {.status_res = &KUBE_ETCDS,
                            .status_name = "cluster",
                            .state = &o.state,
                            .etcd_snapshot = etcd_snapshot,
                            .userdata = &o.state,
                            .etcd = o.etcd,
                            .on_etcd_change = on_etcd_change,
                            .maint_log = o.state.maint,
                            .etcd_view_fresh = etcd_view_fresh};
        o.runtime = runtime_new(o.client, o.informers, o.recorder, &rc);
        if (!o.recorder || !o.runtime || setup_metrics(&o) < 0)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        r = operator_controllers_register(o.runtime);
        if (r < 0)
                return log_error_errno(r, "cannot register controllers"), EXIT_RUNTIME;

        sd_event *e = loop_get_event(o.loop);
        sigset_t mask;
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        if (sd_event_add_signal(e, NULL, SIGTERM, on_signal, &o) < 0 ||
            sd_event_add_signal(e, NULL, SIGINT, on_signal, &o) < 0 ||
            sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, TRIM_PERIOD, USEC_PER_SEC, on_trim, NULL) <
                    0)
                return log_error("cannot watch signals or arm the memory trim timer"), EXIT_RUNTIME;

        /* The limits as readyz has them (httpserver.c): its own liveness probe comes here too. */
        ServingConfig sc = {.address = addr,
                            .port = port,
                            .cert_file = f->tls_cert,
                            .key_file = f->tls_key,
                            .metrics = o.metrics,
                            .ready = is_ready,
                            .live = is_alive,
                            .userdata = &o};
        r = serving_new(e, o.client, &sc, &o.http);
        if (r < 0 && f->tls_cert && (r == -ENOENT || r == -EACCES || r == -EPROTO))
                return log_error_errno(
                               r,
                               "--tls-cert-file %s / --tls-private-key-file %s: cannot serve them (a PEM "
                               "certificate and its key, as service-ca writes them)",
                               f->tls_cert, f->tls_key),
                       EXIT_USAGE;
        if (r < 0)
                return log_error_errno(r, "cannot serve health and metrics on %s", f->listen), EXIT_RUNTIME;
        if (serving_is_self_signed(o.http))
                log_warning("serving /healthz, /readyz and /metrics over HTTPS on %s:%u with a self-signed "
                            "certificate: no serving certificate at %s (service-ca writes it; or give "
                            "--tls-cert-file and --tls-private-key-file)",
                            addr, serving_get_port(o.http), SERVING_CERT_DEFAULT);
        else
                log_info("serving /healthz, /readyz and /metrics over HTTPS on %s:%u (certificate %s)", addr,
                         serving_get_port(o.http), f->tls_cert);
        log_info("/metrics answers client certificates from kube-apiserver's client CA and bearer tokens, "
                 "for users that kube-apiserver allows to get it (Prometheus's always); the probes "
                 "answer anyone");

        if (f->leader_elect) {
                LeaderConfig lc = {.namespace = ns,
                                   .name = "openshift-cluster-etcd-operator-lock",
                                   .identity = f->identity,
                                   .lease_duration = f->lease_duration,
                                   .renew_deadline = f->renew_deadline,
                                   .retry_period = f->retry_period};
                r = leader_elector_new(o.client, &lc, on_started_leading, on_stopped_leading, &o,
                                       &o.elector);
                if (r == -EINVAL) {
                        log_error("leader election timings must satisfy lease-duration > renew-deadline > "
                                  "1.2 x retry-period");
                        return EXIT_USAGE;
                }
                if (r < 0 || (r = leader_elector_start(o.elector)) < 0)
                        return log_error_errno(r, "cannot start leader election"), EXIT_RUNTIME;
        } else
                on_started_leading(NULL, &o);

        (void) sd_notify(false, "READY=1");
        r = loop_run(o.loop);
        (void) sd_notify(false, "STOPPING=1");
        if (r < 0)
                return log_error_errno(r, "event loop failed"), EXIT_RUNTIME;
        return r;
}

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator operator [FLAGS]\n"
                "\n"
                "Runs the operator: leader election, then every controller on one shared cache.\n"
                "\n"
                "  --kubeconfig PATH           kubeconfig (default: $KUBECONFIG, in-cluster, "
                "~/.kube/config)\n"
                "  --context NAME              kubeconfig context (default: current-context)\n"
                "  --namespace NS              operator namespace for the lease and events\n"
                "                              (default: openshift-etcd-operator)\n"
                "  --config FILE               a GenericOperatorConfig (servingInfo, leaderElection);\n"
                "                              flags win over it\n"
                "  --listen ADDR:PORT          /healthz, /readyz, /metrics (default: 0.0.0.0:8443)\n"
                "  --tls-cert-file FILE, --tls-private-key-file FILE   the HTTPS certificate (default:\n"
                "                              service-ca's " SERVING_CERT_DEFAULT " and tls.key\n"
                "                              when both exist, else a self-signed one); /metrics\n"
                "                              answers only client certificates from kube-apiserver's\n"
                "                              client CA and bearer tokens, of users allowed to get it\n"
                "  --leader-elect=BOOL         take the leader lease first (default: true)\n"
                "  --leader-elect-lease-duration D   (default: 137s)\n"
                "  --leader-elect-renew-deadline D   (default: 107s)\n"
                "  --leader-elect-retry-period D     (default: 26s)\n"
                "  --identity NAME             leader identity (default: <hostname>_<uuid>)\n"
                "  --etcd-image IMAGE          etcd image for the static pods (default: $IMAGE)\n"
                "  --etcd-image-version V      the etcd release the etcd image carries: 3.5 or 3.6,\n"
                "                              or a patch release (default: $ETCD_IMAGE_VERSION, else\n"
                "                              3.5)\n"
                "  --operator-image IMAGE      this operator's image, for the installer pods\n"
                "                              (default: $OPERATOR_IMAGE)\n"
                "  --etcd-ca/--etcd-cert/--etcd-key FILE   etcd client credentials (default: the\n"
                "                              Deployment's mounts, read again every 10 s; else the\n"
                "                              etcd-client Secret)\n"
                "  --etcd-poll-interval D      how often the etcd view refreshes (default: 5s)\n"
                "  --listen-on-node-ip         render static pods that listen on the node IP (harness)\n"
                "  -v=N                        log verbosity (4 and up: debug)\n"
                "  -h, --help                  this text\n"
                "\n"
                "Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure or lost lease, 2 usage "
                "error.\n");
}

static int parse_bool(const char *s, bool *ret)
{
        if (streq(s, "true") || streq(s, "1")) {
                *ret = true;
                return 0;
        }
        if (streq(s, "false") || streq(s, "0")) {
                *ret = false;
                return 0;
        }
        return -EINVAL;
}

static int operator_main(int argc, char *argv[])
{
        enum {
                ARG_KUBECONFIG = 0x100,
                ARG_CONTEXT,
                ARG_NAMESPACE,
                ARG_LISTEN,
                ARG_LE,
                ARG_LD,
                ARG_RD,
                ARG_RP,
                ARG_ID,
                ARG_ETCD_IMAGE,
                ARG_OP_IMAGE,
                ARG_CA,
                ARG_CERT,
                ARG_KEY,
                ARG_POLL,
                ARG_NODE_IP,
                ARG_KEY_TYPE,
                ARG_TLS_CERT,
                ARG_TLS_KEY,
                ARG_CONFIG,
                ARG_ETCD_VERSION,
        };
        static const struct option options[] = {
                {"kubeconfig", required_argument, NULL, ARG_KUBECONFIG},
                {"context", required_argument, NULL, ARG_CONTEXT},
                {"namespace", required_argument, NULL, ARG_NAMESPACE},
                {"listen", required_argument, NULL, ARG_LISTEN},
                {"leader-elect", optional_argument, NULL, ARG_LE},
                {"leader-elect-lease-duration", required_argument, NULL, ARG_LD},
                {"leader-elect-renew-deadline", required_argument, NULL, ARG_RD},
                {"leader-elect-retry-period", required_argument, NULL, ARG_RP},
                {"identity", required_argument, NULL, ARG_ID},
                {"etcd-image", required_argument, NULL, ARG_ETCD_IMAGE},
                {"etcd-image-version", required_argument, NULL, ARG_ETCD_VERSION},
                {"operator-image", required_argument, NULL, ARG_OP_IMAGE},
                {"etcd-ca", required_argument, NULL, ARG_CA},
                {"etcd-cert", required_argument, NULL, ARG_CERT},
                {"etcd-key", required_argument, NULL, ARG_KEY},
                {"etcd-poll-interval", required_argument, NULL, ARG_POLL},
                {"listen-on-node-ip", no_argument, NULL, ARG_NODE_IP},
                {"cert-key-type", required_argument, NULL, ARG_KEY_TYPE},
                {"tls-cert-file", required_argument, NULL, ARG_TLS_CERT},
                {"tls-private-key-file", required_argument, NULL, ARG_TLS_KEY},
                {"config", required_argument, NULL, ARG_CONFIG},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_(operator_file_config_done) OperatorFileConfig fc = {};
        const char *config = NULL;
        bool le_given = false;
        Flags f = {.leader_elect = true,
                   .etcd_ca = "/var/run/configmaps/etcd-ca/ca-bundle.crt",
                   .etcd_cert = "/var/run/secrets/etcd-client/tls.crt",
                   .etcd_key = "/var/run/secrets/etcd-client/tls.key",
                   .etcd_poll = 5 * USEC_PER_SEC};
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                usec_t *dst = NULL;
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case ARG_KUBECONFIG:
                        f.kubeconfig = optarg;
                        break;
                case ARG_CONTEXT:
                        f.context = optarg;
                        break;
                case ARG_NAMESPACE:
                        f.namespace = optarg;
                        break;
                case ARG_LISTEN:
                        f.listen = optarg;
                        break;
                case ARG_TLS_CERT:
                        f.tls_cert = optarg;
                        break;
                case ARG_TLS_KEY:
                        f.tls_key = optarg;
                        break;
                case ARG_CONFIG:
                        config = optarg;
                        break;
                case ARG_ID:
                        f.identity = optarg;
                        break;
                case ARG_ETCD_IMAGE:
                        f.etcd_image = optarg;
                        break;
                case ARG_ETCD_VERSION:
                        f.etcd_version = optarg;
                        break;
                case ARG_OP_IMAGE:
                        f.operator_image = optarg;
                        break;
                case ARG_CA:
                        f.etcd_ca = optarg;
                        break;
                case ARG_CERT:
                        f.etcd_cert = optarg;
                        break;
                case ARG_KEY:
                        f.etcd_key = optarg;
                        break;
                case ARG_POLL:
                        dst = &f.etcd_poll;
                        break;
                case ARG_NODE_IP:
                        f.listen_on_node_ip = true;
                        break;
                case ARG_KEY_TYPE:
                        if (!streq_ptr(optarg, "rsa") && !streq_ptr(optarg, "ecdsa")) {
                                log_error("--cert-key-type: \"%s\" is not rsa or ecdsa", optarg);
                                return EXIT_USAGE;
                        }
                        f.ecdsa = streq(optarg, "ecdsa");
                        break;
                case ARG_LE:
                        le_given = true;
                        if (optarg && parse_bool(optarg, &f.leader_elect) < 0) {
                                log_error("--leader-elect: \"%s\" is not true or false", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case ARG_LD:
                        dst = &f.lease_duration;
                        break;
                case ARG_RD:
                        dst = &f.renew_deadline;
                        break;
                case ARG_RP:
                        dst = &f.retry_period;
                        break;
                default:
                        help(stderr);
                        return EXIT_USAGE;
                }
                if (dst && (parse_duration(optarg, dst) < 0 || *dst == 0)) {
                        log_error("%s: \"%s\" is not a duration such as 137s, 2m or 500ms", argv[optind - 1],
                                  optarg);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                log_error("operator: unexpected argument \"%s\"; see --help", argv[optind]);
                return EXIT_USAGE;
        }
        if (config) {
                _cleanup_free_ char *err = NULL;
                if (operator_file_config_load(config, &fc, &err) < 0) {
                        log_error("--config %s", err ?: "cannot be read");
                        return EXIT_USAGE;
                }
                /* A flag on the command line wins over the file. */
                if (!f.listen)
                        f.listen = fc.bind_address;
                if (!f.tls_cert && !f.tls_key) {
                        f.tls_cert = fc.cert_file;
                        f.tls_key = fc.key_file;
                }
                if (!le_given && fc.has_leader_elect)
                        f.leader_elect = fc.leader_elect;
                if (!f.lease_duration)
                        f.lease_duration = fc.lease_duration;
                if (!f.renew_deadline)
                        f.renew_deadline = fc.renew_deadline;
                if (!f.retry_period)
                        f.retry_period = fc.retry_period;
        }
        if (!f.listen)
                f.listen = "0.0.0.0:8443";
        /* The images, as upstream's Deployment hands them over: env IMAGE and OPERATOR_IMAGE,
         * which the release build sets to the release's digests. */
        if (!f.etcd_image)
                f.etcd_image = nonempty_env("IMAGE");
        if (!f.operator_image)
                f.operator_image = nonempty_env("OPERATOR_IMAGE");
        if (!f.etcd_image || !f.operator_image) {
                log_error("no %s image: give %s or set env %s (the Deployment sets it from the release "
                          "payload's image-references)",
                          f.etcd_image ? "operator" : "etcd",
                          f.etcd_image ? "--operator-image" : "--etcd-image",
                          f.etcd_image ? "OPERATOR_IMAGE" : "IMAGE");
                return EXIT_USAGE;
        }
        /* The etcd release the image carries, which the release payload declares beside it. */
        const char *version_from = "--etcd-image-version";
        if (!f.etcd_version) {
                f.etcd_version = nonempty_env("ETCD_IMAGE_VERSION");
                version_from = "env ETCD_IMAGE_VERSION";
        }
        f.etcd_minor = ETCD_MINOR_DEFAULT;
        if (f.etcd_version) {
                char why[200];
                if (etcd_minor_parse_why(f.etcd_version, &f.etcd_minor, why, sizeof why) < 0)
                        return log_error("%s: %s", version_from, why), EXIT_USAGE;
        }
        if (!f.tls_cert != !f.tls_key) {
                log_error("%s given without %s: give both, or neither for service-ca's files at %s",
                          f.tls_cert ? "--tls-cert-file" : "--tls-private-key-file",
                          f.tls_cert ? "--tls-private-key-file" : "--tls-cert-file", SERVING_CERT_DEFAULT);
                return EXIT_USAGE;
        }
        if (!f.tls_cert && access(SERVING_CERT_DEFAULT, R_OK) == 0 &&
            access(SERVING_KEY_DEFAULT, R_OK) == 0) {
                f.tls_cert = SERVING_CERT_DEFAULT;
                f.tls_key = SERVING_KEY_DEFAULT;
        }
        return run(&f);
}

const Command cmd_operator = {
        .name = "operator",
        .summary = "run the operator (leader election, controllers, health and metrics)",
        .run = operator_main,
};
