/* rss-floor: the resident memory this binary's libraries and runtime cost
 * before the operator holds any state of its own. It is linked exactly as
 * the operator is (ceo-core and its shared libraries: it calls one function
 * of each library the operator loads, or the linker's --as-needed would drop
 * libcjson, libyaml and libmicrohttpd, with libm, about 0.5 MiB of the
 * operator's resident memory), creates the loop with the operator's c-ares
 * resolver of host names on it (dns/hostnames.h, libcares), and
 * makes one HTTPS GET with a client certificate through it, the way every
 * request of the operator goes. It prints /proc/self/status figures before
 * and after that one request, one machine-readable line each:
 *
 *   rss-floor stage=loaded vmrss_kb=R rss_anon_kb=A rss_file_kb=F libraries=N
 *   rss-floor stage=one-request vmrss_kb=R rss_anon_kb=A rss_file_kb=F http=200
 *
 * usage: rss-floor URL CA_PEM CERT_PEM KEY_PEM */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <microhttpd.h>
#include <yaml.h>

#include "base/fileio.h"
#include "base/log.h"
#include "dns/hostnames.h"
#include "loop/loop.h"

static long status_kb(const char *field)
{
        char line[256];
        long v = -1;
        size_t n = strlen(field);
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, field, n) == 0 && line[n] == ':') {
                        v = strtol(line + n + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

/* Distinct shared objects mapped (the vdso aside). */
static unsigned count_libraries(void)
{
        char line[1024], seen[128][256];
        unsigned n = 0;
        FILE *f = fopen("/proc/self/maps", "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof line, f)) {
                const char *p = strchr(line, '/');
                if (!p || !strstr(p, ".so"))
                        continue;
                char path[256];
                (void) snprintf(path, sizeof path, "%s", p);
                path[strcspn(path, "\n")] = 0;
                bool dup = false;
                for (unsigned i = 0; i < n && !dup; i++)
                        dup = strcmp(seen[i], path) == 0;
                if (!dup && n < 128)
                        memcpy(seen[n++], path, sizeof path);
        }
        fclose(f);
        return n;
}

static void report(const char *stage, const char *extra)
{
        printf("rss-floor stage=%s vmrss_kb=%ld rss_anon_kb=%ld rss_file_kb=%ld %s\n", stage,
               status_kb("VmRSS"), status_kb("RssAnon"), status_kb("RssFile"), extra);
        fflush(stdout);
}

typedef struct Done {
        bool done;
        int error;
} Done;

static void on_done(HttpRequest *req, int error, void *userdata)
{
        Done *d = userdata;
        (void) req;
        d->done = true;
        d->error = error;
}

static char *slurp(const char *path)
{
        char *s = NULL;
        int r = read_full_file(path, 1 << 20, &s, NULL);
        if (r < 0) {
                fprintf(stderr, "rss-floor: %s: %s\n", path, strerror(-r));
                exit(1);
        }
        return s;
}

int main(int argc, char **argv)
{
        if (argc != 5) {
                fprintf(stderr, "usage: rss-floor URL CA_PEM CERT_PEM KEY_PEM\n");
                return 2;
        }
        _cleanup_(loop_unrefp) Loop *loop = loop_new();
        if (!loop) {
                fprintf(stderr, "rss-floor: cannot create the loop\n");
                return 1;
        }
        int rr = dns_hostnames_attach(loop, NULL, NULL); /* as the operator's process does */
        if (rr < 0) {
                fprintf(stderr, "rss-floor: cannot start the resolver of host names: %s\n", strerror(-rr));
                return 1;
        }
        /* The libraries the operator loads and nothing here would call (their versions, unused). */
        const char *versions[] = {cJSON_Version(), yaml_get_version_string(), MHD_get_version()};
        volatile double one = 1.0;
        double libm = log1p(one); /* libm: a call, not a builtin */
        char extra[64];
        (void) versions;
        (void) libm;
        (void) snprintf(extra, sizeof extra, "libraries=%u", count_libraries());
        report("loaded", extra);

        HttpTls tls = {.ca_pem = slurp(argv[2]), .cert_pem = slurp(argv[3]), .key_pem = slurp(argv[4])};
        _cleanup_(http_request_unrefp) HttpRequest *req = http_request_new("GET", argv[1]);
        Done d = {};
        int r = req ? http_request_set_tls(req, &tls) : -ENOMEM;
        free(tls.ca_pem);
        free(tls.cert_pem);
        free(tls.key_pem);
        http_request_set_timeout(req, 10 * USEC_PER_SEC);
        if (r >= 0)
                r = loop_http_start(loop, req, on_done, &d);
        if (r >= 0)
                r = loop_run_until(loop, &d.done, 15 * USEC_PER_SEC);
        if (r >= 0)
                r = d.error;
        if (r < 0) {
                fprintf(stderr, "rss-floor: GET %s: %s (%s)\n", argv[1], strerror(-r),
                        http_request_get_error(req));
                return 1;
        }
        (void) snprintf(extra, sizeof extra, "http=%ld", http_request_get_status(req));
        report("one-request", extra);
        return 0;
}
