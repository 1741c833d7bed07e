/* Who may read the operator's /metrics, asked of kube-apiserver as library-go's delegated
 * authentication and authorization do.
 *
 * Authentication, in kube-apiserver's order: a client certificate that chains to
 * kube-apiserver's client CA (the server verifies it, see HttpPeer) names the user (CN) and
 * groups (O); otherwise the bearer token goes to a TokenReview. OpenShift's Prometheus scrapes
 * with a client certificate (its scrape class tls-client-certificate-auth); other scrapers
 * with a ServiceAccount's token.
 *
 * Authorization: the user Prometheus scrapes as (DELEGATED_AUTH_PROMETHEUS_USER) may get
 * /metrics without asking, as library-go's hard-coded metrics authorizer allows it, so that
 * scraping works while kube-apiserver cannot be reached. Anyone else goes to a
 * SubjectAccessReview for `get` on the non-resource path (/metrics).
 *
 * Answers are cached for 10 s by the credential's SHA-256 (never the token itself), allowed
 * and refused alike, as library-go caches them; a review that failed (kube-apiserver away) is
 * remembered for 1 s only and answered 503. One review at a time per credential; at most
 * DELEGATED_AUTH_MAX credentials are known at once (the oldest answer makes room), so a flood
 * of made-up tokens costs kube-apiserver at most that many reviews in flight. */
#pragma once

#include "kube/client.h"
#include "runtime/httpserver.h"

#define DELEGATED_AUTH_MAX             64
#define DELEGATED_AUTH_PROMETHEUS_USER "system:serviceaccount:openshift-monitoring:prometheus-k8s"

typedef struct DelegatedAuth DelegatedAuth;

/* `settled` runs on the loop whenever a review finished (give it http_server_auth_settled). */
DelegatedAuth *delegated_auth_new(KubeClient *client, const char *path, void (*settled)(void *userdata),
                                  void *userdata);
/* Cancels the reviews in flight (their `settled` does not run). Free it before the client. */
DelegatedAuth *delegated_auth_free(DelegatedAuth *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(DelegatedAuth *, delegated_auth_free);

/* An HttpAuthFunc: `userdata` is the DelegatedAuth. */
HttpAuthVerdict delegated_auth_check(void *userdata, const HttpPeer *peer, const char *authorization,
                                     const char **ret_reason);

typedef struct DelegatedAuthStats {
        uint64_t token_reviews, access_reviews; /* sent */
        uint64_t cache_hits;
        uint64_t local_allows; /* Prometheus's certificate, allowed without a review */
} DelegatedAuthStats;
void delegated_auth_get_stats(DelegatedAuth *a, DelegatedAuthStats *ret);
