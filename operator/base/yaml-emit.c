/* YAML emitter. */
#include <ctype.h>
#include <math.h>
#include <strings.h>

#include "yaml-emit.h"

static int put(Buf *b, const char *s)
{
        return buf_append(b, s, strlen(s));
}

static int indent(Buf *b, int n)
{
        static const char spaces[] = "                                                                ";
        while (n > 0) {
                int k = MIN(n, (int) sizeof spaces - 1);
                int r = buf_append(b, spaces, (size_t) k);
                if (r < 0)
                        return r;
                n -= k;
        }
        return 0;
}

static bool looks_special(const char *s)
{
        static const char *const words[] = {"true", "false", "null", "yes", "no",
                                            "on",   "off",   "y",    "n",   "~"};
        char lower[8];
        size_t n = strlen(s);

        if (n < sizeof lower) {
                for (size_t i = 0; i <= n; i++)
                        lower[i] = (char) tolower((unsigned char) s[i]);
                for (size_t i = 0; i < ELEMENTSOF(words); i++)
                        if (streq(lower, words[i]))
                                return true;
        }
        /* Anything number-like (ints, floats, hex, octal, .inf, .nan) stays a string only if quoted. */
        char *end = NULL;
        (void) strtod(s, &end);
        if (end && *end == 0)
                return true;
        if (s[0] == '.' && (strcasecmp(s, ".inf") == 0 || strcasecmp(s, ".nan") == 0))
                return true;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o'))
                return true;
        /* YAML 1.1 timestamps (2029-11-21, 2029-11-21T00:00:00Z): some parsers make them times. */
        if (isdigit((unsigned char) s[0]) && isdigit((unsigned char) s[1]) &&
            isdigit((unsigned char) s[2]) && isdigit((unsigned char) s[3]) && s[4] == '-' &&
            isdigit((unsigned char) s[5]))
                return true;
        return false;
}

bool yaml_string_is_plain(const char *s)
{
        if (!s || !*s || looks_special(s))
                return false;
        if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]))
                return false;
        size_t n = strlen(s);
        if (s[n - 1] == ' ' || s[n - 1] == ':')
                return false;
        for (const char *p = s; *p; p++) {
                unsigned char c = (unsigned char) *p;
                if (c < 0x20 || c == 0x7f)
                        return false;
                if (c == ':' && p[1] == ' ')
                        return false;
                if (c == '#' && p > s && p[-1] == ' ')
                        return false;
        }
        return true;
}

static int quoted(Buf *b, const char *s)
{
        char tmp[8];
        int r = put(b, "\"");
        for (const char *p = s; r >= 0 && *p; p++) {
                unsigned char c = (unsigned char) *p;
                switch (c) {
                case '"':
                        r = put(b, "\\\"");
                        break;
                case '\\':
                        r = put(b, "\\\\");
                        break;
                case '\n':
                        r = put(b, "\\n");
                        break;
                case '\t':
                        r = put(b, "\\t");
                        break;
                case '\r':
                        r = put(b, "\\r");
                        break;
                default:
                        if (c < 0x20 || c == 0x7f) {
                                (void) snprintf(tmp, sizeof tmp, "\\x%02x", c);
                                r = put(b, tmp);
                        } else
                                r = buf_append(b, p, 1);
                }
        }
        return r < 0 ? r : put(b, "\"");
}

/* Literal block for multi-line text, when every line can be represented. */
static bool block_ok(const char *s)
{
        if (!strchr(s, '\n') || s[0] == ' ' || s[0] == '\n')
                return false;
        for (const char *p = s; *p; p++) {
                unsigned char c = (unsigned char) *p;
                if ((c < 0x20 && c != '\n') || c == 0x7f)
                        return false;
                if (c == ' ' && (p[1] == '\n' || p[1] == 0))
                        return false; /* trailing spaces would be lost to readers' editors */
        }
        return true;
}

