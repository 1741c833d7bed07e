/* The revision a bump must pass (dr/bump.h). */
#include "bump.h"

uint64_t bump_target(uint64_t max_revision, uint64_t margin)
{
        if (max_revision == 0)
                return 0;
        return max_revision > UINT64_MAX - margin ? UINT64_MAX : max_revision + margin;
}
