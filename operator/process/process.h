/* The operator's process: the Deployment's long-running command (leader
 * election, the informers, the controllers and their runtime wired
 * together). */
#pragma once

#include "cmd/cmd.h"

extern const Command cmd_operator;
