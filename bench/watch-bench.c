/* watch-bench: decode-and-cache throughput of one pod informer against a
 * watch stream (bench/watch-replay.py). It runs the real stack (loop, client,
 * informer with its cache and namespace index) until N events have reached
 * the handler, then prints one machine-readable line:
 *
 *   watch-bench events=N seconds=S events_per_s=E peak_rss_kb=K cpu_seconds=C cached=M lists=L watches=W
 *               transform=operator|none kept_json_bytes=B scratch=on|off
 *
 * `seconds` runs from informer_start() (list included) to the N-th event;
 * peak RSS is getrusage()'s ru_maxrss for the whole process. The informer
 * trims objects as the operator's does (operator_cache_transform: no
 * managedFields, a pod without the container fields no controller reads)
 * unless WATCH_BENCH_KEEP_ALL=1; kept_json_bytes is the mean size of a cached
 * object printed as compact JSON, i.e. what the cache keeps of each pod.
 * Events parse into the scratch arena as in the operator (base/json.h)
 * unless WATCH_BENCH_NO_SCRATCH=1 (scratch=on|off). The server is a plain
 * http:// URL (the replay server) or a kubeconfig file (kube-apiserver with its
 * credentials: bench/watch-bench-kube.py). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "base/json.h"
#include "base/log.h"
#include "controllers/common.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "loop/loop.h"

typedef struct Counter {
        uint64_t target;
        uint64_t events;
        usec_t done_at;
        bool done;
} Counter;

static void on_event(Informer *inf, InformerEvent ev, const KubeObject *old, const KubeObject *obj,
                     void *userdata)
{
        Counter *c = userdata;

        (void) inf;
        (void) ev;
        (void) old;
        (void) obj;
        if (c->done)
                return;
        if (++c->events >= c->target) {
                c->done_at = now_usec(CLOCK_MONOTONIC);
                c->done = true;
        }
}

static int parse_u64(const char *s, uint64_t *ret)
{
        char *end = NULL;

        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* A plain-http URL (the replay server), or a kubeconfig file (kube-apiserver, its credentials). */
static KubeConfig *config_for(const char *server)
{
        _cleanup_(kube_config_freep) KubeConfig *cfg = NULL;

        if (!startswith(server, "http://") && !startswith(server, "https://")) {
                _cleanup_free_ char *err = NULL;
                if (kube_config_from_files(server, NULL, &cfg, &err) < 0) {
                        log_error("%s: %s", server, strempty(err));
                        return NULL;
                }
                return TAKE_PTR(cfg);
        }
        cfg = calloc(1, sizeof *cfg);
        if (!cfg)
                return NULL;
        cfg->server = strdup(server);
        cfg->source = strdup("watch-bench");
        if (!cfg->server || !cfg->source)
                return NULL;
        return TAKE_PTR(cfg);
}

static int run(const char *server, uint64_t target, uint64_t timeout_s)
{
        _cleanup_(loop_unrefp) Loop *loop = NULL;
        _cleanup_(kube_client_freep) KubeClient *client = NULL;
        _cleanup_(informer_freep) Informer *inf = NULL;
        Counter counter = {.target = target};
        struct rusage ru = {};
        InformerStats st = {};
        int r;

        loop = loop_new();
        if (!loop)
                return log_error_errno(-ENOMEM, "cannot create the loop");
        KubeConfig *cfg = config_for(server);
        if (!cfg)
                return log_error_errno(-ENOMEM, "cannot build the kubeconfig");
        client = kube_client_new(loop, cfg);
        if (!client) {
                kube_config_free(cfg);
                return log_error_errno(-ENOMEM, "cannot create the client");
        }
        inf = informer_new(client, &KUBE_PODS, NULL, NULL);
        if (!inf)
                return log_error_errno(-ENOMEM, "cannot create the informer");
        const char *keep_all = getenv("WATCH_BENCH_KEEP_ALL");
        bool transform = !keep_all || !streq(keep_all, "1");
        if (transform)
                informer_set_transform(inf, operator_cache_transform);
        r = informer_add_handler(inf, on_event, &counter);
        if (r < 0)
                return log_error_errno(r, "cannot add the handler");

        usec_t start = now_usec(CLOCK_MONOTONIC);
        r = informer_start(inf);
        if (r < 0)
                return log_error_errno(r, "cannot start the informer");
        r = loop_run_until(loop, &counter.done, timeout_s * USEC_PER_SEC);
        informer_get_stats(inf, &st);
        if (r < 0)
                return log_error_errno(
                        r, "stopped after %llu of %llu events (lists=%llu watches=%llu errors=%llu)",
                        (unsigned long long) counter.events, (unsigned long long) target,
                        (unsigned long long) st.lists, (unsigned long long) st.watches,
                        (unsigned long long) st.errors);
        if (getrusage(RUSAGE_SELF, &ru) < 0)
                return log_error_errno(-errno, "getrusage");
        size_t cached = informer_size(inf);
        uint64_t kept = 0;
        const KubeObject **objs = NULL;
        size_t n_objs = 0;
        if (informer_list(inf, &objs, &n_objs) >= 0)
                for (size_t i = 0; i < n_objs; i++) {
                        char *text = cJSON_PrintUnformatted(objs[i]->json);
                        kept += text ? strlen(text) : 0;
                        free(text);
                }
        free(objs);
        informer_stop(inf);

        double secs = (double) (counter.done_at - start) / USEC_PER_SEC;
        double cpu = (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec / 1e6;
        printf("watch-bench events=%llu seconds=%.3f events_per_s=%.0f peak_rss_kb=%ld cpu_seconds=%.3f "
               "cached=%zu lists=%llu watches=%llu transform=%s kept_json_bytes=%llu scratch=%s\n",
               (unsigned long long) counter.events, secs, secs > 0 ? (double) counter.events / secs : 0.0,
               ru.ru_maxrss, cpu, cached, (unsigned long long) st.lists, (unsigned long long) st.watches,
               transform ? "operator" : "none", (unsigned long long) (n_objs ? kept / n_objs : 0),
               json_scratch_size() > 0 ? "on" : "off");
        return 0;
}

int main(int argc, char *argv[])
{
        uint64_t target = 0, timeout_s = 600;

        if (argc < 3 || argc > 4 || parse_u64(argv[2], &target) < 0 ||
            (argc == 4 && parse_u64(argv[3], &timeout_s) < 0)) {
                fprintf(stderr, "usage: %s http://127.0.0.1:PORT|KUBECONFIG EVENTS [TIMEOUT_SECONDS]\n",
                        program_invocation_short_name);
                return 2;
        }
        const char *no_scratch = getenv("WATCH_BENCH_NO_SCRATCH");
        if (!no_scratch || !streq(no_scratch, "1"))
                json_hooks_install();
        return run(argv[1], target, timeout_s) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
