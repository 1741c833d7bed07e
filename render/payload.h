/* The release payload's image substitution, as the release build (`oc adm release new`) makes
 * it: manifests/operator/image-references names, for each image tag of the release, the
 * literal pull spec the payload's manifests carry; every whole occurrence of that pull spec is
 * replaced by the image the release (here: render's --etcd-image and --operator-image) gives
 * the tag. A pull spec is whole when the characters around it cannot continue an image
 * reference, so quay.io/x/etcd never rewrites inside quay.io/x/etcd-proxy. */
#pragma once

#include <stddef.h>

typedef struct PayloadImage {
        const char *tag;   /* image-references' spec.tags[].name: "etcd", "cluster-etcd-operator" */
        const char *image; /* the release's pull spec for it */
} PayloadImage;

/* Reads the image-references text and the release's images into a substitution table. Every
 * tag the references name must be given an image (-ENOENT and a message naming it otherwise):
 * a payload image left at its literal pull spec would run an unreleased image. */
typedef struct PayloadRefs PayloadRefs;
int payload_refs_parse(const char *image_references, const PayloadImage *images, size_t n_images,
                       PayloadRefs **ret, char **ret_error);
PayloadRefs *payload_refs_free(PayloadRefs *refs);
static inline void payload_refs_freep(PayloadRefs **p)
{
        payload_refs_free(*p);
}

/* TEXT with every literal pull spec replaced; *ret_count (may be NULL) says how many. */
int payload_substitute(const PayloadRefs *refs, const char *text, char **ret, size_t *ret_count);
