/* A backup's checksum file (backup-manifest.h). */
#include "backup-manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/macro.h"

#define MANIFEST_VERSION 1

static void to_hex(const unsigned char *d, size_t n, char *out)
{
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[d[i] >> 4];
                out[2 * i + 1] = hex[d[i] & 15];
        }
        out[2 * n] = 0;
}

int backup_file_sum(const char *path, BackupFileSum *ret)
{
        _cleanup_(closep) int fd = -EBADF;
        unsigned char md[EVP_MAX_MD_SIZE], buf[64 * 1024];
        unsigned int len = 0;
        uint64_t size = 0;
        int r = 0;

        assert_return(path && ret, -EINVAL);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(ctx);
                return -ENOMEM;
        }
        for (;;) {
                ssize_t k = read(fd, buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0)
                        break;
                if (EVP_DigestUpdate(ctx, buf, (size_t) k) != 1) {
                        r = -EIO;
                        break;
                }
                size += (uint64_t) k;
        }
        if (r >= 0 && EVP_DigestFinal_ex(ctx, md, &len) != 1)
                r = -EIO;
        EVP_MD_CTX_free(ctx);
        if (r < 0)
                return r;
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        (void) snprintf(ret->name, sizeof ret->name, "%s", base);
        to_hex(md, len, ret->sha256);
        ret->size = size;
        return 0;
}

char *backup_manifest_name_of(const char *snapshot_path)
{
        assert_return(snapshot_path, NULL);
        const char *base = strrchr(snapshot_path, '/') ? strrchr(snapshot_path, '/') + 1 : snapshot_path;
        if (!startswith(base, "snapshot_") || !endswith(base, ".db"))
                return NULL;
        const char *ts = base + strlen("snapshot_");
        return strdup_printf("%.*schecksums_%.*s.json", (int) (base - snapshot_path), snapshot_path,
                             (int) (strlen(ts) - strlen(".db")), ts);
}

static cJSON *file_json(const BackupFileSum *f)
{
        char size[24];
        cJSON *o = cJSON_CreateObject();
        (void) snprintf(size, sizeof size, "%" PRIu64, f->size);
        if (!o || !cJSON_AddStringToObject(o, "name", f->name) ||
            !cJSON_AddStringToObject(o, "sha256", f->sha256) || !cJSON_AddStringToObject(o, "size", size)) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

int backup_manifest_format(const BackupManifest *m, char **ret)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        char rev[24], id[24], created[24];

        assert_return(m && ret, -EINVAL);
        (void) snprintf(rev, sizeof rev, "%" PRIu64, m->revision);
        (void) snprintf(id, sizeof id, "%016" PRIx64, m->cluster_id);
        (void) snprintf(created, sizeof created, "%" PRId64, m->created);
        cJSON *snap = file_json(&m->snapshot), *tar = file_json(&m->tarball);
        if (!o || !snap || !tar) {
                cJSON_Delete(snap);
                cJSON_Delete(tar);
                return -ENOMEM;
        }
        if (!cJSON_AddStringToObject(o, "kind", BACKUP_MANIFEST_KIND) ||
            !cJSON_AddNumberToObject(o, "version", MANIFEST_VERSION)) {
                cJSON_Delete(snap);
                cJSON_Delete(tar);
                return -ENOMEM;
        }
        cJSON_AddItemToObject(o, "snapshot", snap);
        cJSON_AddItemToObject(o, "tarball", tar);
        if (!cJSON_AddStringToObject(o, "revision", rev) || !cJSON_AddStringToObject(o, "clusterID", id) ||
            !cJSON_AddStringToObject(o, "created", created) ||
            (m->mac[0] && !cJSON_AddStringToObject(o, "hmacSHA256", m->mac)))
                return -ENOMEM;
        _cleanup_free_ char *text = cJSON_Print(o);
        if (!text)
                return -ENOMEM;
        *ret = strdup_printf("%s\n", text);
        return *ret ? 0 : -ENOMEM;
}

