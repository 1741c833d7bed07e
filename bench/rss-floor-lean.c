/* The leanest build of the three libraries the operator's loop and TLS stand
 * on (sd-event from libsystemd, libcurl, OpenSSL) doing what rss-floor does:
 * an event loop and one HTTPS GET with a client certificate. Built by
 * bench/rss-floor-lean.sh against a static libcurl with HTTP(S) alone and
 * static OpenSSL; prints the same two lines as rss-floor.
 *
 * usage: rss-floor-lean URL CA_FILE CERT_FILE KEY_FILE */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

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

static void report(const char *stage, const char *extra)
{
        printf("rss-floor stage=%s vmrss_kb=%ld rss_anon_kb=%ld rss_file_kb=%ld %s\n", stage,
               status_kb("VmRSS"), status_kb("RssAnon"), status_kb("RssFile"), extra);
        fflush(stdout);
}

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
        (void) p;
        (void) userdata;
        return size * n;
}

int main(int argc, char **argv)
{
        sd_event *e = NULL;
        long code = 0;
        char extra[32];

        if (argc != 5) {
                fprintf(stderr, "usage: rss-floor-lean URL CA_FILE CERT_FILE KEY_FILE\n");
                return 2;
        }
        if (sd_event_new(&e) < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return 1;
        CURL *c = curl_easy_init();
        if (!c)
                return 1;
        report("loaded", "");
        (void) curl_easy_setopt(c, CURLOPT_URL, argv[1]);
        (void) curl_easy_setopt(c, CURLOPT_CAINFO, argv[2]);
        (void) curl_easy_setopt(c, CURLOPT_SSLCERT, argv[3]);
        (void) curl_easy_setopt(c, CURLOPT_SSLKEY, argv[4]);
        (void) curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        CURLcode r = curl_easy_perform(c);
        if (r != CURLE_OK) {
                fprintf(stderr, "rss-floor-lean: GET %s: %s\n", argv[1], curl_easy_strerror(r));
                return 1;
        }
        (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        (void) snprintf(extra, sizeof extra, "http=%ld", code);
        report("one-request", extra);
        curl_easy_cleanup(c);
        sd_event_unref(e);
        return 0;
}
