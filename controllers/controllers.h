/* Every controller the operator runs, one per file in controllers/. */
#pragma once

#include "runtime/controller.h"

extern const ControllerSpec controller_etcd_members;
extern const ControllerSpec controller_cluster_member;
extern const ControllerSpec controller_bootstrap_teardown;
extern const ControllerSpec controller_host_endpoints;
extern const ControllerSpec controller_etcd_endpoints;
extern const ControllerSpec controller_status;
