/* YAML (one document, or the first of a stream) into a cJSON tree with
 * libyaml, so every config file is read through the same JSON helpers.
 * Plain scalars follow the YAML 1.2 core schema (null, booleans, integers,
 * floats); quoted and block scalars are always strings. */
#pragma once

#include <cjson/cJSON.h>

#include "macro.h"

/* On failure returns -EBADMSG and, if ret_error is set, a message with the
 * line and column. Documents after the first are ignored by yaml_parse();
 * yaml_parse_all() returns a JSON array of every document. */
int yaml_parse(const char *text, size_t len, cJSON **ret, char **ret_error);
int yaml_parse_all(const char *text, size_t len, cJSON **ret, char **ret_error);
int yaml_parse_file(const char *path, cJSON **ret, char **ret_error);
