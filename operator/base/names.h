/* RFC 1123 names as Kubernetes checks them, each rule written once: the
 * labels and subdomains that object names, node names and namespaces are,
 * and that render, the controllers and the node tools check before a name
 * goes into a manifest, a path or an Endpoints hostname.
 * Other name rules are different rules, and live with their only user:
 * a name to resolve (dns_lookup_name_is_valid, dns/resolver.h: upper case,
 * '_' and a trailing dot allowed), a certificate's DNS SAN
 * (pki_san_dns_name_is_valid, pki/pki.h: printable text, wildcards
 * allowed), a name safe in an API path (kube_name_is_valid, kube/resource.h:
 * the subdomain's characters and ends only, and ':' for RBAC names) and an S3 bucket
 * (s3_bucket_name_is_valid, s3/s3.h). */
#pragma once

#include "macro.h"

/* An RFC 1123 label (Kubernetes' IsDNS1123Label): 1 to 63 characters of
 * [a-z0-9-], starting and ending alphanumeric. Namespaces, static pod names,
 * Endpoints hostnames. NULL: false. */
bool dns1123_label_is_valid(const char *s);
/* An RFC 1123 subdomain: at most 253 characters, dot-separated
 * dns1123_label_is_valid() labels (each at most 63, which Kubernetes'
 * IsDNS1123Subdomain does not ask: stricter, so a name accepted here is one
 * the API accepts). Object and node names. Never "." or "..", never '/': safe
 * as a path component. NULL: false. */
bool dns1123_subdomain_is_valid(const char *s);
