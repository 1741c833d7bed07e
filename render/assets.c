/* Lookup in the embedded asset table. */
#include <string.h>

#include "assets.h"

const Asset *asset_find(const char *path)
{
        for (const Asset *a = assets; path && a->path; a++)
                if (strcmp(a->path, path) == 0)
                        return a;
        return NULL;
}
