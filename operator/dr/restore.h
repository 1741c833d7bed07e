/* Disaster recovery on a master: cluster-restore's procedure, as steps a
 * caller can run one at a time (a test) or in order (restore_run(), which
 * `cluster-etcd-operator cluster-restore` calls once it has parsed its flags).
 * Three modes:
 *   RESTORE_POD (the multi-node procedure): this master's etcd comes back as
 *       a new one-member cluster from the newest snapshot in the backup
 *       directory, through the restore pod (restore-etcd-pod/pod.yaml);
 *   RESTORE_IN_PLACE (the single-member path, upstream's
 *       ETCD_ETCDCTL_RESTORE): the snapshot is restored into the data dir
 *       with etcdctl, without a revision bump, and the normal etcd pod comes
 *       back;
 *   RESTORE_QUORUM: no snapshot: this member's own data becomes a new
 *       one-member cluster (quorum-restore-pod.yaml, --force-new-cluster),
 *       after its member dir was copied aside.
 * In that order, and nothing of the next step before the last one held:
 *   1. restore_check(): both files are checked against the backup's checksum
 *      file (checksums_<ts>.json, dr/backup-manifest.h: SHA-256 and size; a
 *      backup without one is refused unless no_checksum_file says to go on),
 *      the snapshot is verified (trailing SHA-256, then `etcdutl snapshot
 *      status`) and, for the restore pod, the static_kuberesources tarball's
 *      members are checked (dr/restore-tar.h) and it is extracted into a
 *      staging directory; the peers are asked (in place: the running cluster
 *      no longer has this member; quorum: this member has the highest raft
 *      index). A truncated, corrupt or missing snapshot, a hostile tarball or
 *      a refusal of the peers stops here, before anything on the node
 *      changed;
 *   2. restore_stop_etcd_pod(): etcd-pod.yaml moves to the stopped-manifests
 *      dir, and crictl must show none of its containers (bounded wait);
 *   3. restore_move_data_dir_aside() (not for RESTORE_QUORUM): the data dir
 *      is moved aside into the backup data dir, never deleted: member/ to
 *      member (an older one there is renamed with a timestamp),
 *      revision.json beside it, anything else into
 *      extra-data-dir-contents-<ts>/;
 *   4. the mode's work (restore_with_pod(), restore_in_place(),
 *      restore_quorum()), each file written under a temporary name and
 *      renamed into place; the staged revision directories are renamed into
 *      static-pod-resources/ (etcd-certs/ is never written).
 * Run again after a failure or a kill, it picks up where it stopped.
 *
 * Every step logs what it did and, when it refuses, why and what was (not)
 * changed, at info, warning or error: those lines are what the runbook's
 * reader sees, so this layer logs as the commands do. Each returns 0 or a
 * negative errno (the reason logged). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/timeutil.h"
#include "loop/loop.h"

typedef enum RestoreMode {
        RESTORE_POD,
        RESTORE_IN_PLACE,
        RESTORE_QUORUM,
} RestoreMode;

/* What a restore acts on, as values (the command's flags and the scripts'
 * environment). The strings are borrowed: they outlive the Restore. */
typedef struct RestoreInput {
        RestoreMode mode;
        const char *config_dir;       /* /etc/kubernetes */
        const char *data_dir;         /* /var/lib/etcd */
        const char *backup_data_dir;  /* where the data dir goes: /var/lib/etcd-backup */
        const char *stopped_dir;      /* where etcd-pod.yaml goes while etcd is stopped */
        const char *backup_dir;       /* the backup cluster-backup wrote (not for RESTORE_QUORUM) */
        const char *name, *peer_host; /* RESTORE_IN_PLACE: this member's name and peer address */
        usec_t stop_timeout;          /* for the etcd containers to stop */
        bool skip_copy;               /* RESTORE_QUORUM: no copy of the member dir first */
        bool force;                   /* go on although the peers say this member is not the one */
        bool no_checksum_file;        /* a backup without checksums_<ts>.json may be restored */
        /* The peers, as cluster-restore.sh and quorum-restore.sh set them (NULL or "": not set). */
        const char *all_endpoints;       /* $ALL_ETCD_ENDPOINTS: the members' client URLs, "a,b,c" */
        const char *this_url_host;       /* $ETCD_THIS_URL_HOST: this member is https://HOST:2379 */
        const char *cacert, *cert, *key; /* $ETCDCTL_CACERT, $ETCDCTL_CERT, $ETCDCTL_KEY */
        /* Makes the loop the peer checks run on: the node tools' resolves host names through
         * c-ares (dr does not see dns). NULL: loop_new(), on which only addresses work. */
        Loop *(*loop_new)(void);
} RestoreInput;