static bool is_hex(const char *s, size_t len)
{
        if (!s || strlen(s) != len)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* A decimal string of digits only (sizes, revisions and times never pass through a double). */
static int get_decimal(const cJSON *o, const char *key, uint64_t max, uint64_t *ret)
{
        const char *s = json_string(cJSON_GetObjectItemCaseSensitive(o, key));
        uint64_t v = 0;
        if (!s || !*s || strlen(s) > 20 || strspn(s, "0123456789") != strlen(s) || parse_uint64(s, &v) < 0 ||
            v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_file(const cJSON *o, const char *what, BackupFileSum *ret, char *why, size_t n)
{
        const char *name = json_string(cJSON_GetObjectItemCaseSensitive(o, "name"));
        const char *sha = json_string(cJSON_GetObjectItemCaseSensitive(o, "sha256"));
        if (!cJSON_IsObject(o))
                return (void) snprintf(why, n, "\"%s\" is not an object", what), -EINVAL;
        if (!name || strlen(name) >= sizeof ret->name || strchr(name, '/'))
                return (void) snprintf(why, n, "%s.name is missing or not a file name", what), -EINVAL;
        if (!is_hex(sha, BACKUP_SHA256_HEX_LEN))
                return (void) snprintf(why, n, "%s.sha256 is not 64 lower-case hex digits", what), -EINVAL;
        if (get_decimal(o, "size", UINT64_MAX, &ret->size) < 0)
                return (void) snprintf(why, n, "%s.size is not a decimal string", what), -EINVAL;
        (void) snprintf(ret->name, sizeof ret->name, "%s", name);
        memcpy(ret->sha256, sha, sizeof ret->sha256);
        return 0;
}

int backup_manifest_parse(const char *text, size_t len, BackupManifest *ret, char *why, size_t n)
{
        _cleanup_(cJSON_Deletep) cJSON *o = NULL;
        BackupManifest m = {};
        uint64_t created = 0;
        int r;

        assert_return(text && ret && why, -EINVAL);
        if (len > BACKUP_MANIFEST_MAX)
                return (void) snprintf(why, n, "larger than %d bytes", BACKUP_MANIFEST_MAX), -E2BIG;
        r = json_parse(text, len, &o);
        if (r < 0 || !cJSON_IsObject(o))
                return (void) snprintf(why, n, "not a JSON object"), -EINVAL;
        if (!streq_ptr(json_string(cJSON_GetObjectItemCaseSensitive(o, "kind")), BACKUP_MANIFEST_KIND))
                return (void) snprintf(why, n, "kind is not \"" BACKUP_MANIFEST_KIND "\""), -EINVAL;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "version");
        if (!cJSON_IsNumber(v) || v->valuedouble != MANIFEST_VERSION)
                return (void) snprintf(why, n, "version is not %d", MANIFEST_VERSION), -EINVAL;
        if ((r = parse_file(cJSON_GetObjectItemCaseSensitive(o, "snapshot"), "snapshot", &m.snapshot, why,
                            n)) < 0 ||
            (r = parse_file(cJSON_GetObjectItemCaseSensitive(o, "tarball"), "tarball", &m.tarball, why, n)) <
                    0)
                return r;
        if (get_decimal(o, "revision", UINT64_MAX, &m.revision) < 0)
                return (void) snprintf(why, n, "revision is not a decimal string"), -EINVAL;
        if (get_decimal(o, "created", (uint64_t) INT64_MAX / 2, &created) < 0)
                return (void) snprintf(why, n, "created is not a decimal string of unix seconds"), -EINVAL;
        m.created = (int64_t) created;
        const char *id = json_string(cJSON_GetObjectItemCaseSensitive(o, "clusterID"));
        if (!is_hex(id, 16))
                return (void) snprintf(why, n, "clusterID is not 16 lower-case hex digits"), -EINVAL;
        m.cluster_id = strtoull(id, NULL, 16);
        const cJSON *mac = cJSON_GetObjectItemCaseSensitive(o, "hmacSHA256");
        if (mac && !is_hex(json_string(mac), BACKUP_SHA256_HEX_LEN))
                return (void) snprintf(why, n, "hmacSHA256 is not 64 lower-case hex digits"), -EINVAL;
        if (mac)
                memcpy(m.mac, mac->valuestring, sizeof m.mac);
        *ret = m;
        return 0;
}

/* What the MAC covers: every field, one a line, in a fixed order (not the JSON text, whose
 * layout a reader need not keep). */
static int mac_of(const BackupManifest *m, const char *key, char out[static BACKUP_SHA256_HEX_LEN + 1])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        _cleanup_free_ char *text = strdup_printf(
                BACKUP_MANIFEST_KIND " v%d\nsnapshot %s %s %" PRIu64 "\ntarball %s %s %" PRIu64
                                     "\nrevision %" PRIu64 "\nclusterID %016" PRIx64 "\ncreated %" PRId64
                                     "\n",
                MANIFEST_VERSION, m->snapshot.name, m->snapshot.sha256, m->snapshot.size, m->tarball.name,
                m->tarball.sha256, m->tarball.size, m->revision, m->cluster_id, m->created);
        if (!text)
                return -ENOMEM;
        if (!HMAC(EVP_sha256(), key, (int) strlen(key), (const unsigned char *) text, strlen(text), md,
                  &len))
                return -EIO;
        to_hex(md, len, out);
        return 0;
}

int backup_manifest_sign(BackupManifest *m, const char *key)
{
        assert_return(m && key, -EINVAL);
        if (strlen(key) < BACKUP_KEY_MIN)
                return -EINVAL;
        return mac_of(m, key, m->mac);
}

int backup_manifest_verify(const BackupManifest *m, const char *key)
{
        char want[BACKUP_SHA256_HEX_LEN + 1];
        int r;

        assert_return(m && key, -EINVAL);
        if (!m->mac[0])
                return -ENOKEY;
        if (strlen(key) < BACKUP_KEY_MIN)
                return -EINVAL;
        if ((r = mac_of(m, key, want)) < 0)
                return r;
        return CRYPTO_memcmp(want, m->mac, BACKUP_SHA256_HEX_LEN) == 0 ? 0 : -EBADMSG;
}

static int check_one(const BackupFileSum *want, const char *path, char *why, size_t n)
{
        BackupFileSum got = {};
        int r = backup_file_sum(path, &got);
        if (r < 0)
                return (void) snprintf(why, n, "cannot read %s: %s", path, strerror(-r)), r;
        if (got.size != want->size)
                return (void) snprintf(why, n, "%s has %" PRIu64 " bytes, the checksum file says %" PRIu64,
                                       path, got.size, want->size),
                       -EBADMSG;
        if (!streq(got.sha256, want->sha256))
                return (void) snprintf(why, n, "the SHA-256 of %s is %s, the checksum file says %s", path,
                                       got.sha256, want->sha256),
                       -EBADMSG;
        return 0;
}

int backup_manifest_check_files(const BackupManifest *m, const char *snapshot_path, const char *tarball_path,
                                char *why, size_t n)
{
        int r;
        assert_return(m && why, -EINVAL);
        if (snapshot_path && (r = check_one(&m->snapshot, snapshot_path, why, n)) < 0)
                return r;
        if (tarball_path && (r = check_one(&m->tarball, tarball_path, why, n)) < 0)
                return r;
        return 0;
}
