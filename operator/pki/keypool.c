/* The key pool: a fixed array of ready keys in front of the offload helper
 * (offload.h). A failed generation is logged and not retried at once; the
 * next take tries again, so a persistent OpenSSL failure costs one attempt
 * per take instead of a busy loop. */
#include "keypool.h"

#include "base/log.h"
#include "offload.h"

#define KEY_POOL_MAX 64U

struct KeyPool {
        Offload *offload;
        PkiKeyType type;
        unsigned size, n, generating;
        EVP_PKEY *keys[KEY_POOL_MAX];
        bool starved; /* a take found it empty: call `ready` when a key comes */
        KeyPoolReadyFunc ready;
        void *userdata;
};

static void on_key(Offload *o, int error, EVP_PKEY *key, void *userdata);

static void refill(KeyPool *p)
{
        while (p->n + p->generating < p->size) {
                int r = pki_offload_keygen(p->offload, p->type, on_key, p);
                if (r < 0) {
                        log_warning_errno(r, "key pool: cannot queue a %s key",
                                          pki_key_type_to_string(p->type));
                        return;
                }
                p->generating++;
        }
}

static void on_key(Offload *o, int error, EVP_PKEY *key, void *userdata)
{
        KeyPool *p = userdata;

        (void) o;
        if (error == -ECANCELED)
                return; /* key_pool_free() is running */
        p->generating--;
        if (error < 0) {
                log_warning_errno(error, "key pool: generating a %s key failed",
                                  pki_key_type_to_string(p->type));
                return;
        }
        if (p->n >= p->size) {
                EVP_PKEY_free(key);
                return;
        }
        p->keys[p->n++] = key;
        if (p->starved && p->ready) {
                p->starved = false;
                p->ready(p, p->userdata);
        }
}

int key_pool_new(sd_event *e, PkiKeyType type, unsigned size, KeyPool **ret)
{
        _cleanup_(key_pool_freep) KeyPool *p = NULL;
        int r;

        assert_return(e && ret, -EINVAL);
        assert_return(size >= 1 && size <= KEY_POOL_MAX, -EINVAL);
        assert_return(pki_key_type_to_string(type), -EINVAL);
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->type = type;
        p->size = size;
        r = pki_offload_new(e, size, &p->offload);
        if (r < 0)
                return r;
        refill(p);
        *ret = TAKE_PTR(p);
        return 0;
}

KeyPool *key_pool_free(KeyPool *p)
{
        if (!p)
                return NULL;
        /* Undelivered jobs get -ECANCELED callbacks, which touch nothing. */
        pki_offload_free(p->offload);
        for (unsigned i = 0; i < p->n; i++)
                EVP_PKEY_free(p->keys[i]);
        free(p);
        return NULL;
}

void key_pool_set_ready_callback(KeyPool *p, KeyPoolReadyFunc cb, void *userdata)
{
        if (!p)
                return;
        p->ready = cb;
        p->userdata = userdata;
}

int key_pool_take(KeyPool *p, PkiKeyType type, EVP_PKEY **ret)
{
        assert_return(p && ret, -EINVAL);
        if (type != p->type)
                return -EMEDIUMTYPE;
        if (p->n == 0) {
                p->starved = true;
                refill(p);
                return -EAGAIN;
        }
        /* Oldest first: every key waits about as long as every other. */
        *ret = p->keys[0];
        memmove(p->keys, p->keys + 1, --p->n * sizeof p->keys[0]);
        refill(p);
        return 0;
}

unsigned key_pool_available(const KeyPool *p)
{
        return p ? p->n : 0;
}

unsigned key_pool_generating(const KeyPool *p)
{
        return p ? p->generating : 0;
}

PkiKeyType key_pool_type(const KeyPool *p)
{
        return p ? p->type : PKI_KEY_RSA_2048;
}
