/* Every controller the operator runs, one per file in controllers/. */
#pragma once

#include "runtime/controller.h"

extern const ControllerSpec controller_etcd_members;
