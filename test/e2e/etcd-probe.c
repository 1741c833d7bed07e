/* etcd-probe: checks an etcd cluster with the project's own etcd client, for
 * e2e scripts. Usage: etcd-probe CA CERT KEY ENDPOINT[,ENDPOINT...] [WAIT_S]
 * Waits until every endpoint says healthy (up to WAIT_S, default 60), then
 * lists members, writes and reads back a key, and prints one JSON line:
 * {"healthy":true,"members":[{"name":..,"id":"..","learner":false}],"cluster_id":".."}.
 * Exit 0 on success, 1 otherwise. */
#include <inttypes.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "base/json.h"
#include "etcd/client.h"

typedef struct Res {
        bool done;
        int error;
        cJSON *body;
} Res;

static void cb(EtcdClient *c, const EtcdResponse *resp, void *userdata)
{
        Res *r = userdata;
        (void) c;
        r->done = true;
        r->error = resp->error;
        r->body = resp->body ? cJSON_Duplicate(resp->body, true) : NULL;
}

static int wait_res(Loop *l, Res *r)
{
        int e = loop_run_until(l, &r->done, 15 * USEC_PER_SEC);
        return e < 0 ? e : r->error;
}

int main(int argc, char *argv[])
{
        _cleanup_free_ char *ca = NULL, *crt = NULL, *key = NULL, *eps = NULL;
        char *urls[16];
        size_t n = 0;

        if (argc < 5) {
                fprintf(stderr, "usage: etcd-probe CA CERT KEY ENDPOINT[,ENDPOINT...] [WAIT_S]\n");
                return 2;
        }
        if (read_full_file(argv[1], 1 << 20, &ca, NULL) < 0 ||
            read_full_file(argv[2], 1 << 20, &crt, NULL) < 0 ||
            read_full_file(argv[3], 1 << 20, &key, NULL) < 0) {
                fprintf(stderr, "etcd-probe: cannot read the TLS files\n");
                return 1;
        }
        eps = strdup(argv[4]);
        for (char *save = NULL, *t = strtok_r(eps, ",", &save); t && n < 16; t = strtok_r(NULL, ",", &save))
                urls[n++] = t;
        usec_t wait = (argc > 5 ? (usec_t) atoi(argv[5]) : 60) * USEC_PER_SEC;

        Loop *l = loop_new();
        HttpTls tls = {.ca_pem = ca, .cert_pem = crt, .key_pem = key};
        EtcdClient *c = etcd_client_new(l, &tls);
        if (!c || etcd_client_set_endpoints(c, urls, n) < 0)
                return 1;
        usec_t end = now_usec(CLOCK_MONOTONIC) + wait;
        for (size_t i = 0; i < n;) {
                Res r = {};
                int e = etcd_health(c, urls[i], cb, &r);
                e = e < 0 ? e : wait_res(l, &r);
                cJSON_Delete(r.body);
                if (e == 0) {
                        i++;
                        continue;
                }
                if (now_usec(CLOCK_MONOTONIC) > end) {
                        fprintf(stderr, "etcd-probe: %s not healthy: %s\n", urls[i], etcd_strerror(e));
                        return 1;
                }
                (void) usleep(200000);
        }
        Res m = {}, put = {}, get = {};
        if (etcd_member_list(c, cb, &m) < 0 || wait_res(l, &m) < 0)
                return fprintf(stderr, "etcd-probe: member list failed\n"), 1;
        if (etcd_kv_put(c, "/etcd-probe", 11, "ok", 2, cb, &put) < 0 || wait_res(l, &put) < 0)
                return fprintf(stderr, "etcd-probe: put failed\n"), 1;
        if (etcd_kv_range(c, NULL, "/etcd-probe", 11, NULL, 0, false, cb, &get) < 0 || wait_res(l, &get) < 0)
                return fprintf(stderr, "etcd-probe: get failed\n"), 1;
        const char *v64 = json_get_string(cJSON_GetArrayItem(json_get_array(get.body, "kvs"), 0), "value");
        _cleanup_free_ char *v = NULL;
        if (!v64 || base64_decode(v64, &v, NULL) < 0 || !streq(v, "ok"))
                return fprintf(stderr, "etcd-probe: read back a different value\n"), 1;

        EtcdMemberList *ml = NULL;
        if (etcd_parse_member_list(m.body, &ml) < 0)
                return 1;
        printf("{\"healthy\":true,\"cluster_id\":\"%" PRIu64 "\",\"members\":[", ml->cluster_id);
        for (size_t i = 0; i < ml->n_members; i++)
                printf("%s{\"name\":\"%s\",\"id\":\"%" PRIu64 "\",\"learner\":%s}", i ? "," : "",
                       strempty(ml->members[i].name), ml->members[i].id,
                       ml->members[i].is_learner ? "true" : "false");
        printf("]}\n");
        etcd_member_list_free(ml);
        cJSON_Delete(m.body);
        cJSON_Delete(put.body);
        cJSON_Delete(get.body);
        etcd_client_free(c);
        loop_unref(l);
        return 0;
}
