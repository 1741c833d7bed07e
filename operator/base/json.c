/* JSON helpers on cJSON trees, and the parser that builds them from the
 * network's text (bounded depth, strict grammar). */
#include <inttypes.h>
#include <limits.h>
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

/* ---- parsing ----
 *
 * A strict RFC 8259 parser that builds cJSON trees (allocated through
 * cJSON's hooks, so the scratch arena and cJSON_Delete() work on them as on
 * cJSON's own). It replaces cJSON_Parse for what comes off the network: one
 * pass, depth counted as it goes (no pre-scan), every value dispatched on its
 * first byte (cJSON tries "null", "false" and "true" with strncmp before
 * anything else), strings copied in one pass, numbers read with strtod as
 * cJSON does and given cJSON's valueint. Stricter than cJSON: whitespace is
 * the four JSON characters only, control characters must be escaped inside
 * strings, numbers follow JSON's grammar (no "+1", "01", ".5" or "1."). */

typedef struct Parser {
        const char *p, *end;
        unsigned depth;
        int error;    /* -EBADMSG, -E2BIG or -ENOMEM */
        bool had_nul; /* the last string held \u0000 (which ends it for every C reader) */
} Parser;

static cJSON *parse_value(Parser *ps);

static void *fail(Parser *ps, int error)
{
        if (ps->error == 0)
                ps->error = error;
        return NULL;
}

static cJSON *new_node(Parser *ps, int type)
{
        cJSON *n = cJSON_malloc(sizeof *n);
        if (!n)
                return fail(ps, -ENOMEM);
        *n = (cJSON){.type = type};
        return n;
}

static void skip_ws(Parser *ps)
{
        while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
                ps->p++;
}

static int hex4(const char *s, const char *end, unsigned *ret)
{
        unsigned v = 0;

        if (end - s < 4)
                return -EBADMSG;
        for (int i = 0; i < 4; i++) {
                char c = s[i];
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned) (c - 'A' + 10);
                else
                        return -EBADMSG;
        }
        *ret = v;
        return 0;
}

static size_t put_utf8(char *out, unsigned cp)
{
        if (cp < 0x80) {
                out[0] = (char) cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char) (0xC0 | (cp >> 6));
                out[1] = (char) (0x80 | (cp & 0x3F));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char) (0xE0 | (cp >> 12));
                out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
                out[2] = (char) (0x80 | (cp & 0x3F));
                return 3;
        }
        out[0] = (char) (0xF0 | (cp >> 18));
        out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char) (0x80 | (cp & 0x3F));
        return 4;
}

/* At the opening quote; returns the decoded string (cJSON_malloc'd). An
 * escape never decodes to more bytes than it takes, so the raw length bounds
 * the copy. */
static char *parse_string(Parser *ps)
{
        const char *s = ps->p + 1, *q = s;

        ps->had_nul = false;
        /* The end quote and whether anything needs decoding. */
        bool escaped = false;
        for (;; q++) {
                if (q >= ps->end)
                        return fail(ps, -EBADMSG);
                unsigned char c = (unsigned char) *q;
                if (c == '"')
                        break;
                if (c < 0x20)
                        return fail(ps, -EBADMSG);
                if (c == '\\') {
                        escaped = true;
                        if (++q >= ps->end)
                                return fail(ps, -EBADMSG);
                }
        }
        size_t raw = (size_t) (q - s);
        char *out = cJSON_malloc(raw + 1);
        if (!out)
                return fail(ps, -ENOMEM);
        if (!escaped) {
                memcpy(out, s, raw);
                out[raw] = 0;
                ps->p = q + 1;
                return out;
        }
        char *o = out;
        for (const char *i = s; i < q;) {
                if (*i != '\\') {
                        *o++ = *i++;
                        continue;
                }
                i++;
                switch (*i++) {
                case '"':
                        *o++ = '"';
                        break;
                case '\\':
                        *o++ = '\\';
                        break;
                case '/':
                        *o++ = '/';
                        break;
                case 'b':
                        *o++ = '\b';
                        break;
                case 'f':
                        *o++ = '\f';
                        break;
                case 'n':
                        *o++ = '\n';
                        break;
                case 'r':
                        *o++ = '\r';
                        break;
                case 't':
                        *o++ = '\t';
                        break;
                case 'u': {
                        unsigned cp, lo;
                        if (hex4(i, q, &cp) < 0)
                                goto bad;
                        i += 4;
                        if (cp >= 0xDC00 && cp <= 0xDFFF)
                                goto bad; /* a low surrogate first */
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                                if (q - i < 6 || i[0] != '\\' || i[1] != 'u' || hex4(i + 2, q, &lo) < 0 ||
                                    lo < 0xDC00 || lo > 0xDFFF)
                                        goto bad; /* a high surrogate without its low one */
                                i += 6;
                                cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
                        }
                        ps->had_nul |= cp == 0;
                        o += put_utf8(o, cp);
                        break;
                }
                default:
                        goto bad;
                }
        }
        *o = 0;
        ps->p = q + 1;
        return out;
