#include "payload.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/macro.h"
#include "base/yaml.h"

typedef struct PayloadRef {
        char *from;        /* the literal pull spec in the manifests */
        const char *image; /* borrowed from the caller's PayloadImage */
} PayloadRef;

struct PayloadRefs {
        PayloadRef *refs;
        size_t n;
};

PayloadRefs *payload_refs_free(PayloadRefs *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++)
                free(p->refs[i].from);
        free(p->refs);
        free(p);
        return NULL;
}

int payload_refs_parse(const char *text, const PayloadImage *images, size_t n_images, PayloadRefs **ret,
                       char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *root = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(payload_refs_freep) PayloadRefs *p = NULL;
        int r;

        assert_return(text && ret, -EINVAL);
        r = yaml_parse(text, strlen(text), &root, &err);
        if (r < 0)
                return set_error(ret_error, r, "image-references: %s", strempty(err));
        const cJSON *tags = json_get_array(root, "spec.tags"), *t;
        if (!streq_ptr(json_get_string(root, "kind"), "ImageStream") || !tags)
                return set_error(ret_error, -EINVAL, "image-references: not an ImageStream with spec.tags");
        p = calloc(1, sizeof *p);
        if (!p || !(p->refs = calloc((size_t) cJSON_GetArraySize(tags) + 1, sizeof *p->refs)))
                return -ENOMEM;
        cJSON_ArrayForEach(t, tags)
        {
                const char *tag = json_get_string(t, "name"), *from = json_get_string(t, "from.name");
                if (!tag || !from || !*from || !streq_ptr(json_get_string(t, "from.kind"), "DockerImage"))
                        return set_error(ret_error, -EINVAL,
                                         "image-references: spec.tags[%zu] needs a name and a from of kind "
                                         "DockerImage with a name",
                                         p->n);
                const char *image = NULL;
                for (size_t i = 0; i < n_images && !image; i++)
                        if (streq_ptr(images[i].tag, tag))
                                image = images[i].image;
                if (!image)
                        return set_error(ret_error, -ENOENT,
                                         "image-references: no image given for tag \"%s\" (%s)", tag, from);
                if (!(p->refs[p->n].from = strdup(from)))
                        return -ENOMEM;
                p->refs[p->n++].image = image;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

/* Whether C can be part of an image reference (registry, path, tag or digest). */
static bool ref_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == '/' || c == ':' || c == '@';
}

int payload_substitute(const PayloadRefs *p, const char *text, char **ret, size_t *ret_count)
{
        _cleanup_(buf_free) Buf out = {};
        const char *copied = text; /* text before here is in out */
        size_t count = 0;

        assert_return(p && text && ret, -EINVAL);
        for (const char *s = text; *s;) {
                const PayloadRef *hit = NULL;
                if (s == text || !ref_char(s[-1]))
                        for (size_t i = 0; i < p->n && !hit; i++) {
                                size_t l = strlen(p->refs[i].from);
                                if (strncmp(s, p->refs[i].from, l) == 0 && !ref_char(s[l]))
                                        hit = &p->refs[i];
                        }
                if (!hit) {
                        s++;
                        continue;
                }
                if (buf_append(&out, copied, (size_t) (s - copied)) < 0 ||
                    buf_append(&out, hit->image, strlen(hit->image)) < 0)
                        return -ENOMEM;
                s += strlen(hit->from);
                copied = s;
                count++;
        }
        if (buf_append(&out, copied, strlen(copied)) < 0)
                return -ENOMEM;
        *ret = out.data ? buf_steal(&out) : strdup("");
        if (!*ret)
                return -ENOMEM;
        if (ret_count)
                *ret_count = count;
        return 0;
}
