/* Private keys: generation (RSA 2048 by default, ECDSA P-256 as the
 * option), PKCS#8 PEM out, PEM in (PKCS#8 or the traditional RSA/EC
 * forms), and the cert+key pair type. Key material is never logged. */
#include <openssl/err.h>
#include <openssl/pem.h>

#include "pki-internal.h"

int pki_key_new(PkiKeyType type, EVP_PKEY **ret)
{
        PKI_ERR_GUARD;
        EVP_PKEY *k = NULL;

        assert_return(type >= 0 && type < _PKI_KEY_TYPE_MAX, -EINVAL);
        assert_return(ret, -EINVAL);

        if (type == PKI_KEY_RSA_2048)
                k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t) 2048);
        else
                k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        /* Runs on the offload thread too: no logging here. */
        if (!k)
                return pki_openssl_error_quiet(-EIO);
        *ret = k;
        return 0;
}

PkiKeyType pki_key_get_type(const EVP_PKEY *key)
{
        PKI_ERR_GUARD;
        if (!key)
                return _PKI_KEY_TYPE_INVALID;
        switch (EVP_PKEY_get_base_id(key)) {
        case EVP_PKEY_RSA:
                return EVP_PKEY_get_bits(key) == 2048 ? PKI_KEY_RSA_2048 : _PKI_KEY_TYPE_INVALID;
        case EVP_PKEY_EC: {
                char group[64];

                if (EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, NULL) != 1) {
                        ERR_clear_error();
                        return _PKI_KEY_TYPE_INVALID;
                }
                return streq(group, "prime256v1") || streq(group, "P-256") ? PKI_KEY_ECDSA_P256
                                                                           : _PKI_KEY_TYPE_INVALID;
        }
        default:
                return _PKI_KEY_TYPE_INVALID;
        }
}

int pki_key_to_pem(EVP_PKEY *key, char **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(BIO_free_allp) BIO *b = NULL;

        assert_return(key && ret, -EINVAL);
        b = BIO_new(BIO_s_mem());
        if (!b)
                return pki_openssl_error(-ENOMEM, "BIO_new");
        /* OpenSSL 3 writes unencrypted PKCS#8 ("PRIVATE KEY") here. */
        if (PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
                return pki_openssl_error(-EIO, "PEM_write_bio_PrivateKey");
        return pki_bio_to_string(b, ret);
}

int pki_key_from_pem(const char *pem, EVP_PKEY **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(BIO_free_allp) BIO *b = NULL;
        EVP_PKEY *k = NULL;
        int r;

        assert_return(pem && ret, -EINVAL);
        r = pki_bio_from_pem(pem, &b);
        if (r < 0)
                return r;
        k = PEM_read_bio_PrivateKey(b, NULL, pki_no_passphrase, NULL);
        if (!k)
                return pki_openssl_error(-EBADMSG, "PEM_read_bio_PrivateKey");
        *ret = k;
        return 0;
}

PkiPair *pki_pair_free(PkiPair *p)
{
        if (!p)
                return NULL;
        X509_free(p->cert);
        EVP_PKEY_free(p->key);
        return mfree(p);
}

int pki_pair_from_pem(const char *cert_pem, const char *key_pem, PkiPair **ret)
{
        PKI_ERR_GUARD;
        _cleanup_(pki_pair_freep) PkiPair *p = NULL;
        int r;

        assert_return(cert_pem && key_pem && ret, -EINVAL);
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        r = pki_cert_from_pem(cert_pem, &p->cert);
        if (r < 0)
                return r;
        r = pki_key_from_pem(key_pem, &p->key);
        if (r < 0)
                return r;
        if (X509_check_private_key(p->cert, p->key) != 1)
                return pki_openssl_error(-EKEYREJECTED, "X509_check_private_key");
        *ret = TAKE_PTR(p);
        return 0;
}

int pki_pair_to_pem(const PkiPair *p, char **ret_cert_pem, char **ret_key_pem)
{
        PKI_ERR_GUARD;
        _cleanup_free_ char *c = NULL, *k = NULL;
        int r;

        assert_return(p && p->cert && p->key, -EINVAL);
        assert_return(ret_cert_pem || ret_key_pem, -EINVAL);
        if (ret_cert_pem) {
                r = pki_cert_to_pem(p->cert, &c);
                if (r < 0)
                        return r;
        }
        if (ret_key_pem) {
                r = pki_key_to_pem(p->key, &k);
                if (r < 0)
                        return r;
        }
        if (ret_cert_pem)
                *ret_cert_pem = TAKE_PTR(c);
        if (ret_key_pem)
                *ret_key_pem = TAKE_PTR(k);
        return 0;
}
