/* The names this product shares with the rest of the cluster: namespaces,
 * ConfigMaps and Secrets others read or write, annotations, and the names
 * installers and runbooks use. Each is OpenShift's contract: upstream's
 * cluster-etcd-operator, kube-apiserver's operator, the installer and the
 * published runbooks use the same names. A name written here is written
 * nowhere else in the product's C, so changing one is changing it everywhere. Names only one controller uses
 * and nothing outside reads stay in that controller. */
#pragma once

/* ---- namespaces ---- */
#define NS_ETCD           "openshift-etcd"
#define NS_OPERATOR       "openshift-etcd-operator"
#define NS_CONFIG         "openshift-config"
#define NS_CONFIG_MANAGED "openshift-config-managed"
#define NS_KUBE_SYSTEM    "kube-system"
#define NS_KAS            "openshift-kube-apiserver"
#define NS_MACHINE_API    "openshift-machine-api"

/* ---- ConfigMaps in openshift-etcd ---- */
/* The members' IPs by member ID; kube-apiserver's operator reads it. */
#define CM_ETCD_ENDPOINTS "etcd-endpoints"
/* The etcd static pod of the next revision (etcd-pod-<N> once copied). */
#define CM_ETCD_POD "etcd-pod"
/* The etcd signer's bundle (copied to openshift-config, read by kube-apiserver). */
#define CM_ETCD_CA_BUNDLE         "etcd-ca-bundle"
#define CM_ETCD_METRICS_CA_BUNDLE "etcd-metrics-ca-bundle"
/* Every bundle a node's etcd needs, in one object the installer copies. */
#define CM_ETCD_ALL_BUNDLES "etcd-all-bundles"

/* ---- Secrets in openshift-etcd ---- */
#define SECRET_ETCD_SIGNER        "etcd-signer"
#define SECRET_ETCD_METRIC_SIGNER "etcd-metric-signer"
/* kube-apiserver's (and this operator's) client certificate for etcd. */
#define SECRET_ETCD_CLIENT        "etcd-client"
#define SECRET_ETCD_METRIC_CLIENT "etcd-metric-client"
/* Every node's certificates, in one object the installer copies. */
#define SECRET_ETCD_ALL_CERTS "etcd-all-certs"

/* ---- the bootstrap member ---- */
#define BOOTSTRAP_MEMBER_NAME "etcd-bootstrap"
/* On openshift-etcd/etcd-endpoints (and mirrored on host-etcd-2): the bootstrap host's IP,
 * written by render, removed once the bootstrap member is gone. */
#define BOOTSTRAP_IP_ANNOTATION "alpha.installer.openshift.io/etcd-bootstrap"
/* On the openshift-etcd namespace: the assisted installer's delayed-HA bootstrap (either name). */
#define DELAYED_BOOTSTRAP_ANNOTATION    "openshift.io/delayed-bootstrap"
#define DELAYED_HA_BOOTSTRAP_ANNOTATION "openshift.io/delayed-ha-bootstrap"

/* ---- the operator ---- */
/* Source of the operator's Events, as upstream's. */
#define EVENT_COMPONENT "openshift-cluster-etcd-operator"

/* ---- library-go's certificate metadata on the Secret that holds a certificate ----
 * (what cert-expiry tooling and OpenShift's TLS registry read). */
#define CERT_ANN_NOT_AFTER   "auth.openshift.io/certificate-not-after"
#define CERT_ANN_NOT_BEFORE  "auth.openshift.io/certificate-not-before"
#define CERT_ANN_ISSUER      "auth.openshift.io/certificate-issuer"
#define CERT_ANN_HOSTNAMES   "auth.openshift.io/certificate-hostnames"
#define CERT_ANN_COMPONENT   "openshift.io/owning-component"
#define CERT_ANN_DESCRIPTION "openshift.io/description"
/* How long after notBefore the certificate is replaced, as a Go duration (library-go's). */
#define CERT_ANN_REFRESH_PERIOD "certificates.openshift.io/refresh-period"
#define CERT_OWNING_COMPONENT   "etcd"
/* The CA bundles' label, as library-go's certrotation sets it, and the owner upstream's
 * EtcdCertSignerController writes on the aggregates (etcd-all-certs, etcd-all-bundles). */
#define CERT_LABEL_MANAGED_TYPE         "auth.openshift.io/managed-certificate-type"
#define CERT_MANAGED_TYPE_CA_BUNDLE     "ca-bundle"
#define CERT_AGGREGATE_OWNING_COMPONENT "Etcd"

/* ---- backups to an S3-compatible store ----
 * The annotations that send a Backup's (or an EtcdBackup's) backups to an S3-compatible
 * store (the OpenShift CRDs have no field for it): read by the backup controllers
 * (controllers/facts.h backup_store_of), passed on from a Backup to its EtcdBackups by
 * request-backup. These are this product's, not upstream's. */
#define ANN_S3_SECRET "etcd.operator.openshift.io/s3-secret" /* Secret in openshift-etcd */
#define ANN_S3_BUCKET "etcd.operator.openshift.io/s3-bucket"
#define ANN_S3_PREFIX "etcd.operator.openshift.io/s3-prefix"
#define ANN_S3_GC     "etcd.operator.openshift.io/s3-gc-policy"   /* LimitBased (default), Exponential */
#define ANN_S3_MAX    "etcd.operator.openshift.io/s3-max-backups" /* LimitBased: how many to keep */
#define ANN_S3_GRACE  "etcd.operator.openshift.io/s3-deletion-grace-period" /* default 72h */
/* Held on a Backup with a store until the grace period after its deletion has passed and its
 * objects are gone. */
#define FINALIZER_S3_BACKUPS "etcd.operator.openshift.io/s3-backups"
