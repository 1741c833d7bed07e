/* Helpers shared by the pki files only: the one place OpenSSL errors become
 * errno values, ASN1_TIME <-> usec_t, PEM/BIO plumbing and SAN addresses. */
#pragma once

#include <assert.h>
#include <openssl/bn.h>
#include <openssl/err.h>

#include "pki.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BASIC_CONSTRAINTS *, BASIC_CONSTRAINTS_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_INTEGER *, ASN1_INTEGER_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BIGNUM *, BN_free);

static inline void pki_err_clearp(int *p)
{
        ERR_clear_error();
}

/* Public entry points start with this: whatever OpenSSL pushed on this
 * thread's error queue (even on success: extension caching, comparisons)
 * is gone when they return, so it cannot confuse the next TLS user. */
#define PKI_ERR_GUARD _cleanup_(pki_err_clearp) _unused_ int _pki_err_guard_ = 0

/* Drains this thread's OpenSSL error queue: -ENOMEM when an allocation
 * failed, `fallback` otherwise. Logs the first error at debug. */
int pki_openssl_error(int fallback, const char *what);
/* The same without logging, for code that runs on the offload thread. */
int pki_openssl_error_quiet(int fallback);

/* The pem_password_cb for every PEM read: encrypted blocks (also a
 * "Proc-Type: 4,ENCRYPTED" header on a certificate) are an error, where
 * OpenSSL's default callback would prompt on /dev/tty. */
int pki_no_passphrase(char *buf, int size, int rwflag, void *userdata);

/* -EINVAL for NULL, -E2BIG over PKI_PEM_MAX. */
int pki_pem_check(const char *pem);
/* A read-only memory BIO over a checked PEM string. */
int pki_bio_from_pem(const char *pem, BIO **ret);
/* Copies a memory BIO's contents into a NUL-terminated string. */
int pki_bio_to_string(BIO *b, char **ret);

/* Seconds since the epoch (negative before 1970). */
int pki_asn1_time_to_sec(const ASN1_TIME *t, int64_t *ret);
static inline int64_t pki_usec_to_sec(usec_t u)
{
        return (int64_t) (u / USEC_PER_SEC);
}
static inline usec_t pki_sec_to_usec(int64_t s)
{
        return s <= 0 ? 0 : (usec_t) s * USEC_PER_SEC;
}
/* "2025-01-01T00:00:00Z" into a buffer of at least 32 bytes. */
char *pki_format_sec(char *buf, size_t n, int64_t sec);

/* Textual IPv4/IPv6 into network bytes (4 or 16); -EINVAL when neither. */
int pki_ip_parse(const char *s, unsigned char ret[16], size_t *ret_len);
/* Network bytes (4 or 16) to canonical text, buf of at least 46 bytes. */
int pki_ip_format(const unsigned char *a, size_t len, char *buf, size_t n);

/* The signing digest for an issuer key: SHA-256 for RSA and EC. */
int pki_key_digest(EVP_PKEY *key, const EVP_MD **ret);

void pki_strv_free(char **v);
/* DNS names and canonical IP texts, each NULL-terminated (empty without
 * the extension); -EBADMSG when the extension is malformed or repeated. */
int pki_cert_get_sans(X509 *x, char ***ret_dns, char ***ret_ips);
