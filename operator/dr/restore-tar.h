/* A backup's static_kuberesources tarball, as a restore takes it
 * (restore-tar.c): its member list checked before anything on the node
 * changes, its contents staged, and its revision directories put in place
 * only in step 4. The tarball is untrusted (a backup dir, an object store)
 * and root extracts it (review H2). */
#pragma once

#include <stddef.h>

/* A member list as `tar --list --verbose --numeric-owner --quoting-style=c
 * --full-time` prints it: 0 when every member is a regular file or a
 * directory under static-pod-resources/<pod>-pod-<N>/ (pod one of
 * kube-apiserver, kube-controller-manager, kube-scheduler, etcd) with
 * [A-Za-z0-9._-] name parts, none "." or "..", and no setuid or setgid bit;
 * -EINVAL otherwise, `why` (n bytes) naming the first member refused and why. */
int restore_tar_listing_check(const char *listing, char *why, size_t n);
/* Lists `tarball` with tar and checks the list as above; -EBADMSG when tar
 * cannot list it. Changes nothing. */
int restore_tarball_check(const char *tarball, char *why, size_t n);
/* Extracts a checked tarball into CONFIG_DIR/static-pod-resources/.restore-staging
 * (made anew) without owners or modes beyond the umask; logs its errors. */
int restore_tarball_stage(const char *config_dir, const char *tarball);
/* Moves each staged revision directory into CONFIG_DIR/static-pod-resources/,
 * the node's own copy of one moved aside to .restore-replaced-<ts>/ first
 * (never deleted); then removes the staging directory. Logs its errors. */
int restore_tarball_install(const char *config_dir, const char *ts);
