/* The offload helper: one worker thread for pure CPU work (RSA key
 * generation takes ~50-200 ms) so the sd-event loop thread never blocks on
 * it. Jobs carry owned input and output; completions come back on the loop
 * through an eventfd. All calls are made on the loop thread.
 *
 * A call that returns 0 invokes its callback exactly once, on the loop
 * thread, never from inside the call; one that returns an error never
 * does. pki_offload_free() (allowed inside a callback) joins the worker,
 * and every job not yet delivered gets its callback with -ECANCELED. */
#pragma once

#include <systemd/sd-event.h>

#include "pki.h"

typedef struct Offload Offload;

/* On error == 0 the callee owns `key`; otherwise `key` is NULL. */
typedef void (*OffloadKeygenFunc)(Offload *o, int error, EVP_PKEY *key, void *userdata);

#define PKI_OFFLOAD_MAX_PENDING 64U

/* max_pending bounds accepted-but-undelivered jobs (0: PKI_OFFLOAD_MAX_PENDING). */
int pki_offload_new(sd_event *e, unsigned max_pending, Offload **ret);
Offload *pki_offload_free(Offload *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Offload *, pki_offload_free);

/* -EBUSY when max_pending jobs are in flight, -ECANCELED once freeing started. */
int pki_offload_keygen(Offload *o, PkiKeyType type, OffloadKeygenFunc cb, void *userdata);
/* Jobs accepted whose callback has not run yet. */
unsigned pki_offload_in_flight(const Offload *o);
