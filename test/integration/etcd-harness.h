/* Test harness: N-member TLS etcd clusters on loopback, with certificates
 * issued by operator/pki (proving they work with a real etcd). Each cluster
 * takes its own 127.x.y.0/24 block, random ports and a temp dir (on tmpfs
 * when there is one), so tests run in parallel. Members are stopped by PID;
 * every process is killed and the directory removed when the test ends,
 * also on failure (atexit). */
#pragma once

#include <sys/types.h>

#include "etcd/client.h"
#include "pki/pki.h"

#define ETCD_TEST_MAX_MEMBERS 6

typedef struct EtcdTestMember {
        char name[16];
        char ip[32];
        unsigned client_port, peer_port;
        char client_url[64], peer_url[64];
        char dir[512];
        pid_t pid;
        bool bad_peer_cert;    /* issue its peer certificate for the wrong address */
        bool bad_serving_cert; /* issue its serving certificate for the wrong address */
} EtcdTestMember;

typedef struct EtcdTestCluster {
        char dir[256];
        char token[64];
        char ca_file[512];
        PkiPair *ca;
        char *ca_pem;
        char *client_cert_pem, *client_key_pem;
        HttpTls tls; /* points at the PEMs above */
        EtcdTestMember members[ETCD_TEST_MAX_MEMBERS];
        size_t n;
        char extra_flags[256];
        const char *etcd_binary; /* what etcd_test_member_start runs; NULL: "etcd" from PATH */
} EtcdTestCluster;

/* Prepares the directory, the CA, client certificates and n member slots
 * (addresses and ports), starting none. `extra` is appended to etcd's flags. */
int etcd_test_cluster_init(EtcdTestCluster *c, size_t n, const char *extra);
/* Re-issues member i's certificates (after setting its bad_* flags). */
int etcd_test_member_reissue(EtcdTestCluster *c, size_t i);
/* Starts members [0, k) as a new cluster and waits until /health is true. */
int etcd_test_cluster_bootstrap(EtcdTestCluster *c, size_t k);
/* Starts member i to join an existing cluster with this initial-cluster list. */
int etcd_test_member_start(EtcdTestCluster *c, size_t i, const char *initial_cluster, bool existing);
/* "m1=https://...,m2=https://..." for the given members (bit mask). */
char *etcd_test_initial_cluster(EtcdTestCluster *c, unsigned mask);
int etcd_test_member_kill(EtcdTestCluster *c, size_t i, int sig);
/* Waits for member i's process to exit (by itself), returning its exit status. */
int etcd_test_member_wait_exit(EtcdTestCluster *c, size_t i, usec_t timeout);
/* Kills everything, removes the directory. Safe to call twice. */
void etcd_test_cluster_destroy(EtcdTestCluster *c);
/* KEEP_TEST_DIRS set to anything but "" or "0": leave test directories behind. */
bool etcd_test_keep_dirs(void);

/* An EtcdClient on `loop` with the cluster's client certificate and the
 * client URLs of the members in `mask` as endpoints. */
EtcdClient *etcd_test_client(EtcdTestCluster *c, Loop *loop, unsigned mask);

/* Puts `n` values of `value_size` bytes under "/load/%06u", 16 in flight;
 * returns the first error (0 if none). */
int etcd_test_load(Loop *loop, EtcdClient *e, unsigned n, size_t value_size);

/* Runs one call to completion (a helper for the sequential parts of tests). */
typedef struct EtcdTestResult {
        bool done;
        int error;
        char message[256];
        cJSON *body;
} EtcdTestResult;
void etcd_test_result_cb(EtcdClient *c, const EtcdResponse *resp, void *userdata);
void etcd_test_result_done(EtcdTestResult *r);
int etcd_test_wait(Loop *loop, EtcdTestResult *r, usec_t timeout);

/* A plain GET (a probe endpoint): the HTTP status, or a negative errno; the
 * body (truncated) into `body` when not NULL. Bounded by 5 s. */
long etcd_test_http_get(Loop *loop, const char *url, char *body, size_t n);