bad:
        cJSON_free(out);
        return fail(ps, -EBADMSG);
}

static cJSON *parse_number(Parser *ps)
{
        const char *s = ps->p, *q = s;
        char small[64];

        if (q < ps->end && *q == '-')
                q++;
        if (q >= ps->end || !(*q >= '0' && *q <= '9'))
                return fail(ps, -EBADMSG);
        if (*q == '0')
                q++;
        else
                while (q < ps->end && *q >= '0' && *q <= '9')
                        q++;
        if (q < ps->end && *q == '.') {
                q++;
                if (q >= ps->end || !(*q >= '0' && *q <= '9'))
                        return fail(ps, -EBADMSG);
                while (q < ps->end && *q >= '0' && *q <= '9')
                        q++;
        }
        if (q < ps->end && (*q == 'e' || *q == 'E')) {
                q++;
                if (q < ps->end && (*q == '+' || *q == '-'))
                        q++;
                if (q >= ps->end || !(*q >= '0' && *q <= '9'))
                        return fail(ps, -EBADMSG);
                while (q < ps->end && *q >= '0' && *q <= '9')
                        q++;
        }
        /* strtod wants a terminated string; the text goes on past the number. */
        size_t n = (size_t) (q - s);
        char *buf = n < sizeof small ? small : malloc(n + 1);
        if (!buf)
                return fail(ps, -ENOMEM);
        memcpy(buf, s, n);
        buf[n] = 0;
        double d = strtod(buf, NULL);
        if (buf != small)
                free(buf);
        cJSON *node = new_node(ps, cJSON_Number);
        if (!node)
                return NULL;
        /* As cJSON sets it. */
        node->valuedouble = d;
        node->valueint = d >= INT_MAX ? INT_MAX : d <= (double) INT_MIN ? INT_MIN : (int) d;
        ps->p = q;
        return node;
}

static cJSON *parse_literal(Parser *ps, const char *word, size_t n, int type)
{
        if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
                return fail(ps, -EBADMSG);
        cJSON *node = new_node(ps, type);
        if (!node)
                return NULL;
        if (type == cJSON_True)
                node->valueint = 1;
        ps->p += n;
        return node;
}

/* An array or an object, at its opening bracket. */
static cJSON *parse_container(Parser *ps, bool object)
{
        char close = object ? '}' : ']';
        cJSON *node, *tail = NULL;

        if (++ps->depth > JSON_MAX_DEPTH)
                return fail(ps, -E2BIG);
        node = new_node(ps, object ? cJSON_Object : cJSON_Array);
        if (!node)
                return NULL;
        ps->p++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                ps->depth--;
                return node;
        }
        for (;;) {
                char *key = NULL;
                if (object) {
                        if (ps->p >= ps->end || *ps->p != '"')
                                goto bad;
                        key = parse_string(ps);
                        if (!key)
                                goto out;
                        if (ps->had_nul) { /* "a\u0000b" would read as "a": another member's name */
                                cJSON_free(key);
                                goto bad;
                        }
                        skip_ws(ps);
                        if (ps->p >= ps->end || *ps->p != ':') {
                                cJSON_free(key);
                                goto bad;
                        }
                        ps->p++;
                        skip_ws(ps);
                }
                cJSON *child = parse_value(ps);
                if (!child) {
                        cJSON_free(key);
                        goto out;
                }
                child->string = key;
                /* cJSON's list: the first child's prev is the last one. */
                if (tail) {
                        tail->next = child;
                        child->prev = tail;
                } else
                        node->child = child;
                node->child->prev = child;
                tail = child;
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p == ',') {
                        ps->p++;
                        skip_ws(ps);
                        continue;
                }
                if (ps->p < ps->end && *ps->p == close) {
                        ps->p++;
                        ps->depth--;
                        return node;
                }
                goto bad;
        }
