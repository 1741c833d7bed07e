/* LD_PRELOAD for integration/s3: MD5 refused as a FIPS host refuses it. OpenSSL's FIPS provider
 * has no MD5, so fetching it fails, and so does every use of EVP_md5(), whose digest
 * EVP_DigestInit_ex() fetches by name. Here EVP_MD_fetch() of "MD5" answers NULL, which
 * libcrypto's own calls see too (they go through the dynamic linker): an explicit fetch and an
 * EVP_DigestInit_ex(EVP_md5()) both fail, as under FIPS. Every other algorithm is OpenSSL's
 * own, through the next EVP_MD_fetch. No sanitizers: it is loaded before them. */
#include <dlfcn.h>
#include <stddef.h>
#include <strings.h>

#include <openssl/evp.h>

EVP_MD *EVP_MD_fetch(OSSL_LIB_CTX *ctx, const char *algorithm, const char *properties)
{
        static EVP_MD *(*next)(OSSL_LIB_CTX *, const char *, const char *);

        if (algorithm && strcasecmp(algorithm, "MD5") == 0)
                return NULL;
        if (!next)
                *(void **) &next = dlsym(RTLD_NEXT, "EVP_MD_fetch");
        return next ? next(ctx, algorithm, properties) : NULL;
}
