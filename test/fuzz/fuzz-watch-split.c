/* The watch stream's line framing (kube/client.c, through kube_call_feed):
 * the input's first byte picks a chunk size, and the rest is fed cut into
 * chunks of it, as the network may cut it. Each line must reach on_line
 * exactly as it does when the whole stream arrives at once. */
#include <stdint.h>

#include "base/json.h"
#include "kube/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static KubeClient *client;

typedef struct Seen {
        size_t lines;
        uint64_t digest; /* of each line's printed tree, in order */
} Seen;

static int on_line(KubeClient *c, cJSON *line, void *userdata)
{
        Seen *s = userdata;
        _cleanup_free_ char *text = json_print(line);
        s->lines++;
        for (const char *p = text; p && *p; p++)
                s->digest = (s->digest ^ (unsigned char) *p) * 1099511628211ULL;
        s->digest = (s->digest ^ '\n') * 1099511628211ULL;
        return 0;
}

static void on_done(KubeClient *c, const KubeResponse *resp, void *userdata)
{
}

static void setup(void)
{
        KubeConfig *cfg = calloc(1, sizeof *cfg);
        cfg->server = strdup("http://127.0.0.1:1");
        client = kube_client_new(loop_new(), cfg);
}

/* Feeds data in chunks of `chunk` bytes (0: all at once) to a new stream call. */
static int feed(const char *data, size_t size, size_t chunk, Seen *ret)
{
        KubeCall *call = NULL;
        int r = kube_stream(client, "/api/v1/pods?watch=1", 0, on_line, on_done, ret, &call);
        if (r < 0)
                return r;
        for (size_t off = 0; r >= 0 && off < size;) {
                size_t n = chunk && size - off > chunk ? chunk : size - off;
                r = kube_call_feed(call, data + off, n);
                off += n;
        }
        kube_call_cancel(call);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        Seen whole = {.digest = 14695981039346656037ULL}, cut = whole;

        if (!client)
                setup();
        if (size < 1)
                return 0;
        size_t chunk = 1 + data[0] % 16;
        int a = feed((const char *) data + 1, size - 1, 0, &whole);
        int b = feed((const char *) data + 1, size - 1, chunk, &cut);
        if (a < 0 || b < 0) /* out of memory only: on_line never fails here */
                return 0;
        if (whole.lines != cut.lines || whole.digest != cut.digest)
                abort();
        return 0;
}
