/* cluster-restore's pure parts, for unit tests. */
#pragma once
#include <stddef.h>

/* Of the file names of a backup directory: the newest snapshot_<ts>[sfx].db
 * and the static_kuberesources_<ts>[sfx].tar.gz of the same stamp (NULL
 * when there is none). -ENOENT without a snapshot. */
int restore_pick_backup(const char *const *names, size_t n, char **ret_snapshot, char **ret_tar);

/* The static_kuberesources tarball (restore-tar.c). A member list as `tar
 * --list --verbose --numeric-owner --quoting-style=c --full-time` prints it:
 * 0 when every member is a regular file or a directory under
 * static-pod-resources/<pod>-pod-<N>/ (pod one of kube-apiserver,
 * kube-controller-manager, kube-scheduler, etcd) with [A-Za-z0-9._-] name
 * parts, none "." or "..", and no setuid or setgid bit; -EINVAL otherwise,
 * `why` (n bytes) naming the first member refused and why. */
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

/* bump-revision: the revision every pre-disaster client revision must be
 * below (maxRevision of revision.json plus the margin); 0 when unknown. */
#include <stdint.h>
uint64_t bump_target(uint64_t max_revision, uint64_t margin);
