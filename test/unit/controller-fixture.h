/* Table tests for controllers: fixture caches in, planned intents out.
 * Objects go straight into the informers' caches (no server), the etcd view
 * is a hand-built snapshot, and sync is called directly. */
#pragma once

#include "controllers/common.h"

typedef struct Fixture {
        Loop *loop;
        KubeClient *client;
        InformerFactory *factory;
        OperatorState state;
        EtcdViewSnapshot *snap;
        Plan plan;
        usec_t now; /* CLOCK_REALTIME handed to sync */
        uint64_t rv;
} Fixture;

Fixture *fixture_new(void);
void fixture_free(Fixture *f);
/* Adds (or replaces) an object; metadata.resourceVersion is filled in when absent. */
void fixture_add(Fixture *f, OperatorWatch w, const char *json);
void fixture_delete(Fixture *f, OperatorWatch w, const char *ns, const char *name);
/* A master Node with an InternalIP and Ready status. */
void fixture_master(Fixture *f, const char *name, const char *ip, bool ready);
/* An etcd member in the snapshot (creates the snapshot on first use). */
void fixture_member(Fixture *f, uint64_t id, const char *name, const char *ip, bool learner, bool started,
                    bool healthy);
void fixture_no_etcd(Fixture *f); /* no snapshot at all */
void fixture_etcd_error(Fixture *f, int error);
/* Runs sync; returns its result. The plan stays in f->plan until the next sync. */
int fixture_sync(Fixture *f, const ControllerSpec *spec);

/* Lookups in f->plan. */
const Intent *fixture_find(Fixture *f, IntentType t, const char *plural, const char *name);
const Intent *fixture_condition(Fixture *f, const char *type);
size_t fixture_count(Fixture *f, IntentType t);
/* Fails the test unless the condition intent exists with that status and reason. */
void fixture_expect_condition(Fixture *f, const char *type, const char *status, const char *reason);
