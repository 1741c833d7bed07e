/* cJSON -> YAML text, block style, deterministic (members in the tree's
 * order), for manifests people read: multi-line strings become literal
 * blocks, strings that YAML would read as something else are quoted. */
#pragma once

#include <cjson/cJSON.h>

#include "buf.h"

int yaml_emit(const cJSON *value, Buf *out);
/* Convenience: a NUL-terminated string, or NULL on OOM. */
char *yaml_emit_string(const cJSON *value);
/* Whether `s` can be written as a plain scalar and read back as the same string. */
bool yaml_string_is_plain(const char *s);
