/* The facts of backups to S3-compatible object storage (facts.h): the store an
 * object's annotations name, checked with a message that says how to fix it. */
#include "facts.h"

#include <ctype.h>

#include "base/json.h"
#include "base/names.h"
#include "base/timeutil.h"
#include "s3/s3.h"

int backup_store_of(const cJSON *obj, BackupStore *ret, char *why, size_t n)
{
        const cJSON *ann = json_get_object(obj, "metadata.annotations"); /* keys with dots */
        const char *secret = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_SECRET));
        const char *bucket = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_BUCKET));
        const char *prefix = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_PREFIX));
        const char *gc = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_GC));
        const char *max = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_MAX));
        const char *grace = json_string(cJSON_GetObjectItemCaseSensitive(ann, ANN_S3_GRACE));
        BackupStore s = {.secret = secret, .bucket = bucket, .prefix = prefix, .grace = S3_DEFAULT_GRACE};

        assert_return(ret && why, -EINVAL);
        if (!secret && !bucket && !prefix && !gc && !max && !grace)
                return -ENOENT;
#define BAD(...) ((void) snprintf(why, n, __VA_ARGS__), -EINVAL)
        if (!secret || !dns1123_subdomain_is_valid(secret))
                return BAD("annotation " ANN_S3_SECRET " \"%s\": name the Secret in " NS_ETCD
                           " that holds the store's accessKeyID and secretAccessKey (and optionally region, "
                           "endpoint, s3ForcePathStyle)",
                           strempty(secret));
        if (!bucket || !s3_bucket_name_is_valid(bucket))
                return BAD("annotation " ANN_S3_BUCKET
                           " \"%s\": name the bucket (3 to 63 lower-case letters, "
                           "digits, '-' and '.')",
                           strempty(bucket));
        if (!prefix || !*prefix || !s3_prefix_is_valid(prefix)) /* many clusters share a bucket */
                return BAD("annotation " ANN_S3_PREFIX
                           " \"%s\": give this cluster's own place in the bucket, "
                           "e.g. clusters/prod-1 (not empty, no leading or trailing '/', no '.' or '..' "
                           "parts, only letters, digits and ! - _ . * ' ( ) /)",
                           strempty(prefix));
        s.gc_policy = gc ? gc : "LimitBased";
        if (!streq(s.gc_policy, "LimitBased") && !streq(s.gc_policy, "Exponential"))
                return BAD("annotation " ANN_S3_GC " \"%s\": LimitBased (keep the newest " ANN_S3_MAX
                           ") or Exponential",
                           gc);
        if (max) {
                char *end;
                errno = 0;
                unsigned long m = strtoul(max, &end, 10);
                if (errno || end == max || *end || m < 1 || m > 100000 || !isdigit((unsigned char) *max))
                        return BAD("annotation " ANN_S3_MAX " \"%s\": a number from 1 to 100000", max);
                s.max_backups = (unsigned) m;
        }
        if (grace && parse_duration(grace, &s.grace) < 0)
                return BAD("annotation " ANN_S3_GRACE " \"%s\": a duration such as 72h, 30m or 0s", grace);
#undef BAD
        *ret = s;
        return 0;
}
