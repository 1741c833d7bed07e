/* Strict base64 (RFC 4648, standard alphabet, padding optional, whitespace
 * ignored): kubeconfig *-data fields and Secret values. */
#pragma once

#include "macro.h"

int base64_decode(const char *in, char **ret, size_t *ret_len);
char *base64_encode(const void *data, size_t len);
