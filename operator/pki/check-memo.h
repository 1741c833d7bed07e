/* Remembered verdicts of pki_cert_check(). With OpenSSL 3, parsing and
 * verifying one certificate and key pair costs most of a millisecond, and
 * the cert signer judges every certificate whenever a master Node changes
 * and on every resync. A verdict is reused only for
 * byte-identical inputs (a SHA-256 digest over the certificate, the key,
 * the CA bundle, the expected names and the refresh window) and for at most
 * `ttl`: what a verdict depends on in time (expiry windows of days) cannot
 * change unnoticed for longer than that. Single-threaded (the loop). */
#pragma once

#include "pki.h"

typedef struct PkiCheckMemo PkiCheckMemo;

#define PKI_CHECK_MEMO_SIZE 64U

PkiCheckMemo *pki_check_memo_new(usec_t ttl);
PkiCheckMemo *pki_check_memo_free(PkiCheckMemo *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(PkiCheckMemo *, pki_check_memo_free);

/* pki_cert_check() through the memo; `m` NULL calls it directly. A verdict
 * computed at time T serves calls with T <= now < T + ttl. */
int pki_cert_check_memo(PkiCheckMemo *m, const char *cert_pem, const char *key_pem, const PkiCheck *check,
                        usec_t now, char **ret_reason);

void pki_check_memo_stats(const PkiCheckMemo *m, uint64_t *ret_hits, uint64_t *ret_misses);
