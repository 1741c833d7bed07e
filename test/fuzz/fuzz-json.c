/* json_parse against cJSON's own parser, on the same bytes:
 * - what json_parse accepts, cJSON accepts too, and the trees are the same
 *   (types, keys, strings, numbers to the bit, valueint, list links);
 * - what cJSON accepts and prints, json_parse reads back as the same tree
 *   (cJSON prints strict JSON), unless it nests deeper than JSON_MAX_DEPTH.
 * json_parse is stricter than cJSON (whitespace, control characters,
 * number grammar), so a refusal of json_parse alone is no finding. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned depth_of(const cJSON *j)
{
        unsigned d = 0;
        for (const cJSON *c = j->child; c; c = c->next) {
                unsigned cd = depth_of(c);
                if (cd > d)
                        d = cd;
        }
        return (cJSON_IsArray(j) || cJSON_IsObject(j)) ? d + 1 : 0;
}

static void same_tree(const cJSON *a, const cJSON *b)
{
        assert((a->type & 0xFF) == (b->type & 0xFF));
        assert((a->string == NULL) == (b->string == NULL));
        assert(!a->string || strcmp(a->string, b->string) == 0);
        assert((a->valuestring == NULL) == (b->valuestring == NULL));
        assert(!a->valuestring || strcmp(a->valuestring, b->valuestring) == 0);
        assert(memcmp(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble) == 0);
        assert(a->valueint == b->valueint);
        const cJSON *ca = a->child, *cb = b->child;
        if (ca)
                assert(cb && ca->prev && !ca->prev->next); /* the first child's prev is the last */
        for (; ca && cb; ca = ca->next, cb = cb->next) {
                assert(!ca->next || ca->next->prev == ca);
                same_tree(ca, cb);
        }
        assert(!ca && !cb);
}

/* cJSON's answer under json_parse's framing: trailing whitespace or NULs only. */
static cJSON *cjson_parse(const char *text, size_t len)
{
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
        if (!j)
                return NULL;
        for (; end && end < text + len; end++)
                if (!strchr(" \t\r\n", *end) && *end != '\0') {
                        cJSON_Delete(j);
                        return NULL;
                }
        return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *) data;
        cJSON *ours = NULL, *theirs = cjson_parse(text, size);
        int r = json_parse(text, size, &ours);

        assert(r == 0 || r == -EBADMSG || r == -E2BIG);
        if (r == 0) {
                assert(theirs);
                same_tree(ours, theirs);
                cJSON_Delete(ours);
        } else
                assert(!ours);
        if (theirs) {
                char *printed = cJSON_PrintUnformatted(theirs);
                if (printed) {
                        cJSON *back = NULL, *again = cJSON_Parse(printed);
                        r = json_parse(printed, strlen(printed), &back);
                        if (depth_of(theirs) > JSON_MAX_DEPTH)
                                assert(r == -E2BIG);
                        else {
                                assert(r == 0 && again);
                                same_tree(back, again);
                        }
                        cJSON_Delete(back);
                        cJSON_Delete(again);
                        free(printed);
                }
                cJSON_Delete(theirs);
        }
        return 0;
}
