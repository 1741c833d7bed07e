/* ConfigMap openshift-etcd/etcd-scripts (upstream's ScriptController): the
 * node's disaster-recovery scripts, embedded from manifests/etcd-scripts/,
 * and etcd.env, the etcd pod's generated variables as sorted
 * `export NAME="value"` lines the scripts source. The installer copies it to
 * every master's .../etcd-certs/configmaps/etcd-scripts/ (replacing the
 * words that name the node); the etcd pod's etcd-resources-copy installs the
 * *.sh into /usr/local/bin. Pure: equal inputs give equal bytes. */
#pragma once

#include <cjson/cJSON.h>

#include "render/staticpod.h"

/* The keys, in the order they are written. */
extern const char *const etcd_scripts_keys[];

/* etcd.env: one `export NAME="value"` line per variable, sorted by name, with
 * ", \, $ and ` escaped. -EINVAL for a name that is not a shell identifier. */
int etcd_scripts_env(const EnvList *env, char **ret);

/* The ConfigMap's data object. */
int etcd_scripts_data(const EnvList *env, cJSON **ret);
