/* Reading certificates back: PEM parsing (one or many), PEM out, a plain
 * summary (PkiCertInfo) and expiry arithmetic. Nothing here reads the clock. */
#include <openssl/err.h>
#include <openssl/pem.h>

#include "pki-internal.h"

int pki_certs_from_pem(const char *pem, PkiCerts **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(sk_X509_pop_freep) STACK_OF(X509) *sk = NULL;
        _cleanup_(BIO_free_allp) BIO *b = NULL;
        int r;

        assert_return(pem && ret, -EINVAL);
        r = pki_bio_from_pem(pem, &b);
        if (r < 0)
                return r;
        sk = sk_X509_new_null();
        if (!sk)
                return -ENOMEM;
        for (;;) {
                X509 *x = PEM_read_bio_X509(b, NULL, pki_no_passphrase, NULL);
                if (!x) {
                        unsigned long e = ERR_peek_last_error();

                        /* Running out of PEM blocks is the normal end. */
                        if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
                                ERR_clear_error();
                                break;
                        }
                        return pki_openssl_error(-EBADMSG, "PEM_read_bio_X509");
                }
                if ((unsigned) sk_X509_num(sk) >= PKI_BUNDLE_MAX_CERTS) {
                        X509_free(x);
                        return -E2BIG;
                }
                if (sk_X509_push(sk, x) <= 0) {
                        X509_free(x);
                        return -ENOMEM;
                }
        }
        if (sk_X509_num(sk) == 0)
                return -ENODATA;
        *ret = TAKE_PTR(sk);
        return 0;
}

int pki_cert_from_pem(const char *pem, X509 **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(BIO_free_allp) BIO *b = NULL;
        X509 *x = NULL;
        int r;

        assert_return(pem && ret, -EINVAL);
        r = pki_bio_from_pem(pem, &b);
        if (r < 0)
                return r;
        x = PEM_read_bio_X509(b, NULL, pki_no_passphrase, NULL);
        if (!x)
                return pki_openssl_error(-EBADMSG, "PEM_read_bio_X509");
        *ret = x;
        return 0;
}

int pki_cert_to_pem(X509 *x, char **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(BIO_free_allp) BIO *b = NULL;

        assert_return(x && ret, -EINVAL);
        b = BIO_new(BIO_s_mem());
        if (!b)
                return pki_openssl_error(-ENOMEM, "BIO_new");
        if (PEM_write_bio_X509(b, x) != 1)
                return pki_openssl_error(-EIO, "PEM_write_bio_X509");
        return pki_bio_to_string(b, ret);
}

void pki_strv_free(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

PkiCertInfo *pki_cert_info_free(PkiCertInfo *i)
{
        if (!i)
                return NULL;
        free(i->subject);
        free(i->subject_cn);
        free(i->subject_o);
        free(i->subject_orgs);
        free(i->issuer);
        free(i->issuer_cn);
        free(i->serial);
        pki_strv_free(i->dns);
        pki_strv_free(i->ips);
        return mfree(i);
}

static int name_to_string(const X509_NAME *n, char **ret)
{
        _cleanup_(BIO_free_allp) BIO *b = BIO_new(BIO_s_mem());

        if (!b)
                return -ENOMEM;
        if (X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253) < 0)
                return pki_openssl_error(-EBADMSG, "X509_NAME_print_ex");
        return pki_bio_to_string(b, ret);
}

/* The last entry of `nid` (the most specific), or NULL when absent. */
static int name_get_entry(const X509_NAME *n, int nid, char **ret)
{
        int idx = -1, last = -1;
        unsigned char *utf8 = NULL;

        while ((idx = X509_NAME_get_index_by_NID(n, nid, idx)) >= 0)
                last = idx;
        if (last < 0) {
                *ret = NULL;
                return 0;
        }
        const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, last));
        int len = ASN1_STRING_to_UTF8(&utf8, s);
        if (len < 0)
                return pki_openssl_error(-EBADMSG, "ASN1_STRING_to_UTF8");
        char *c = strndup((const char *) utf8, (size_t) len);
        OPENSSL_free(utf8);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

/* Every entry of `nid`, in order, joined by ","; NULL when there is none. */
static int name_join_entries(const X509_NAME *n, int nid, char **ret)
{
        _cleanup_free_ char *out = NULL;
        int idx = -1;

        while ((idx = X509_NAME_get_index_by_NID(n, nid, idx)) >= 0) {
                unsigned char *utf8 = NULL;
                const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, idx));
                int len = ASN1_STRING_to_UTF8(&utf8, s);
                if (len < 0)
                        return pki_openssl_error(-EBADMSG, "ASN1_STRING_to_UTF8");
                char *next =
                        strdup_printf("%s%s%.*s", strempty(out), out ? "," : "", len, (const char *) utf8);
                OPENSSL_free(utf8);
                if (!next)
                        return -ENOMEM;
                free(out);
                out = next;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

static int strv_push(char ***v, size_t *n, const char *s, size_t len)
{
        char **nv = realloc(*v, (*n + 2) * sizeof(char *));

        if (!nv)
                return -ENOMEM;
        *v = nv;
        nv[*n] = strndup(s, len);
        if (!nv[*n])
                return -ENOMEM;
        nv[++*n] = NULL;
        return 0;
}

