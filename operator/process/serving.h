/* The operator's own endpoint (/healthz, /readyz, /metrics) as OpenShift serves an operator's:
 * HTTPS with the serving certificate that service-ca issues for Service `metrics`
 * (annotation service.beta.openshift.io/serving-cert-secret-name, mounted at
 * /var/run/secrets/serving-cert), /metrics only to a client certificate or bearer token
 * kube-apiserver's authentication vouches for and its authorization allows (delegated-auth.h),
 * the probes to anyone. Client certificates are verified with the client CA kube-apiserver
 * publishes in configmap kube-system/extension-apiserver-authentication, read at start and
 * every 30 s: a changed one restarts the listener, as a renewed serving certificate does. service-ca renews
 * the certificate in place: the files are read again every 30 s, and a changed pair is served from then on
 * (the listener restarts; a pair that does not load leaves the old one serving, loudly). Without certificate
 * files, as library-go's controllercmd: a self-signed certificate made at start (the kubelet's HTTPS probes
 * do not verify), and /metrics still behind the tokens. */
#pragma once

#include "kube/client.h"
#include "runtime/delegated-auth.h"
#include "runtime/httpserver.h"

#define SERVING_CERT_DEFAULT "/var/run/secrets/serving-cert/tls.crt"
#define SERVING_KEY_DEFAULT  "/var/run/secrets/serving-cert/tls.key"

typedef struct ServingConfig {
        const char *address;
        uint16_t port;
        const char *cert_file, *key_file; /* both, or neither for a self-signed certificate */
        MetricsRegistry *metrics;
        HttpReadyFunc ready, live;
        void *userdata;       /* of ready and live */
        usec_t reload_period; /* how often the files are read again; 0 = 30 s */
} ServingConfig;

typedef struct Serving Serving;

/* Listens at once. -ENOENT/-EINVAL naming nothing: the caller says which flag. */
int serving_new(sd_event *e, KubeClient *client, const ServingConfig *cfg, Serving **ret);
Serving *serving_free(Serving *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Serving *, serving_free);
uint16_t serving_get_port(Serving *s);
/* No certificate files: serving one of its own, made at start. */
bool serving_is_self_signed(Serving *s);
/* Client certificates are verified: kube-apiserver's client CA has been read and loaded. */
bool serving_has_client_ca(Serving *s);
/* Zeros without TLS. */
void serving_get_auth_stats(Serving *s, DelegatedAuthStats *ret);
