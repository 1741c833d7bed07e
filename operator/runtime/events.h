/* Kubernetes Events (core v1) with de-duplication: the same type, reason and
 * message within ten minutes bumps `count` and `lastTimestamp` on the event
 * already written instead of creating another, as client-go's correlator
 * does. Recording never blocks and never fails the caller: an event that
 * cannot be written is logged at debug and dropped. */
#pragma once

#include "kube/client.h"

typedef struct EventRecorder EventRecorder;

typedef struct EventSource {
        const char *component; /* "openshift-cluster-etcd-operator" */
        const char *host;      /* may be NULL */
        /* The involved object (events go to its namespace): */
        const char *api_version;
        const char *kind;
        const char *namespace;
        const char *name;
        const char *uid; /* may be NULL */
} EventSource;

EventRecorder *event_recorder_new(KubeClient *c, const EventSource *src);
EventRecorder *event_recorder_free(EventRecorder *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventRecorder *, event_recorder_free);

void event_record(EventRecorder *r, bool warning, const char *reason, const char *fmt, ...) _printf_(4, 5);
/* Events written (created or bumped) and dropped, for tests and metrics. */
void event_recorder_get_counts(EventRecorder *r, uint64_t *written, uint64_t *dropped);
