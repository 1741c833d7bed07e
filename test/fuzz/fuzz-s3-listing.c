/* What an S3 endpoint sends back as XML (operator/s3/s3.c): ListObjectsV2
 * pages (keys, sizes, ETags, LastModified times, continuation tokens),
 * error bodies and UploadIds, all read by the substring scanner and the
 * entity decoder. The input is an exact-size copy, so a read past its end is
 * an ASan report. */
#include <stdint.h>

#include "base/macro.h"
#include "s3/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const tags[] = {"Code", "Message", "UploadId", "ETag", "Key"};
        _cleanup_free_ char *xml = strndup((const char *) data, size), *next = NULL;
        S3ObjectList l = {};

        if (!xml)
                return 0;
        /* Pages append: parse the same one twice, as a listing of two pages would. */
        for (int page = 0; page < 2; page++) {
                next = mfree(next);
                if (s3_parse_list_page(xml, &l, &next) < 0)
                        break;
        }
        for (size_t i = 0; i < l.n; i++)
                if (!l.v[i].key)
                        abort();
        s3_object_list_done(&l);
        for (size_t t = 0; t < ELEMENTSOF(tags); t++) {
                size_t pos = 0, last = 0;
                for (char *v; (v = s3_xml_next(xml, tags[t], &pos)); last = pos) {
                        if (pos <= last || pos > size)
                                abort(); /* it must move on, and stay inside */
                        free(v);
                }
        }
        return 0;
}
