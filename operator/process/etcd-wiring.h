/* Keeps the operator's etcd client pointed at the right members with the
 * right credentials, from what the cluster says: endpoints from the
 * etcd-endpoints ConfigMap (member IPs, plus the bootstrap IP while its
 * annotation is there) and the master nodes' InternalIPs; TLS from files
 * mounted into the operator's pod (upstream's paths by default; read again
 * every 10 s, as the kubelet replaces them when the objects change) or, when
 * they are absent, from the etcd-client Secret and etcd-ca-bundle ConfigMap. */
#pragma once

#include "controllers/facts.h"

typedef struct EtcdWiring EtcdWiring;

typedef struct EtcdWiringFiles {
        const char *ca;   /* /var/run/configmaps/etcd-ca/ca-bundle.crt */
        const char *cert; /* /var/run/secrets/etcd-client/tls.crt */
        const char *key;  /* /var/run/secrets/etcd-client/tls.key */
} EtcdWiringFiles;

int etcd_wiring_new(EtcdClient *c, InformerFactory *f, const EtcdWiringFiles *files, EtcdWiring **ret);
EtcdWiring *etcd_wiring_free(EtcdWiring *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdWiring *, etcd_wiring_free);
/* With credentials from files: reads them again and gives the client what changed (the timer
 * does every 10 s). 1: changed; 0: unchanged; < 0: unreadable, or a certificate and key that do
 * not belong together (the client keeps what it had). */
int etcd_wiring_reload_files(EtcdWiring *w);
/* True once the client has TLS material and at least one endpoint. */
bool etcd_wiring_ready(EtcdWiring *w);
