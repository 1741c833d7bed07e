/* EtcdDowngradeController: a release rolling back to an older etcd minor (its image
 * carries etcd 3.5, ETCD_IMAGE_VERSION, while the members run 3.6) gets there as etcd
 * documents it. etcd refuses a member older than the cluster version, which never goes
 * down by itself; so before TargetConfigController renders the older etcd
 * (etcd_downgrade_state: NEEDED and MIGRATING hold it), this controller enables etcd's
 * downgrade to the image's minor (validated first, as `etcdctl downgrade` does), once every
 * member is a healthy voter, and waits while the members move their storage to it. Then
 * the new revision rolls out one node at a time, each member coming back on the older etcd;
 * etcd ends the downgrade itself once all run it. A downgrade enabled to a minor the image
 * no longer carries (the release rolled forward again before it finished) is cancelled.
 * One etcd step at a time, as every etcd change here; each is logged, recorded as an
 * event, and its failure retried (the maintenance log). */
#include "base/log.h"
#include "controllers.h"
#include "facts.h"

#define DOWNGRADE_POLL (2 * USEC_PER_SEC)

static int sync_etcd_downgrade(const SyncContext *ctx, Plan *p)
{
        const EtcdViewSnapshot *s = op_etcd(ctx);
        EtcdMinor image = op_etcd_minor(ctx);
        const char *to = etcd_minor_name(image);
        char versions[512];

        if (!s || s->error < 0 || !s->members)
                return 0; /* nothing known to act on: the next view wakes it */
        switch (etcd_downgrade_state(s, image, versions, sizeof versions)) {
        case ETCD_DOWNGRADE_NEEDED:
                if (!etcd_view_all_healthy(s) || etcd_view_count_voters(s) != s->n_members) {
                        plan_waiting(p, "EtcdDowngradeWaiting",
                                     "the release's etcd image carries etcd %s and the members run a newer "
                                     "one (%s): etcd's downgrade to %s is enabled once every member is a "
                                     "healthy voter",
                                     to, versions, to);
                        return 0;
                }
                log_info("the release's etcd image carries etcd %s and every member runs a newer one (%s): "
                         "enabling etcd's downgrade to %s",
                         to, versions, to);
                plan_event(p, false, "EtcdDowngradeEnabling",
                           "enabling etcd's downgrade to %s: the release's etcd image carries etcd %s, the "
                           "members run %s",
                           to, to, versions);
                plan_etcd_downgrade(p, "ENABLE", to);
                return 0;
        case ETCD_DOWNGRADE_MIGRATING:
                plan_waiting(
                        p, "EtcdDowngradeWaiting",
                        "etcd's downgrade to %s is enabled; waiting for every member's storage to reach "
                        "it (%s)",
                        to, versions);
                plan_requeue_after(p, DOWNGRADE_POLL);
                return 0;
        case ETCD_DOWNGRADE_STALE:
                log_info("etcd's downgrade is enabled to another release than the etcd %s the release's "
                         "image "
                         "carries (%s): cancelling it",
                         to, versions);
                plan_event(p, false, "EtcdDowngradeCancelling",
                           "cancelling etcd's downgrade: the release's etcd image carries etcd %s (%s)", to,
                           versions);
                plan_etcd_downgrade(p, "CANCEL", NULL);
                return 0;
        case ETCD_DOWNGRADE_NONE:
        case ETCD_DOWNGRADE_READY:
        case ETCD_DOWNGRADE_UNKNOWN:
                return 0;
        }
        return 0;
}

static const WatchSpec *const watches[] = {OP_WATCH(W_ETCD_CR)};

const ControllerSpec controller_etcd_downgrade = {
        .name = "EtcdDowngradeController",
        .degraded_condition = "EtcdDowngradeControllerDegraded",
        .reads_etcd_view = true,
        .watches = watches,
        .n_watches = ELEMENTSOF(watches),
        .resync = 60 * USEC_PER_SEC,
        .sync = sync_etcd_downgrade,
};
