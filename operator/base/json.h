/* Typed, NULL-tolerant getters on cJSON trees, bounded parsing, and uint64
 * values that travel as JSON strings (etcd's gateway) and must never pass
 * through a double. */
#pragma once

#include <stdint.h>

#include <cjson/cJSON.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(cJSON *, cJSON_Delete);

#define JSON_ARRAY_FOREACH(item, array) \
        for ((item) = (array) ? (array)->child : NULL; (item); (item) = (item)->next)

/* Deepest nesting we accept from the network; Kubernetes objects stay far below. */
#define JSON_MAX_DEPTH 64

/* Parses exactly `len` bytes (trailing whitespace and NULs allowed) into a
 * cJSON tree, strictly by RFC 8259: no byte order mark, no control
 * characters inside strings, JSON's number grammar, lone surrogates refused,
 * and a member name holding \u0000 refused (a C string would end there and
 * name another member; in a value it stays, cut at the NUL for C readers).
 * Duplicate names are kept, first one found, as cJSON does.
 * -EBADMSG on syntax errors, -E2BIG when nesting is deeper than
 * JSON_MAX_DEPTH, -ENOMEM. The tree is allocated through cJSON's hooks (so
 * the scratch arena below applies) and freed with cJSON_Delete(). */
int json_parse(const char *text, size_t len, cJSON **ret);

/* A scratch arena for trees that live only while one message is handled (a
 * watch event: parsed, frozen into the cache, deleted). Once
 * json_hooks_install() has made cJSON allocate through our hooks, the
 * allocations of a parse between json_scratch_begin() and json_scratch_stop()
 * are bumps in an arena, cJSON_Delete() of them costs no free(), and
 * json_scratch_reset() takes them all back at once; the first
 * JSON_SCRATCH_KEEP bytes stay for the next message, the rest goes back.
 * Nothing of such a tree may be kept past the reset (json_freeze() copies
 * with malloc()); ASan builds poison the arena at each reset, so a piece kept
 * by mistake is caught. A begin inside another's window (a message handled
 * while another is) is reset with the outer one. Per thread; without
 * json_hooks_install() they do nothing. */
/* What stays between messages: an etcd answer or a small watch event fits;
 * a pod's event or a list takes more and gives it back at the reset. */
#define JSON_SCRATCH_KEEP (16u * 1024u)
void json_hooks_install(void);
void json_scratch_begin(void);
void json_scratch_stop(void);
void json_scratch_reset(void);
/* Bytes the arena holds now (for the benchmarks' figures). */
size_t json_scratch_size(void);

/* Moves obj's member `key` (when obj is an object that has it) to the end of
 * the array `to`. */
void json_move_to(cJSON *to, cJSON *obj, const char *key);

/* Dotted paths ("metadata.name"); NULL when absent or of another type. */
cJSON *json_get(const cJSON *obj, const char *path);
const char *json_get_string(const cJSON *obj, const char *path);
cJSON *json_get_object(const cJSON *obj, const char *path);
cJSON *json_get_array(const cJSON *obj, const char *path);
/* The string of a node that may be NULL or of another type; NULL then. */
static inline const char *json_string(const cJSON *v)
{
        return v && cJSON_IsString(v) ? v->valuestring : NULL;
}
/* Whether the array `a` (NULL or another type: no) holds the string `want`. */
bool json_array_has_string(const cJSON *a, const char *want);
/* Integers: accepts a JSON number that is integral and in range, or a decimal
 * string. -ENOENT when absent, -EINVAL when malformed, -ERANGE when too big. */
int json_get_int64(const cJSON *obj, const char *path, int64_t *ret);
int json_get_uint64(const cJSON *obj, const char *path, uint64_t *ret);
bool json_get_bool(const cJSON *obj, const char *path, bool def);

int parse_uint64(const char *s, uint64_t *ret);

/* Makes sure the object at `path` exists (creating objects on the way). */
cJSON *json_ensure_object(cJSON *obj, const char *path);
/* Replaces (or adds) a string member; returns -ENOMEM on failure. */
int json_set_string(cJSON *obj, const char *key, const char *value);

/* Puts `value` at a dotted path in `root`, replacing what is there: a
 * component of digits indexes an existing array item, any other names an
 * object member (objects on the way are created). Always takes `value`
 * (deleted on failure). -ENOENT when an array index is out of range,
 * -EINVAL when the path crosses a scalar, -ENOMEM. With a constant skeleton
 * parsed by json_parse(), this is how objects the operator writes are built:
 * never by printing values into JSON text. */
int json_set_path(cJSON *root, const char *path, cJSON *value);
/* The same for a string (NULL: -EINVAL) and for a number. */
int json_set_path_string(cJSON *root, const char *path, const char *value);
int json_set_path_number(cJSON *root, const char *path, double value);

/* A read-only copy of `tree` in one allocation (nodes, then strings), for
 * long-lived caches: one free() releases it, which costs nothing like walking
 * hundreds of cold nodes, and it takes about a third less memory. Release it
 * with free(), never cJSON_Delete(); never modify it (cJSON_Duplicate() it).
 * NULL on OOM. */
cJSON *json_freeze(const cJSON *tree);
/* json_freeze() that also says how many bytes the block takes (ret_size may be NULL). */
cJSON *json_freeze_sized(const cJSON *tree, size_t *ret_size);

/* Unformatted print; NULL on OOM. */
char *json_print(const cJSON *obj);
