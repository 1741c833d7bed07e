/* Every controller the operator runs, one per file in controllers/. */
#pragma once

#include "runtime/controller.h"

extern const ControllerSpec controller_etcd_members;
extern const ControllerSpec controller_cluster_member;
extern const ControllerSpec controller_bootstrap_teardown;
extern const ControllerSpec controller_host_endpoints;
extern const ControllerSpec controller_etcd_endpoints;
extern const ControllerSpec controller_status;
extern const ControllerSpec controller_cert_signer;
extern const ControllerSpec controller_resource_sync;
extern const ControllerSpec controller_static_resources;
extern const ControllerSpec controller_target_config;
extern const ControllerSpec controller_revision;
extern const ControllerSpec controller_installer;
extern const ControllerSpec controller_node_status;
extern const ControllerSpec controller_prune;
extern const ControllerSpec controller_cert_cleaner;
extern const ControllerSpec controller_defrag;
extern const ControllerSpec controller_guard;
extern const ControllerSpec controller_backup;
extern const ControllerSpec controller_periodic_backup;
extern const ControllerSpec controller_backup_removal;
extern const ControllerSpec controller_machine_hooks;
extern const ControllerSpec controller_member_removal;
extern const ControllerSpec controller_config_overrides;
extern const ControllerSpec controller_topology;
extern const ControllerSpec controller_member_view;
extern const ControllerSpec controller_etcd_downgrade;

/* controllers/backup.c: when the newest EtcdBackup (one now, or one a Backup's
 * schedule made) completed, for openshift_etcd_operator_last_backup_timestamp_seconds;
 * -ENOENT when none has (or the CRD is not served). */
int backup_last_completed(InformerFactory *f, usec_t *ret);
/* The same of these EtcdBackups: when the newest completed (CLOCK_REALTIME), 0 when none has. */
usec_t backups_newest_completed(const KubeObject *const *backups, size_t n);

/* controllers/cert-signer.c: days until a signer in openshift-etcd expires,
 * for openshift_etcd_operator_signer_expiration_days{name}; `name` is one
 * of cert_signer_names (NULL-terminated). -ENOENT when it is not cached.
 * The metric's label is upstream's: cert_signer_metric_labels[i] for
 * cert_signer_names[i] (signer-ca for etcd-signer, metrics-signer-ca for
 * etcd-metric-signer). */
extern const char *const cert_signer_names[];
extern const char *const cert_signer_metric_labels[];
int cert_signer_expiration_days(InformerFactory *f, const char *name, usec_t now, double *ret);
