/* Every controller the operator runs, one per file in controllers/. */
#pragma once

#include "runtime/controller.h"

extern const ControllerSpec controller_etcd_members;
extern const ControllerSpec controller_cluster_member;
extern const ControllerSpec controller_bootstrap_teardown;
