/* JSON helpers on cJSON. Parsing checks nesting depth before handing the
 * text to cJSON so a hostile body cannot drive cJSON's recursion. */
#include <inttypes.h>
#include <math.h>

#include "json.h"

/* ---- the scratch arena (json.h) ---- */

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SCRATCH_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define SCRATCH_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SCRATCH_POISON(p, n)   ((void) (p), (void) (n))
#define SCRATCH_UNPOISON(p, n) ((void) (p), (void) (n))
#endif

#define SCRATCH_ALIGN 16u

typedef struct ScratchChunk {
        struct ScratchChunk *next;
        size_t size, used; /* of data[] */
        _Alignas(16) unsigned char data[];
} ScratchChunk;

typedef struct Scratch {
        ScratchChunk *head; /* the newest chunk; the first one is last in the list */
        bool allocating;    /* between begin and stop */
        unsigned open;      /* begins not yet reset: a message handled while another is */
        size_t bytes;       /* data[] of every chunk */
} Scratch;

static bool hooks_installed;
static _Thread_local Scratch scratch;

static bool scratch_owns(const void *p)
{
        for (const ScratchChunk *c = scratch.head; c; c = c->next)
                if ((const unsigned char *) p >= c->data && (const unsigned char *) p < c->data + c->size)
                        return true;
        return false;
}

static void *scratch_alloc(size_t n)
{
        size_t need = (n + SCRATCH_ALIGN - 1) & ~(size_t) (SCRATCH_ALIGN - 1);
        ScratchChunk *c = scratch.head;

        if (need < n)
                return NULL;
        if (!c || c->size - c->used < need) {
                /* Doubling: a large message takes a few chunks, and scratch_owns() stays short. */
                size_t size = MAX(need, c ? c->size * 2 : (size_t) JSON_SCRATCH_KEEP);
                if (size > SIZE_MAX - sizeof *c)
                        return NULL;
                ScratchChunk *fresh = malloc(sizeof *fresh + size);
                if (!fresh)
                        return NULL;
                *fresh = (ScratchChunk){.next = c, .size = size};
                SCRATCH_POISON(fresh->data, size);
                scratch.head = c = fresh;
                scratch.bytes += size;
        }
        void *p = c->data + c->used;
        c->used += need;
        SCRATCH_UNPOISON(p, n);
        return p;
}

static void *hook_malloc(size_t n)
{
        return scratch.allocating ? scratch_alloc(n) : malloc(n);
}

static void hook_free(void *p)
{
        if (p && !scratch_owns(p))
                free(p);
}

void json_hooks_install(void)
{
        cJSON_InitHooks(&(cJSON_Hooks){.malloc_fn = hook_malloc, .free_fn = hook_free});
        hooks_installed = true;
}

void json_scratch_begin(void)
{
        if (!hooks_installed)
                return;
        scratch.allocating = true;
        scratch.open++;
}

void json_scratch_stop(void)
{
        scratch.allocating = false;
}

void json_scratch_reset(void)
{
        ScratchChunk *c = scratch.head;

        scratch.allocating = false;
        if (scratch.open > 0 && --scratch.open > 0)
                return; /* an outer message's tree is still in use: its reset takes both */
        /* Keep the first chunk if it is of the usual size; the others were for large messages. */
        while (c && (c->next || c->size != JSON_SCRATCH_KEEP)) {
                ScratchChunk *next = c->next;
                scratch.bytes -= c->size;
                free(c);
                c = next;
        }
        scratch.head = c;
        if (c) {
                c->used = 0;
                SCRATCH_POISON(c->data, c->size);
        }
}

size_t json_scratch_size(void)
{
        return scratch.bytes;
}

static int check_depth(const char *text, size_t len)
{
        const char *p = text, *end = text + len;
        int depth = 0;

        while (p < end) {
                char c = *p++;
                if (c == '"') {
                        /* Most bytes are inside strings: jump from quote to quote. */
                        for (;;) {
                                const char *q = memchr(p, '"', end - p);
                                if (!q)
                                        return 0; /* unterminated: the parser says so */
                                const char *b = q;
                                while (b > p && b[-1] == '\\')
                                        b--;
                                p = q + 1;
                                if ((q - b) % 2 == 0)
                                        break; /* not escaped */
                        }
                } else if (c == '{' || c == '[') {
                        if (++depth > JSON_MAX_DEPTH)
                                return -E2BIG;
                } else if (c == '}' || c == ']')
                        depth--;
        }
        return 0;
}

