/* Per-member etcd figures on the operator's /metrics, from the etcd view's
 * latest snapshot and the maintenance log, refreshed at scrape time. etcd's
 * own metric names, prefixed with openshift_etcd_operator_ and labelled by
 * member, where etcd has one (each member exports its own to whoever scrapes
 * it; these are the operator's view of all of them in one place). */
#pragma once

#include "etcd/maintlog.h"
#include "etcd/view.h"
#include "metrics.h"

typedef struct EtcdMetrics EtcdMetrics;

/* Registers the metrics on `reg`; *ret is owned (etcd_metrics_free). */
int etcd_metrics_register(MetricsRegistry *reg, EtcdMetrics **ret);
EtcdMetrics *etcd_metrics_free(EtcdMetrics *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdMetrics *, etcd_metrics_free);

/* Replaces every sample with what `s` (NULL: no view yet) and `log` say. */
void etcd_metrics_update(EtcdMetrics *m, const EtcdViewSnapshot *s, const EtcdMaintLog *log);
