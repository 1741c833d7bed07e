/* The annotations that send a Backup's (or an EtcdBackup's) backups to an
 * S3-compatible store (the OpenShift CRDs have no field for it): read by
 * the backup controllers (controllers/facts.h backup_store_of), passed on
 * from a Backup to its EtcdBackups by request-backup. */
#pragma once

#define ANN_S3_SECRET "etcd.operator.openshift.io/s3-secret" /* Secret in openshift-etcd */
#define ANN_S3_BUCKET "etcd.operator.openshift.io/s3-bucket"
#define ANN_S3_PREFIX "etcd.operator.openshift.io/s3-prefix"
#define ANN_S3_GC     "etcd.operator.openshift.io/s3-gc-policy"   /* LimitBased (default), Exponential */
#define ANN_S3_MAX    "etcd.operator.openshift.io/s3-max-backups" /* LimitBased: how many to keep */
#define ANN_S3_GRACE  "etcd.operator.openshift.io/s3-deletion-grace-period" /* default 72h */
/* Held on a Backup with a store until the grace period after its deletion has passed and its
 * objects are gone. */
#define FINALIZER_S3_BACKUPS "etcd.operator.openshift.io/s3-backups"