int json_parse(const char *text, size_t len, cJSON **ret)
{
        const char *end = NULL;
        int r;

        assert_return(text || len == 0, -EINVAL);
        assert_return(ret, -EINVAL);

        r = check_depth(text, len);
        if (r < 0)
                return r;
        cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
        if (!j)
                return -EBADMSG;
        /* Only whitespace may follow the value. */
        for (; end && end < text + len; end++)
                if (!strchr(" \t\r\n", *end) && *end != '\0') {
                        cJSON_Delete(j);
                        return -EBADMSG;
                }
        *ret = j;
        return 0;
}

void json_move_to(cJSON *to, cJSON *obj, const char *key)
{
        cJSON *item = cJSON_IsObject(obj) ? cJSON_DetachItemFromObjectCaseSensitive(obj, key) : NULL;
        if (item)
                cJSON_AddItemToArray(to, item);
}

cJSON *json_get(const cJSON *obj, const char *path)
{
        char key[256];
        const char *p = path;

        if (!obj || !path)
                return NULL;
        while (obj) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t) (dot - p) : strlen(p);
                if (n >= sizeof key)
                        return NULL;
                memcpy(key, p, n);
                key[n] = 0;
                if (!cJSON_IsObject(obj))
                        return NULL;
                obj = cJSON_GetObjectItemCaseSensitive(obj, key);
                if (!dot)
                        return (cJSON *) obj;
                p = dot + 1;
        }
        return NULL;
}

const char *json_get_string(const cJSON *obj, const char *path)
{
        cJSON *j = json_get(obj, path);
        return json_string(j);
}

cJSON *json_get_object(const cJSON *obj, const char *path)
{
        cJSON *j = json_get(obj, path);
        return cJSON_IsObject(j) ? j : NULL;
}

bool json_array_has_string(const cJSON *a, const char *want)
{
        if (!cJSON_IsArray(a))
                return false;
        for (const cJSON *e = a->child; e; e = e->next)
                if (streq_ptr(json_string(e), want))
                        return true;
        return false;
}

cJSON *json_get_array(const cJSON *obj, const char *path)
{
        cJSON *j = json_get(obj, path);
        return cJSON_IsArray(j) ? j : NULL;
}

int parse_uint64(const char *s, uint64_t *ret)
{
        char *end = NULL;

        if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int json_get_uint64(const cJSON *obj, const char *path, uint64_t *ret)
{
        cJSON *j = json_get(obj, path);
        uint64_t v = 0;
        int r;

        assert_return(ret, -EINVAL);
        if (!j)
                return -ENOENT;
        if (cJSON_IsString(j)) {
                r = parse_uint64(j->valuestring, &v);
                if (r < 0)
                        return r;
        } else if (cJSON_IsNumber(j)) {
                double d = j->valuedouble;
                /* Doubles are exact only below 2^53; anything above may already be rounded. */
                if (d < 0 || d != floor(d))
                        return -EINVAL;
                if (d > 9007199254740992.0)
                        return -ERANGE;
                v = (uint64_t) d;
        } else
                return -EINVAL;
        *ret = v;
        return 0;
}

int json_get_int64(const cJSON *obj, const char *path, int64_t *ret)
{
        cJSON *j = json_get(obj, path);

        assert_return(ret, -EINVAL);
        if (!j)
                return -ENOENT;
        if (cJSON_IsString(j)) {
                char *end = NULL;
                if (!*j->valuestring)
                        return -EINVAL;
                errno = 0;
                long long v = strtoll(j->valuestring, &end, 10);
                if (errno == ERANGE)
                        return -ERANGE;
                if (*end)
                        return -EINVAL;
                *ret = v;
                return 0;
        }
        if (!cJSON_IsNumber(j))
                return -EINVAL;
        double d = j->valuedouble;
        if (d != floor(d))
                return -EINVAL;
        if (fabs(d) > 9007199254740992.0)
                return -ERANGE;
        *ret = (int64_t) d;
        return 0;
}

bool json_get_bool(const cJSON *obj, const char *path, bool def)
{
        cJSON *j = json_get(obj, path);
        if (cJSON_IsBool(j))
                return cJSON_IsTrue(j);
        return def;
}

cJSON *json_ensure_object(cJSON *obj, const char *path)
{
        char key[256];
        const char *p = path;

        while (obj) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t) (dot - p) : strlen(p);
                if (n >= sizeof key)
                        return NULL;
                memcpy(key, p, n);
                key[n] = 0;
                cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, key);
                if (!cJSON_IsObject(c)) {
                        if (c)
                                cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
                        c = cJSON_AddObjectToObject(obj, key);
                }
                if (!dot)
                        return c;
                obj = c;
                p = dot + 1;
        }
        return NULL;
}

