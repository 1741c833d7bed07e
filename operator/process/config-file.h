/* The operator's file configuration (--config), as library-go's operators take it: a
 * GenericOperatorConfig (apiVersion operator.openshift.io/v1alpha1) that the payload's
 * ConfigMap etcd-operator-config mounts at /var/run/configmaps/config/config.yaml. What the
 * operator reads of it:
 *
 *   servingInfo.bindAddress              --listen
 *   servingInfo.certFile, .keyFile       --tls-cert-file, --tls-private-key-file (both or none)
 *   leaderElection.disable               --leader-elect=false
 *   leaderElection.leaseDuration,
 *     .renewDeadline, .retryPeriod       --leader-elect-lease-duration, ... ("137s", "2m")
 *
 * Other fields of the type are accepted and ignored, as upstream ignores those it does not
 * use. A flag on the command line wins over the file. */
#pragma once

#include <stdbool.h>

#include "base/timeutil.h"

typedef struct OperatorFileConfig {
        char *bind_address;
        char *cert_file, *key_file;
        bool has_leader_elect, leader_elect;
        usec_t lease_duration, renew_deadline, retry_period; /* 0: not set */
} OperatorFileConfig;

/* Reads and checks PATH. On failure returns a negative errno and, in *ret_error, a message
 * naming the file, the field and what it must be (the caller exits with a usage error). */
int operator_file_config_load(const char *path, OperatorFileConfig *ret, char **ret_error);
void operator_file_config_done(OperatorFileConfig *c);
