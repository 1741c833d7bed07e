/* A small Prometheus registry rendered in text exposition format 0.0.4.
 * Counters and gauges live here; values computed on demand (informer stats)
 * come from collectors that refresh their own metrics at scrape time, so all
 * output goes through one renderer: sorted, escaped and stable. Label names
 * and values are NULL-terminated varargs, which is why out-parameters come
 * second, as in sd_event_add_*(). Single-threaded, like everything on the loop. */
#pragma once

#include "base/buf.h"

typedef struct MetricsRegistry MetricsRegistry;
typedef struct Metric Metric;

typedef enum MetricType {
        METRIC_COUNTER,
        METRIC_GAUGE,
        _METRIC_TYPE_MAX,
        _METRIC_TYPE_INVALID = -EINVAL,
} MetricType;

#define METRICS_LABELS_MAX  16U
#define METRICS_SAMPLES_MAX 10000U /* label sets per metric; more is -E2BIG */

/* Runs at the start of every render: typically metrics_reset() then
 * metrics_set() on metrics it registered. A negative return fails the render. */
typedef int (*MetricsCollectFunc)(MetricsRegistry *reg, void *userdata);

MetricsRegistry *metrics_registry_new(void);
MetricsRegistry *metrics_registry_free(MetricsRegistry *reg);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricsRegistry *, metrics_registry_free);

/* Label names follow `help`, NULL-terminated. *ret is borrowed, valid while
 * the registry lives. Registering an identical definition again returns the
 * existing metric; a different one under the same name is -EEXIST. Invalid
 * metric or label names are -EINVAL. A metric without labels starts at 0. */
int metrics_counter(MetricsRegistry *reg, Metric **ret, const char *name, const char *help, ...)
        __attribute__((sentinel));
int metrics_gauge(MetricsRegistry *reg, Metric **ret, const char *name, const char *help, ...)
        __attribute__((sentinel));

/* Label values follow, one per label name, NULL-terminated (-EINVAL when the
 * count differs). Counters refuse negative values and deltas (-EINVAL);
 * metrics_set() on a counter is for collectors mirroring a count kept elsewhere. */
int metrics_set(Metric *m, double value, ...) __attribute__((sentinel));
int metrics_add(Metric *m, double delta, ...) __attribute__((sentinel));
/* Drops every label set (a metric without labels goes back to 0). */
void metrics_reset(Metric *m);

int metrics_register_collector(MetricsRegistry *reg, MetricsCollectFunc fn, void *userdata);

/* Appends the exposition text to `out`; on failure `out` holds a partial text. */
int metrics_render(MetricsRegistry *reg, Buf *out);

bool metrics_name_is_valid(const char *name);
