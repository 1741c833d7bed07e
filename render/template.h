/* ${NAME} substitution in embedded templates. Every placeholder must have a
 * value and every value must be safe for where templates put them (callers
 * validate: DNS-1123 names with base/names.h, IP literals, image references),
 * so a typo in a template is an error, never an empty string. */
#pragma once

#include "base/macro.h"

typedef struct TemplateVar {
        const char *name;
        const char *value;
} TemplateVar;

/* -ENOENT (with the placeholder in *ret_missing, borrowed from tmpl) for an
 * unknown placeholder. */
int template_render(const char *tmpl, const TemplateVar *vars, size_t n_vars, char **ret,
                    char **ret_missing);

/* Container image references, [registry[:port]/]path[:tag][@sha256:hex]: a value
 * check shared by render and the target-config controller. */
bool template_is_image_ref(const char *s);
