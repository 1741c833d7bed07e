/* revision.json, as the etcd pod's rev container writes it and discover,
 * cluster-restore and bump-revision read it back (operator/node/node-etcd.c):
 * any text decodes or is refused, and what decodes encodes and decodes
 * again to the same values. */
#include <stdint.h>

#include "base/macro.h"
#include "base/timeutil.h"
#include "node/node-etcd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const NodeCmdRevision *a, const NodeCmdRevision *b)
{
        if (a->cluster_id != b->cluster_id || a->n_endpoints != b->n_endpoints ||
            a->max_raft_index != b->max_raft_index || a->max_revision != b->max_revision ||
            a->created / USEC_PER_SEC != b->created / USEC_PER_SEC)
                abort();
        for (size_t i = 0; i < a->n_endpoints; i++)
                if (!streq(a->endpoints[i].endpoint, b->endpoints[i].endpoint) ||
                    a->endpoints[i].raft_index != b->endpoints[i].raft_index)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        NodeCmdRevision rev = {}, again = {};
        _cleanup_free_ char *text = NULL;

        if (nodecmd_revision_decode((const char *) data, size, &rev) < 0)
                return 0;
        if (nodecmd_revision_encode(&rev, &text) >= 0) {
                if (nodecmd_revision_decode(text, strlen(text), &again) < 0)
                        abort();
                same(&rev, &again);
                nodecmd_revision_done(&again);
        }
        nodecmd_revision_done(&rev);
        return 0;
}
