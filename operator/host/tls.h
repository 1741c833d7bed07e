/* The PEM files of a TLS client on the local host (an etcd client's CA,
 * certificate and key, as etcdctl's flags and $ETCDCTL_* name them), read
 * into the HttpTls the loop's requests take. */
#pragma once

#include "loop/loop.h"

/* Reads the files that are named (NULL: none), each <= 1 MiB. On failure
 * *ret_error names the file and the reason. */
int host_tls_load(const char *cacert, const char *cert, const char *key, HttpTls *ret, char **ret_error);
/* Frees what host_tls_load() read, zeroing the key first. */
void host_tls_done(HttpTls *t);
