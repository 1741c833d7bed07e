/* The per-node etcd static pod shape (render/ owns it,
 * the target-config controller feeds it): one spec that can become any
 * member, rendered from an embedded template, with generated environment
 * variables put in front of every container's own, and REVISION kept a
 * string once the installer substitutes it on the node. Pure: no I/O to a
 * cluster, equal inputs give equal bytes. */
#pragma once

#include "base/macro.h"
#include "render/template.h"

typedef struct EnvVar {
        char *name, *value;
} EnvVar;

typedef struct EnvList {
        EnvVar *v;
        size_t n, cap;
} EnvList;

void env_list_done(EnvList *l);
/* Appends NAME=printf(fmt, ...); -ENOMEM. */
int env_list_add(EnvList *l, const char *name, const char *fmt, ...) _printf_(3, 4);
/* By name, so equal sets give equal bytes. */
void env_list_sort(EnvList *l);

/* Renders embedded template `asset` with `vars`, gives every container (and
 * init container) that has an `env` list the variables of `env` first, then
 * its own, and checks that the result, with REVISION substituted, reads
 * back as a Pod whose revision label is a string. -ENOENT for an asset that
 * is not embedded, -EINVAL for a placeholder without a value, -EBADMSG when
 * the result is not such a Pod (all logged: they are bugs in the template). */
int staticpod_render(const char *asset, const TemplateVar *vars, size_t n_vars, const EnvList *env,
                     char **ret);