bad:
        (void) fail(ps, -EBADMSG);
out:
        cJSON_Delete(node);
        return NULL;
}

static cJSON *parse_value(Parser *ps)
{
        if (ps->p >= ps->end)
                return fail(ps, -EBADMSG);
        switch (*ps->p) {
        case '{':
                return parse_container(ps, true);
        case '[':
                return parse_container(ps, false);
        case '"': {
                char *v = parse_string(ps);
                if (!v)
                        return NULL;
                cJSON *node = new_node(ps, cJSON_String);
                if (!node)
                        cJSON_free(v);
                else
                        node->valuestring = v;
                return node;
        }
        case 't':
                return parse_literal(ps, "true", 4, cJSON_True);
        case 'f':
                return parse_literal(ps, "false", 5, cJSON_False);
        case 'n':
                return parse_literal(ps, "null", 4, cJSON_NULL);
        default:
                return parse_number(ps);
        }
}

int json_parse(const char *text, size_t len, cJSON **ret)
{
        assert_return(text || len == 0, -EINVAL);
        assert_return(ret, -EINVAL);

        /* No byte order mark either: JSON text on the network has none (RFC 8259, 8.1). */
        Parser ps = {.p = text, .end = text + len};
        skip_ws(&ps);
        cJSON *j = parse_value(&ps);
        if (!j)
                return ps.error < 0 ? ps.error : -EBADMSG;
        /* Only whitespace (or NUL padding) may follow the value. */
        for (; ps.p < ps.end; ps.p++) {
                char c = *ps.p;
                if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\0') {
                        cJSON_Delete(j);
                        return -EBADMSG;
                }
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

static bool all_digits(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

int json_set_path(cJSON *root, const char *path, cJSON *value)
{
        _cleanup_(cJSON_Deletep) cJSON *v = value;
        cJSON *cur = root;
        char key[256];

        assert_return(root && path && value, -EINVAL);
        for (const char *p = path;;) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t) (dot - p) : strlen(p);
                if (n == 0 || n >= sizeof key)
                        return -EINVAL;
                memcpy(key, p, n);
                key[n] = 0;
                if (cJSON_IsArray(cur)) {
                        if (!all_digits(key) || n > 6)
                                return -EINVAL;
                        int i = atoi(key);
                        if (i >= cJSON_GetArraySize(cur))
                                return -ENOENT;
                        if (!dot) {
                                if (!cJSON_ReplaceItemInArray(cur, i, v))
                                        return -ENOMEM;
                                TAKE_PTR(v);
                                return 0;
                        }
                        cur = cJSON_GetArrayItem(cur, i);
                } else if (cJSON_IsObject(cur)) {
                        cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, key);
                        if (!dot) {
                                if (next ? !cJSON_ReplaceItemInObjectCaseSensitive(cur, key, v)
                                         : !cJSON_AddItemToObject(cur, key, v))
                                        return -ENOMEM;
                                TAKE_PTR(v);
                                return 0;
                        }
                        if (!next && !(next = cJSON_AddObjectToObject(cur, key)))
                                return -ENOMEM;
                        cur = next;
                } else
                        return -EINVAL;
                p = dot + 1;
        }
}

int json_set_path_string(cJSON *root, const char *path, const char *value)
{
        if (!value)
                return -EINVAL;
        cJSON *s = cJSON_CreateString(value);
        return s ? json_set_path(root, path, s) : -ENOMEM;
}

int json_set_path_number(cJSON *root, const char *path, double value)
{
        cJSON *num = cJSON_CreateNumber(value);
        return num ? json_set_path(root, path, num) : -ENOMEM;
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
