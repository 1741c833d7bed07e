/* Operator conditions ({type, status, lastTransitionTime, reason, message})
 * as list-maps keyed by type: pure functions on cJSON arrays. */
#pragma once

#include <cjson/cJSON.h>

#include "base/timeutil.h"

typedef struct Condition {
        const char *type;
        const char *status; /* "True" | "False" | "Unknown" */
        const char *reason; /* CamelCase, no spaces */
        const char *message;
} Condition;

/* Sets `c` in `conditions` (a JSON array). lastTransitionTime changes only
 * when the status changes. Returns 1 if anything changed, 0 if not, <0 on error. */
int conditions_set(cJSON *conditions, const Condition *c, usec_t now_realtime);
/* Borrowed pointer to the entry of that type, or NULL. */
cJSON *conditions_find(const cJSON *conditions, const char *type);
/* True when the entry exists with that status. */
bool conditions_is(const cJSON *conditions, const char *type, const char *status);
