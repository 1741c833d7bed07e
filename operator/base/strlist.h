/* A list of strings built from flags and variables that may repeat and hold
 * "a,b,c" (endpoints, files, names). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct StrList {
        char **v;
        size_t n;
} StrList;

/* Appends the comma-separated items (trimmed; empty items skipped). */
int strlist_add_csv(StrList *l, const char *csv);
bool strlist_contains(const StrList *l, const char *s);
void strlist_done(StrList *l);
