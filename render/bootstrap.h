/* `render`: from the installer's inputs to the bootstrap host's assets (the
 * one-member etcd static pod, its certificates, and the cluster manifests
 * the installer hands to the new cluster), exactly the output tree of
 * upstream's `cluster-etcd-operator render` (test/unit/test-render.c pins
 * it against a golden file). The tree is built in a sibling temporary
 * directory and swapped into place only when complete: on any
 * error the output directory is untouched. Re-running over an existing
 * output reuses its signers instead of replacing them. The tree is 0700 and
 * every file holding a private key (PEM or Secret manifest) is 0600. */
#pragma once

#include "etcdversion.h"
#include "inputs.h"
#include "pki/pki.h"

typedef struct RenderOptions {
        const char *output_dir;
        const char *etcd_image;
        const char *operator_image; /* for the operator's Deployment manifest */
        const char *hostname;       /* the bootstrap host's name (DNS-1123 subdomain) */
        IpAddr bootstrap_ip;
        bool listen_on_node_ip; /* listeners and local connections on the node IP (test harness) */
        bool slower_hardware;   /* controlPlaneHardwareSpeed: Slower (500/2500 ms) */
        /* The assisted installer's marker file exists: the openshift-etcd namespace gets the
         * delayed-bootstrap annotation (bootstrap may finish on two masters). */
        bool delayed_ha;
        PkiKeyType key_type;
        EtcdMinor etcd_minor; /* what etcd_image carries (--etcd-image-version); 0: ETCD_MINOR_DEFAULT */
        const char *machine;  /* the architecture (uname's machine) for ETCD_UNSUPPORTED_ARCH; NULL: this
                                 host's */
        usec_t now;           /* CLOCK_REALTIME */
        const RenderInputs *inputs;
} RenderOptions;

/* -EINVAL (bad input, message in *ret_error) maps to exit 2; other errors to 1. */
int render_bootstrap(const RenderOptions *o, char **ret_error);
