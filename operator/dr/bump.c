/* The revision a bump must pass, and which path a bump takes (dr/bump.h). */
#include <inttypes.h>

#include "base/macro.h"
#include "bump.h"

uint64_t bump_target(uint64_t max_revision, uint64_t margin)
{
        if (max_revision == 0)
                return 0;
        return max_revision > UINT64_MAX - margin ? UINT64_MAX : max_revision + margin;
}

static const char *const bump_path_table[_BUMP_PATH_MAX] = {
        [BUMP_WRITES] = "writes",
        [BUMP_NONE_NEEDED] = "none-needed",
        [BUMP_UNAVAILABLE] = "unavailable",
};

const char *bump_path_to_string(BumpPath p)
{
        return p >= 0 && p < _BUMP_PATH_MAX ? bump_path_table[p] : NULL;
}

BumpPath bump_decide(uint64_t max_revision, const char *source, uint64_t from, uint64_t margin,
                     uint64_t max_writes, uint64_t *ret_target, char **ret_reason)
{
        uint64_t target = bump_target(max_revision, margin);

        assert_return(ret_target && ret_reason, _BUMP_PATH_INVALID);
        *ret_target = target;
        if (max_revision == 0) {
                *ret_reason = strdup(
                        "no revision.json with maxRevision: the highest revision clients saw is unknown");
                return BUMP_UNAVAILABLE;
        }
        if (target <= from) {
                *ret_reason = strdup_printf("revision %" PRIu64 " is already past %" PRIu64
                                            " (maxRevision %" PRIu64 " of %s plus %" PRIu64 ")",
                                            from, target, max_revision, source, margin);
                return BUMP_NONE_NEEDED;
        }
        if (target - from > max_writes) {
                *ret_reason = strdup_printf("the gap from %" PRIu64 " to %" PRIu64
                                            " is over --max-writes %" PRIu64,
                                            from, target, max_writes);
                return BUMP_UNAVAILABLE;
        }
        *ret_reason =
                strdup_printf("maxRevision %" PRIu64 " of %s plus %" PRIu64, max_revision, source, margin);
        return BUMP_WRITES;
}