static int scalar_string(Buf *b, const char *s, int level)
{
        int r;
        if (block_ok(s)) {
                size_t n = strlen(s);
                bool keep = n > 0 && s[n - 1] == '\n';
                bool extra = n > 1 && s[n - 1] == '\n' && s[n - 2] == '\n';
                if (extra)
                        return quoted(b, s);
                r = put(b, keep ? "|\n" : "|-\n");
                const char *line = s;
                while (r >= 0 && *line) {
                        const char *nl = strchr(line, '\n');
                        size_t len = nl ? (size_t) (nl - line) : strlen(line);
                        if (len > 0) {
                                r = indent(b, level * 2);
                                if (r >= 0)
                                        r = buf_append(b, line, len);
                        }
                        if (r >= 0)
                                r = put(b, "\n");
                        line = nl ? nl + 1 : line + len;
                }
                /* The caller adds the newline after a scalar: take ours back. */
                if (r >= 0)
                        b->len--, b->data[b->len] = 0;
                return r;
        }
        if (yaml_string_is_plain(s))
                return put(b, s);
        return quoted(b, s);
}

static int scalar(Buf *b, const cJSON *v, int level)
{
        char num[64];
        if (cJSON_IsString(v))
                return scalar_string(b, v->valuestring, level);
        if (cJSON_IsNumber(v)) {
                double d = v->valuedouble;
                if (d == floor(d) && fabs(d) < 1e15)
                        (void) snprintf(num, sizeof num, "%lld", (long long) d);
                else
                        (void) snprintf(num, sizeof num, "%.17g", d);
                return put(b, num);
        }
        if (cJSON_IsBool(v))
                return put(b, cJSON_IsTrue(v) ? "true" : "false");
        return put(b, "null");
}

static bool is_collection(const cJSON *v)
{
        return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child;
}

static int emit(Buf *b, const cJSON *v, int level);

static int key(Buf *b, const char *k)
{
        int r = yaml_string_is_plain(k) ? put(b, k) : quoted(b, k);
        return r < 0 ? r : put(b, ":");
}

static int emit_object(Buf *b, const cJSON *v, int level, bool first_inline)
{
        const cJSON *c;
        int r = 0;
        bool first = true;
        for (c = v->child; c && r >= 0; c = c->next) {
                if (!(first && first_inline))
                        r = indent(b, level * 2);
                first = false;
                if (r >= 0)
                        r = key(b, c->string);
                if (r < 0)
                        break;
                if (is_collection(c)) {
                        r = put(b, "\n");
                        /* Sequences under a key are not indented further, as kubectl writes them. */
                        if (r >= 0)
                                r = emit(b, c, cJSON_IsArray(c) ? level : level + 1);
                } else {
                        r = put(b, " ");
                        if (r >= 0)
                                r = cJSON_IsObject(c)  ? put(b, "{}")
                                    : cJSON_IsArray(c) ? put(b, "[]")
                                                       : scalar(b, c, level + 1);
                        if (r >= 0)
                                r = put(b, "\n");
                }
        }
        return r;
}

static int emit(Buf *b, const cJSON *v, int level)
{
        int r = 0;
        if (cJSON_IsObject(v))
                return emit_object(b, v, level, false);
        if (cJSON_IsArray(v)) {
                for (const cJSON *c = v->child; c && r >= 0; c = c->next) {
                        r = indent(b, level * 2);
                        if (r >= 0)
                                r = put(b, "- ");
                        if (r < 0)
                                break;
                        if (cJSON_IsObject(c) && c->child)
                                r = emit_object(b, c, level + 1, true);
                        else if (cJSON_IsArray(c) && c->child) {
                                r = put(b, "\n");
                                if (r >= 0)
                                        r = emit(b, c, level + 1);
                        } else {
                                r = cJSON_IsObject(c)  ? put(b, "{}")
                                    : cJSON_IsArray(c) ? put(b, "[]")
                                                       : scalar(b, c, level + 1);
                                if (r >= 0)
                                        r = put(b, "\n");
                        }
                }
                return r;
        }
        r = scalar(b, v, level);
        return r < 0 ? r : put(b, "\n");
}

int yaml_emit(const cJSON *value, Buf *out)
{
        assert_return(value && out, -EINVAL);
        if (cJSON_IsObject(value) && !value->child)
                return put(out, "{}\n");
        if (cJSON_IsArray(value) && !value->child)
                return put(out, "[]\n");
        return emit(out, value, 0);
}

char *yaml_emit_string(const cJSON *value)
{
        Buf b = BUF_INIT(0);
        if (yaml_emit(value, &b) < 0) {
                buf_free(&b);
                return NULL;
        }
        return buf_steal(&b);
}
