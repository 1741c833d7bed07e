/* The verdict memo: PKI_CHECK_MEMO_SIZE entries searched linearly (a sync
 * asks about a dozen certificates), the oldest replaced first. */
#include <openssl/evp.h>

#include "check-memo.h"

typedef struct Entry {
        bool used;
        unsigned char digest[32];
        usec_t at;
        int status;
        char *reason;
} Entry;

struct PkiCheckMemo {
        usec_t ttl;
        uint64_t hits, misses;
        Entry entries[PKI_CHECK_MEMO_SIZE];
};

PkiCheckMemo *pki_check_memo_new(usec_t ttl)
{
        PkiCheckMemo *m = calloc(1, sizeof *m);
        if (m)
                m->ttl = ttl;
        return m;
}

PkiCheckMemo *pki_check_memo_free(PkiCheckMemo *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < PKI_CHECK_MEMO_SIZE; i++)
                free(m->entries[i].reason);
        free(m);
        return NULL;
}

/* Length-prefixed, so ("ab","c") and ("a","bc") differ; NULL differs from "". */
static bool feed(EVP_MD_CTX *c, const char *s)
{
        uint64_t n = s ? strlen(s) + 1 : 0;
        return EVP_DigestUpdate(c, &n, sizeof n) == 1 && (!s || EVP_DigestUpdate(c, s, n) == 1);
}

static bool feed_list(EVP_MD_CTX *c, const char *const *l)
{
        uint64_t n = 0;
        for (size_t i = 0; l && l[i]; i++)
                n++;
        if (EVP_DigestUpdate(c, &n, sizeof n) != 1 || !feed(c, l ? "list" : NULL))
                return false;
        for (size_t i = 0; l && l[i]; i++)
                if (!feed(c, l[i]))
                        return false;
        return true;
}

static int digest(const char *cert_pem, const char *key_pem, const PkiCheck *check, unsigned char out[32])
{
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        unsigned len = 0;
        bool ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 && feed(c, cert_pem) &&
                  feed(c, key_pem) && feed(c, check->ca_pem) && feed_list(c, check->dns) &&
                  feed_list(c, check->ips) &&
                  EVP_DigestUpdate(c, &check->refresh, sizeof check->refresh) == 1 &&
                  EVP_DigestFinal_ex(c, out, &len) == 1 && len == 32;
        EVP_MD_CTX_free(c);
        return ok ? 0 : -ENOMEM;
}

int pki_cert_check_memo(PkiCheckMemo *m, const char *cert_pem, const char *key_pem, const PkiCheck *check,
                        usec_t now, char **ret_reason)
{
        unsigned char d[32];
        Entry *slot = NULL;
        int r;

        assert_return(cert_pem && check && ret_reason, -EINVAL);
        if (!m || digest(cert_pem, key_pem, check, d) < 0)
                return pki_cert_check(cert_pem, key_pem, check, now, ret_reason);
        for (size_t i = 0; i < PKI_CHECK_MEMO_SIZE; i++) {
                Entry *e = &m->entries[i];
                if (e->used && memcmp(e->digest, d, sizeof d) == 0) {
                        if (now >= e->at && now - e->at < m->ttl) {
                                char *reason = e->reason ? strdup(e->reason) : NULL;
                                if (e->reason && !reason)
                                        return -ENOMEM;
                                m->hits++;
                                *ret_reason = reason;
                                return e->status;
                        }
                        slot = e; /* stale: recompute into the same entry */
                        break;
                }
                if (!slot || !e->used || (slot->used && e->at < slot->at))
                        slot = e;
        }
        m->misses++;
        _cleanup_free_ char *reason = NULL;
        r = pki_cert_check(cert_pem, key_pem, check, now, &reason);
        if (r < 0)
                return r;
        char *copy = reason ? strdup(reason) : NULL;
        if (reason && !copy)
                return -ENOMEM;
        free(slot->reason);
        *slot = (Entry){.used = true, .at = now, .status = r, .reason = copy};
        memcpy(slot->digest, d, sizeof d);
        *ret_reason = TAKE_PTR(reason);
        return r;
}

void pki_check_memo_stats(const PkiCheckMemo *m, uint64_t *ret_hits, uint64_t *ret_misses)
{
        *ret_hits = m ? m->hits : 0;
        *ret_misses = m ? m->misses : 0;
}
