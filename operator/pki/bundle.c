/* CA bundles: the union of several PEM bundles without duplicates (same
 * DER) or certificates expired at `now`, in a stable order (notBefore, then
 * DER bytes) so the same inputs always render the same configmap. */
#include <openssl/err.h>
#include <openssl/pem.h>

#include "pki-internal.h"

typedef struct Entry {
        X509 *cert;
        unsigned char *der;
        int der_len;
        int64_t not_before;
} Entry;

static void entries_free(Entry *e, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                X509_free(e[i].cert);
                OPENSSL_free(e[i].der);
        }
        free(e);
}

static int entry_cmp(const void *a, const void *b)
{
        const Entry *x = a, *y = b;

        if (x->not_before != y->not_before)
                return x->not_before < y->not_before ? -1 : 1;
        int c = memcmp(x->der, y->der, (size_t) MIN(x->der_len, y->der_len));
        if (c != 0)
                return c;
        return (x->der_len > y->der_len) - (x->der_len < y->der_len);
}

static bool blank(const char *s)
{
        for (; s && *s; s++)
                if (!strchr(" \t\r\n", *s))
                        return false;
        return true;
}

typedef struct Entries {
        Entry *v;
        size_t n;
} Entries;

static void entries_done(Entries *e)
{
        entries_free(e->v, e->n);
}

/* Moves the unexpired certificates of one bundle into `e`. */
static int collect(Entries *e, const char *pem, usec_t now)
{
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;
        int r;

        if (blank(pem))
                return 0;
        r = pki_certs_from_pem(pem, &sk);
        if (r < 0)
                return r == -ENODATA ? -EBADMSG : r;
        while (sk_X509_num(sk) > 0) {
                _cleanup_(X509_freep) X509 *x = sk_X509_shift(sk);
                int64_t nb, na;

                if (pki_asn1_time_to_sec(X509_get0_notBefore(x), &nb) < 0 ||
                    pki_asn1_time_to_sec(X509_get0_notAfter(x), &na) < 0)
                        return -EBADMSG;
                if (na <= pki_usec_to_sec(now))
                        continue;
                if (e->n >= PKI_BUNDLE_MAX_CERTS)
                        return -E2BIG;
                Entry *nv = realloc(e->v, (e->n + 1) * sizeof(Entry));
                if (!nv)
                        return -ENOMEM;
                e->v = nv;
                Entry *t = &nv[e->n];
                *t = (Entry){.not_before = nb};
                t->der_len = i2d_X509(x, &t->der);
                if (t->der_len <= 0)
                        return pki_openssl_error(-EBADMSG, "i2d_X509");
                t->cert = TAKE_PTR(x);
                e->n++;
        }
        return 0;
}

int pki_bundle_merge(const char *const *bundles, usec_t now, char **ret_pem, size_t *ret_n)
{
        PKI_ERR_GUARD;
        _cleanup_(entries_done) Entries e = {};
        _cleanup_(BIO_free_allp) BIO *out = NULL;
        size_t kept = 0;
        int r;

        assert_return(ret_pem, -EINVAL);
        for (const char *const *b = bundles; b && *b; b++) {
                r = collect(&e, *b, now);
                if (r < 0)
                        return r;
        }
        if (e.n > 0)
                qsort(e.v, e.n, sizeof(Entry), entry_cmp);

        out = BIO_new(BIO_s_mem());
        if (!out)
                return pki_openssl_error(-ENOMEM, "BIO_new");
        for (size_t i = 0; i < e.n; i++) {
                /* Sorted, so duplicates are neighbours. */
                if (i > 0 && entry_cmp(&e.v[i - 1], &e.v[i]) == 0)
                        continue;
                if (PEM_write_bio_X509(out, e.v[i].cert) != 1)
                        return pki_openssl_error(-ENOMEM, "PEM_write_bio_X509");
                kept++;
        }
        r = pki_bio_to_string(out, ret_pem);
        if (r < 0)
                return r;
        if (ret_n)
                *ret_n = kept;
        return 0;
}

int pki_bundle_contains(const char *bundle_pem, const char *cert_pem)
{
        PKI_ERR_GUARD;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *bundle = NULL, *certs = NULL;
        int r;

        assert_return(bundle_pem && cert_pem, -EINVAL);
        r = pki_certs_from_pem(cert_pem, &certs);
        if (r < 0)
                return r == -ENODATA ? -EBADMSG : r;
        if (blank(bundle_pem))
                return 0;
        r = pki_certs_from_pem(bundle_pem, &bundle);
        if (r < 0)
                return r == -ENODATA ? -EBADMSG : r;
        for (int i = 0; i < sk_X509_num(certs); i++) {
                bool found = false;

                for (int j = 0; !found && j < sk_X509_num(bundle); j++)
                        found = X509_cmp(sk_X509_value(certs, i), sk_X509_value(bundle, j)) == 0;
                if (!found)
                        return 0;
        }
        return 1;
}

int pki_bundle_first_expiry(const char *bundle_pem, usec_t *ret)
{
        PKI_ERR_GUARD;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;
        usec_t first = 0;
        int r;

        assert_return(bundle_pem && ret, -EINVAL);
        if (!blank(bundle_pem)) {
                r = pki_certs_from_pem(bundle_pem, &sk);
                if (r < 0)
                        return r == -ENODATA ? -EBADMSG : r;
        }
        for (int i = 0; sk && i < sk_X509_num(sk); i++) {
                int64_t na;
                if (pki_asn1_time_to_sec(X509_get0_notAfter(sk_X509_value(sk, i)), &na) < 0)
                        return -EBADMSG;
                usec_t u = pki_sec_to_usec(na);
                if (first == 0 || u < first)
                        first = u;
        }
        *ret = first;
        return 0;
}