/* The backup a restore puts back (found by restore_find_backup()). */
typedef struct RestoreBackup {
        char *snapshot, *tar; /* full paths; tar NULL when absent */
        char *sums;           /* checksums_<ts>.json of the same backup (it may not exist) */
        uint64_t db_size;     /* from the snapshot's verification */
        uint64_t revision;    /* from `etcdutl snapshot status`; 0 when unknown */
} RestoreBackup;

typedef struct Restore {
        RestoreInput in;
        char ts[32]; /* this run's time, %Y-%m-%d_%H%M%S: names what it moves aside */
        RestoreBackup backup;
} Restore;

/* Copies `in` and sets ts from the local time now; -ERANGE when it cannot. */
int restore_init(Restore *rs, const RestoreInput *in);
void restore_done(Restore *rs);

/* Step 1, piece by piece; none of them moves or deletes anything. */
/* The newest snapshot_*.db of backup_dir, its tarball and checksum file
 * (-ENOENT without a snapshot, or without a tarball for RESTORE_POD). */
int restore_find_backup(Restore *rs);
/* Both files against the checksum file (review M1): -ENOENT without one
 * (unless no_checksum_file), -EBADMSG when a file differs. */
int restore_check_checksums(const Restore *rs);
/* The snapshot's trailing SHA-256, then what `etcdutl snapshot status` reads
 * of it (etcdctl's on a host with no etcdutl; skipped with a warning when
 * neither is on PATH). */
int restore_verify_snapshot(Restore *rs);
/* The pod manifest `key` of restore-etcd-pod/ that step 4 installs is there. */
int restore_check_pod_source(const Restore *rs, const char *key);
/* RESTORE_IN_PLACE: -EEXIST while a member of the running cluster that
 * answers with quorum still lists this one; 0 when none answers or the peers
 * are not named. With force, a refusal is logged and 0 returned. */
int restore_check_not_a_member(const Restore *rs);
/* RESTORE_QUORUM: -EINVAL when this member is a learner, a reachable voter
 * is further ahead or the peers are not named, -EHOSTDOWN when this member
 * does not answer. With force, a refusal is logged and 0 returned. */
int restore_check_highest_raft_index(const Restore *rs);
/* All of step 1 for the mode, in order, with the free space each copy needs;
 * RESTORE_POD also stages the tarball (restore_tarball_stage()). */
int restore_check(Restore *rs);

/* Step 2: etcd-pod.yaml into stopped_dir, then until crictl shows no etcd
 * container (-ETIMEDOUT after stop_timeout). */
int restore_stop_etcd_pod(const Restore *rs);
/* Step 3: the data dir's contents into backup_data_dir. */
int restore_move_data_dir_aside(const Restore *rs);
/* Step 4, by mode. */
int restore_with_pod(const Restore *rs);
int restore_in_place(const Restore *rs);
int restore_quorum(const Restore *rs);

/* Steps 1 to 4 for rs->in.mode. */
int restore_run(Restore *rs);

/* Of the file names of a backup directory: the newest snapshot_<ts>[sfx].db
 * and the static_kuberesources_<ts>[sfx].tar.gz of the same stamp (NULL
 * when there is none). -ENOENT without a snapshot. */
int restore_pick_backup(const char *const *names, size_t n, char **ret_snapshot, char **ret_tar);
