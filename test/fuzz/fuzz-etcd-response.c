/* etcd gateway response bodies: every parser on arbitrary JSON, plus the
 * error mapping for any HTTP status. */
#include <stdint.h>

#include "base/json.h"
#include "etcd/types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        cJSON *j = NULL;
        EtcdMemberList *l = NULL;
        EtcdStatus st = {};
        EtcdAlarm *alarms = NULL;
        size_t n = 0;
        uint64_t id = 0;
        const char *msg = NULL;

        if (size < 2 || json_parse((const char *) data + 2, size - 2, &j) < 0)
                return 0;
        if (etcd_parse_member_list(j, &l) >= 0) {
                EtcdMemberList *d = etcd_member_list_dup(l);
                for (size_t i = 0; i < l->n_members; i++)
                        (void) etcd_member_list_find_by_peer_url(
                                d, l->members[i].n_peer_urls ? l->members[i].peer_urls[0] : NULL);
                etcd_member_list_free(d);
                etcd_member_list_free(l);
        }
        if (etcd_parse_status(j, &st) >= 0)
                etcd_status_done(&st);
        if (etcd_parse_alarms(j, &alarms, &n) >= 0)
                free(alarms);
        (void) etcd_parse_added_member(j, &id);
        (void) etcd_parse_error(200 + data[0] + 256 * (data[1] & 1), j, &msg);
        const char *s = json_get_string(j, "url");
        (void) etcd_url_is_valid(s);
        cJSON_Delete(j);
        return 0;
}