int json_set_string(cJSON *obj, const char *key, const char *value)
{
        assert_return(cJSON_IsObject(obj), -EINVAL);
        cJSON *s = cJSON_CreateString(value);
        if (!s)
                return -ENOMEM;
        if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
                if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s)) {
                        cJSON_Delete(s);
                        return -ENOMEM;
                }
        } else if (!cJSON_AddItemToObject(obj, key, s))
                return -ENOMEM;
        return 0;
}

char *json_print(const cJSON *obj)
{
        return cJSON_PrintUnformatted(obj);
}

/* ---- frozen trees ---- */

static void freeze_measure(const cJSON *j, size_t *n_nodes, size_t *n_bytes)
{
        for (; j; j = j->next) {
                (*n_nodes)++;
                if (j->string)
                        *n_bytes += strlen(j->string) + 1;
                if (j->valuestring)
                        *n_bytes += strlen(j->valuestring) + 1;
                freeze_measure(j->child, n_nodes, n_bytes);
        }
}

static char *freeze_string(const char *s, char **strings)
{
        if (!s)
                return NULL;
        char *d = *strings;
        *strings = stpcpy(d, s) + 1;
        return d;
}

/* Copies the sibling list starting at `j` into `*nodes` and `*strings`;
 * returns its head. Recursion follows nesting only, which parsing bounds. */
static cJSON *freeze_list(const cJSON *j, cJSON **nodes, char **strings)
{
        cJSON *head = NULL, *tail = NULL;

        for (; j; j = j->next) {
                cJSON *n = (*nodes)++;
                *n = (cJSON){
                        /* Every string is ours now; no node refers to another tree. */
                        .type = j->type & ~(cJSON_IsReference | cJSON_StringIsConst),
                        .valueint = j->valueint,
                        .valuedouble = j->valuedouble,
                        .string = freeze_string(j->string, strings),
                        .valuestring = freeze_string(j->valuestring, strings),
                };
                n->child = freeze_list(j->child, nodes, strings);
                if (tail) {
                        tail->next = n;
                        n->prev = tail;
                } else
                        head = n;
                tail = n;
        }
        if (head)
                head->prev = tail; /* cJSON keeps the last element in the first one's prev */
        return head;
}

cJSON *json_freeze(const cJSON *tree)
{
        return json_freeze_sized(tree, NULL);
}

cJSON *json_freeze_sized(const cJSON *tree, size_t *ret_size)
{
        size_t n_nodes = 1, n_bytes = 0;

        assert_return(tree, NULL);
        if (tree->string)
                n_bytes += strlen(tree->string) + 1;
        if (tree->valuestring)
                n_bytes += strlen(tree->valuestring) + 1;
        freeze_measure(tree->child, &n_nodes, &n_bytes);
        if (n_nodes > SIZE_MAX / sizeof(cJSON) / 2)
                return NULL;
        cJSON *block = malloc(n_nodes * sizeof(cJSON) + n_bytes);
        if (!block)
                return NULL;
        cJSON *nodes = block + 1;
        char *strings = (char *) (block + n_nodes);
        *block = (cJSON){
                .type = tree->type & ~(cJSON_IsReference | cJSON_StringIsConst),
                .valueint = tree->valueint,
                .valuedouble = tree->valuedouble,
                .string = freeze_string(tree->string, &strings),
                .valuestring = freeze_string(tree->valuestring, &strings),
        };
        block->child = freeze_list(tree->child, &nodes, &strings);
        if (ret_size)
                *ret_size = n_nodes * sizeof(cJSON) + n_bytes;
        return block;
}
