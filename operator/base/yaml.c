/* libyaml document API -> cJSON. Aliases are refused: they are not needed
 * by any input we read and make "billion laughs" inputs possible. */
#include <math.h>
#include <yaml.h>

#include "fileio.h"
#include "hashmap.h"
#include "json.h"
#include "yaml.h"

#define YAML_MAX_DEPTH 64

static cJSON *plain_scalar(const char *v, size_t len)
{
        char *end = NULL;

        if (len == 0 || streq(v, "~") || streq(v, "null") || streq(v, "Null") || streq(v, "NULL"))
                return cJSON_CreateNull();
        if (streq(v, "true") || streq(v, "True") || streq(v, "TRUE"))
                return cJSON_CreateTrue();
        if (streq(v, "false") || streq(v, "False") || streq(v, "FALSE"))
                return cJSON_CreateFalse();
        /* Integers stay exact only up to 2^53 as doubles; larger ones stay strings. */
        if ((v[0] >= '0' && v[0] <= '9') || ((v[0] == '-' || v[0] == '+') && len > 1)) {
                errno = 0;
                long long i = strtoll(v, &end, 10);
                if (*end == 0 && errno == 0) {
                        if (llabs(i) <= (1LL << 53))
                                return cJSON_CreateNumber((double) i);
                        return cJSON_CreateString(v);
                }
                double d = strtod(v, &end);
                if (*end == 0 && isfinite(d) && strpbrk(v, ".eE"))
                        return cJSON_CreateNumber(d);
        }
        return cJSON_CreateString(v);
}

static cJSON *convert(yaml_document_t *doc, yaml_node_t *node, int depth, char **err)
{
        if (!node)
                return cJSON_CreateNull();
        if (depth > YAML_MAX_DEPTH) {
                *err = strdup_printf("line %zu: nesting deeper than %d levels", node->start_mark.line + 1,
                                     YAML_MAX_DEPTH);
                return NULL;
        }
        switch (node->type) {
        case YAML_SCALAR_NODE: {
                const char *v = (const char *) node->data.scalar.value;
                /* libyaml's loader tags untagged scalars as str, so only the style tells. */
                if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                        return plain_scalar(v, node->data.scalar.length);
                return cJSON_CreateString(v);
        }
        case YAML_SEQUENCE_NODE: {
                _cleanup_(cJSON_Deletep) cJSON *a = cJSON_CreateArray();
                if (!a)
                        return NULL;
                for (yaml_node_item_t *i = node->data.sequence.items.start;
                     i < node->data.sequence.items.top; i++) {
                        cJSON *c = convert(doc, yaml_document_get_node(doc, *i), depth + 1, err);
                        if (!c)
                                return NULL;
                        cJSON_AddItemToArray(a, c);
                }
                return TAKE_PTR(a);
        }
        case YAML_MAPPING_NODE: {
                _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
                /* Keys seen, for a mapping long enough that a scan of the object per key
                 * would be quadratic (review L10: a 16 MiB file of keys). */
                size_t n_pairs = (size_t) (node->data.mapping.pairs.top - node->data.mapping.pairs.start);
                _cleanup_(hashmap_freep) Hashmap *seen = n_pairs > 16 ? hashmap_new(NULL) : NULL;
                if (!o || (n_pairs > 16 && !seen))
                        return NULL;
                for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
                     p++) {
                        yaml_node_t *k = yaml_document_get_node(doc, p->key);
                        if (!k || k->type != YAML_SCALAR_NODE) {
                                *err = strdup_printf("line %zu: mapping keys must be scalars",
                                                     (k ? k->start_mark.line : node->start_mark.line) + 1);
                                return NULL;
                        }
                        const char *key = (const char *) k->data.scalar.value;
                        /* 1: a new key, 0: seen before (hashmap_put's answers), < 0: no memory */
                        int fresh = seen ? hashmap_put(seen, key, (void *) key)
                                         : !cJSON_GetObjectItemCaseSensitive(o, key);
                        if (fresh < 0)
                                return NULL;
                        if (fresh == 0) {
                                *err = strdup_printf("line %zu: duplicate key \"%s\"",
                                                     k->start_mark.line + 1, key);
                                return NULL;
                        }
                        cJSON *c = convert(doc, yaml_document_get_node(doc, p->value), depth + 1, err);
                        if (!c)
                                return NULL;
                        cJSON_AddItemToObject(o, key, c);
                }
                return TAKE_PTR(o);
        }
        default:
                return cJSON_CreateNull();
        }
}

static bool has_alias(const char *text, size_t len)
{
        /* libyaml resolves aliases into shared nodes; we refuse them up front by
         * scanning events, which is cheap and exact. */
        yaml_parser_t p;
        yaml_event_t ev;
        bool alias = false, done = false;

        if (!yaml_parser_initialize(&p))
                return false;
        yaml_parser_set_input_string(&p, (const unsigned char *) text, len);
        while (!done && yaml_parser_parse(&p, &ev)) {
                if (ev.type == YAML_ALIAS_EVENT)
                        alias = true;
                done = alias || ev.type == YAML_STREAM_END_EVENT;
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&p);
        return alias;
}

static int parse(const char *text, size_t len, bool all, cJSON **ret, char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *docs = cJSON_CreateArray();
        char *err = NULL;
        yaml_parser_t p;
        int r = 0;

        assert_return(text && ret, -EINVAL);
        if (!docs)
                return -ENOMEM;
        if (has_alias(text, len)) {
                if (ret_error)
                        *ret_error = strdup("YAML aliases (*name) are not supported");
                return -EBADMSG;
        }
        if (!yaml_parser_initialize(&p))
                return -ENOMEM;
        yaml_parser_set_input_string(&p, (const unsigned char *) text, len);
        for (;;) {
                yaml_document_t doc;
                if (!yaml_parser_load(&p, &doc)) {
                        err = strdup_printf("line %zu column %zu: %s", p.problem_mark.line + 1,
                                            p.problem_mark.column + 1, strempty(p.problem));
                        r = -EBADMSG;
                        break;
                }
                yaml_node_t *root = yaml_document_get_root_node(&doc);
                if (!root) {
                        yaml_document_delete(&doc);
                        break;
                }
                cJSON *j = convert(&doc, root, 0, &err);
                yaml_document_delete(&doc);
                if (!j) {
                        r = err ? -EBADMSG : -ENOMEM;
                        break;
                }
                cJSON_AddItemToArray(docs, j);
                if (!all)
                        break;
        }
        yaml_parser_delete(&p);
        if (r < 0) {
                if (ret_error)
                        *ret_error = err;
                else
                        free(err);
                return r;
        }
        if (all) {
                *ret = TAKE_PTR(docs);
                return 0;
        }
        cJSON *first = cJSON_DetachItemFromArray(docs, 0);
        *ret = first ? first : cJSON_CreateNull();
        return *ret ? 0 : -ENOMEM;
}

int yaml_parse(const char *text, size_t len, cJSON **ret, char **ret_error)
{
        return parse(text, len, false, ret, ret_error);
}

int yaml_parse_all(const char *text, size_t len, cJSON **ret, char **ret_error)
{
        return parse(text, len, true, ret, ret_error);
}

int yaml_parse_file(const char *path, cJSON **ret, char **ret_error)
{
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r;

        r = read_full_file(path, 16u << 20, &data, &size);
        if (r < 0)
                return r;
        return yaml_parse(data, size, ret, ret_error);
}