int pki_cert_get_sans(X509 *x, char ***ret_dns, char ***ret_ips)
{
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *names = NULL;
        char **dns = NULL, **ips = NULL;
        size_t ndns = 0, nips = 0;
        int r = 0, crit = 0;

        names = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
        if (!names && crit == -2)
                r = -EBADMSG; /* present more than once */
        else if (!names && crit >= 0)
                r = pki_openssl_error(-EBADMSG, "subjectAltName");
        ERR_clear_error();
        dns = calloc(1, sizeof(char *));
        ips = calloc(1, sizeof(char *));
        if (!dns || !ips)
                r = -ENOMEM;
        for (int i = 0; r >= 0 && i < sk_GENERAL_NAME_num(names); i++) {
                const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
                int type = 0;
                const ASN1_STRING *s = GENERAL_NAME_get0_value(g, &type);

                if (type == GEN_DNS)
                        r = strv_push(&dns, &ndns, (const char *) ASN1_STRING_get0_data(s),
                                      (size_t) ASN1_STRING_length(s));
                else if (type == GEN_IPADD) {
                        char buf[64];

                        r = pki_ip_format(ASN1_STRING_get0_data(s), (size_t) ASN1_STRING_length(s), buf,
                                          sizeof buf);
                        if (r >= 0)
                                r = strv_push(&ips, &nips, buf, strlen(buf));
                }
        }
        if (r < 0) {
                pki_strv_free(dns);
                pki_strv_free(ips);
                return r;
        }
        *ret_dns = dns;
        *ret_ips = ips;
        return 0;
}

static int get_serial(X509 *x, char **ret)
{
        _cleanup_(BN_freep) BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
        char *h = NULL;

        if (!bn || !(h = BN_bn2hex(bn)))
                return pki_openssl_error(-EBADMSG, "serial");
        char *s = strdup(h);
        OPENSSL_free(h);
        if (!s)
                return -ENOMEM;
        for (char *p = s; *p; p++)
                if (*p >= 'A' && *p <= 'F')
                        *p = (char) (*p - 'A' + 'a');
        *ret = s;
        return 0;
}

static bool self_signed(X509 *x)
{
        EVP_PKEY *k = X509_get0_pubkey(x);
        bool ok = k && X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)) == 0 &&
                  X509_verify(x, k) == 1;

        ERR_clear_error();
        return ok;
}

int pki_cert_get_info(X509 *x, PkiCertInfo **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(pki_cert_info_freep) PkiCertInfo *i = NULL;
        int64_t nb, na;
        int r;

        assert_return(x && ret, -EINVAL);
        i = calloc(1, sizeof *i);
        if (!i)
                return -ENOMEM;
        if ((r = name_to_string(X509_get_subject_name(x), &i->subject)) < 0 ||
            (r = name_get_entry(X509_get_subject_name(x), NID_commonName, &i->subject_cn)) < 0 ||
            (r = name_get_entry(X509_get_subject_name(x), NID_organizationName, &i->subject_o)) < 0 ||
            (r = name_join_entries(X509_get_subject_name(x), NID_organizationName, &i->subject_orgs)) < 0 ||
            (r = name_to_string(X509_get_issuer_name(x), &i->issuer)) < 0 ||
            (r = name_get_entry(X509_get_issuer_name(x), NID_commonName, &i->issuer_cn)) < 0 ||
            (r = get_serial(x, &i->serial)) < 0 || (r = pki_cert_get_sans(x, &i->dns, &i->ips)) < 0 ||
            (r = pki_asn1_time_to_sec(X509_get0_notBefore(x), &nb)) < 0 ||
            (r = pki_asn1_time_to_sec(X509_get0_notAfter(x), &na)) < 0)
                return r;
        i->not_before = pki_sec_to_usec(nb);
        i->not_after = pki_sec_to_usec(na);
        /* Caches the extensions; a malformed one makes these report "invalid". */
        i->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
        i->key_usage = X509_get_key_usage(x);
        i->ext_key_usage = X509_get_extended_key_usage(x);
        i->self_signed = self_signed(x);
        EVP_PKEY *k = X509_get0_pubkey(x);
        i->key_type = pki_key_get_type(k);
        i->key_bits = k ? EVP_PKEY_get_bits(k) : 0;
        ERR_clear_error();
        *ret = TAKE_PTR(i);
        return 0;
}

int pki_cert_get_not_after(const X509 *x, usec_t *ret)
{
        PKI_ERR_GUARD;
        int64_t s;
        int r;

        assert_return(x && ret, -EINVAL);
        r = pki_asn1_time_to_sec(X509_get0_notAfter(x), &s);
        if (r < 0)
                return r;
        *ret = pki_sec_to_usec(s);
        return 0;
}

int pki_cert_expiration_days(const char *pem, usec_t now, double *ret)
{
        PKI_ERR_GUARD;
        _cleanup_(X509_freep) X509 *x = NULL;
        int64_t na;
        int r;

        assert_return(pem && ret, -EINVAL);
        r = pki_cert_from_pem(pem, &x);
        if (r < 0)
                return r;
        r = pki_asn1_time_to_sec(X509_get0_notAfter(x), &na);
        if (r < 0)
                return r;
        *ret = ((double) na - (double) now / (double) USEC_PER_SEC) / 86400.0;
        return 0;
}
