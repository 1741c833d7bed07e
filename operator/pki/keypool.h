/* A small pool of private keys generated ahead of need on the offload
 * thread, so that issuing a certificate on the loop thread costs a
 * signature (~1 ms) instead of an RSA key generation (50 ms to seconds on a
 * loaded machine). The pool refills itself after every take; when a key
 * arrives and someone found the pool empty, the `ready` callback runs (on
 * the loop thread) so that caller can try again. All calls are made on the
 * loop thread. */
#pragma once

#include <systemd/sd-event.h>

#include "pki.h"

typedef struct KeyPool KeyPool;
typedef void (*KeyPoolReadyFunc)(KeyPool *p, void *userdata);

/* Starts generating `size` keys of `type` at once (size 1..64). */
int key_pool_new(sd_event *e, PkiKeyType type, unsigned size, KeyPool **ret);
KeyPool *key_pool_free(KeyPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(KeyPool *, key_pool_free);

void key_pool_set_ready_callback(KeyPool *p, KeyPoolReadyFunc cb, void *userdata);

/* Hands out a key (the caller owns it) and starts replacing it.
 * -EAGAIN: none left yet, the ready callback follows when one is;
 * -EMEDIUMTYPE: the pool holds keys of another type. */
int key_pool_take(KeyPool *p, PkiKeyType type, EVP_PKEY **ret);
/* Keys on hand, and keys being generated. */
unsigned key_pool_available(const KeyPool *p);
unsigned key_pool_generating(const KeyPool *p);
PkiKeyType key_pool_type(const KeyPool *p);
