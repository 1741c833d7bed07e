/* `cluster-etcd-operator install-host-tools`: what the etcd pod's
 * etcd-resources-copy container runs to put this binary on the master's host,
 * where the disaster-recovery scripts in /usr/local/bin (cluster-backup.sh,
 * cluster-restore.sh, ...) call it, also when the cluster's API is gone.
 *
 * The binary is linked against the image's shared libraries (libcurl,
 * OpenSSL, c-ares, cJSON, libmicrohttpd, libsystemd, libyaml), which a host
 * (RHCOS) does not carry. So the host gets the binary together with every
 * library it runs with and the image's dynamic loader, in
 * DIR/.cluster-etcd-operator-<digest>/, and DIR/cluster-etcd-operator is a
 * small script that starts it through that loader, with that directory as its
 * only library path (--inhibit-cache: not the host's ld.so.cache either).
 * The libraries are the ones this process runs with (dl_iterate_phdr), so the
 * set is right for whatever build installs it.
 *
 * Safety: the new copy is complete (each file fsynced, the directory renamed
 * into place) and started once (--version through its loader) before the
 * script is replaced by a rename; a copy that does not start leaves the
 * installed one as it was. The copy the old script named is kept (a command
 * started just before may still be loading it); older copies are removed. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <link.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "host/fs.h"
#include "host/process.h"
#include "node-util.h"
#include "node.h"

#define TOOL         "cluster-etcd-operator"
#define COPY_PREFIX  ".cluster-etcd-operator-"
#define TMP_PREFIX   ".cluster-etcd-operator-tmp-"
#define MAX_OBJECTS  64
#define DIGEST_CHARS 16
#define STALE_TMP    (3600) /* s: a temporary copy older than this was left by a run that died */

typedef struct Objects {
        uintptr_t main_addr;     /* an address inside this binary's first loaded segment */
        char *exe;               /* this binary */
        char *interp;            /* its dynamic loader (PT_INTERP) */
        char *libs[MAX_OBJECTS]; /* every shared object loaded, the loader among them */
        size_t n;
        bool overflow;
} Objects;

static void objects_done(Objects *o)
{
        free(o->exe);
        free(o->interp);
        for (size_t i = 0; i < o->n; i++)
                free(o->libs[i]);
}

static const char *base_name(const char *p)
{
        const char *s = strrchr(p, '/');
        return s ? s + 1 : p;
}

static int collect(struct dl_phdr_info *info, size_t size, void *userdata)
{
        Objects *o = userdata;
        (void) size;

        if (!info->dlpi_name || !*info->dlpi_name) {
                /* The main program: its PT_INTERP names the loader. */
                for (int i = 0; i < info->dlpi_phnum; i++) {
                        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                        if (ph->p_type == PT_INTERP && !o->interp)
                                o->interp = strdup((const char *) (info->dlpi_addr + ph->p_vaddr));
                        if (ph->p_type == PT_LOAD && !o->main_addr)
                                o->main_addr = info->dlpi_addr + ph->p_vaddr;
                }
                return 0;
        }
        if (info->dlpi_name[0] != '/') /* the vDSO: the kernel's, not a file */
                return 0;
        for (size_t i = 0; i < o->n; i++)
                if (streq(base_name(o->libs[i]), base_name(info->dlpi_name)))
                        return 0;
        if (o->n >= MAX_OBJECTS) {
                o->overflow = true;
                return 0;
        }
        o->libs[o->n] = strdup(info->dlpi_name);
        if (o->libs[o->n])
                o->n++;
        return 0;
}

/* The file mapped at `addr` (/proc/self/maps): this binary's path also when it was started
 * through a loader (`ld.so BINARY`, as the installed script does), where /proc/self/exe is
 * the loader. */
static char *mapped_file(uintptr_t addr)
{
        _cleanup_(fclosep) FILE *f = fopen("/proc/self/maps", "re");
        char line[PATH_MAX + 128];

        while (f && fgets(line, sizeof line, f)) {
                unsigned long start, end;
                int path_at = -1;
                if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &path_at) < 2 || path_at < 0)
                        continue;
                if (addr < start || addr >= end || line[path_at] != '/')
                        continue;
                line[strcspn(line, "\n")] = 0;
                return strdup(line + path_at);
        }
        return NULL;
}

static int objects_get(Objects *o)
{
        (void) dl_iterate_phdr(collect, o);
        o->exe = o->main_addr ? mapped_file(o->main_addr) : NULL;
        if (!o->exe)
                return log_error_errno(ENOENT, "cannot tell where this binary is (/proc/self/maps)");
        if (o->overflow)
                return log_error_errno(E2BIG, "more than %d shared objects loaded", MAX_OBJECTS);
        if (!o->interp)
                return log_error_errno(ENOEXEC,
                                       "%s names no dynamic loader (PT_INTERP): a static build needs no "
                                       "install-host-tools; copy it as it is",
                                       o->exe);
        if (streq(base_name(o->exe), base_name(o->interp)))
                return log_error_errno(ENOEXEC, "%s is the loader, not this binary", o->exe);
        for (size_t i = 0; i < o->n; i++)
                if (streq(base_name(o->libs[i]), base_name(o->interp)))
                        return 0;
        return log_error_errno(ENOENT, "the loader %s is not among the loaded objects", o->interp);
}

static int hash_file(EVP_MD_CTX *md, const char *path, const char *name)
{
        _cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[1 << 16];
        ssize_t n;

        if (fd < 0)
                return log_error_errno(errno, "cannot read %s", path);
        if (EVP_DigestUpdate(md, name, strlen(name) + 1) != 1)
                return -EIO;
        while ((n = read(fd, buf, sizeof buf)) > 0)
                if (EVP_DigestUpdate(md, buf, (size_t) n) != 1)
                        return -EIO;
        return n < 0 ? log_error_errno(errno, "cannot read %s", path) : 0;
}

/* A digest of every file and the name it gets: the copy's directory name. */
static int objects_digest(const Objects *o, char ret[static DIGEST_CHARS + 1])
{
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        unsigned char d[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        int r = -EIO;

        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
                goto out;
        if ((r = hash_file(md, o->exe, TOOL)) < 0)
                goto out;
        for (size_t i = 0; i < o->n; i++)
                if ((r = hash_file(md, o->libs[i], base_name(o->libs[i]))) < 0)
                        goto out;
        r = EVP_DigestFinal_ex(md, d, &len) == 1 && len >= DIGEST_CHARS / 2 ? 0 : -EIO;
        for (unsigned i = 0; r == 0 && i < DIGEST_CHARS / 2; i++)
                (void) snprintf(ret + 2 * i, 3, "%02x", d[i]);
out:
        EVP_MD_CTX_free(md);
        return r;
}

static int copy_file(const char *src, int dir_fd, const char *dir, const char *name, mode_t mode)
{
        _cleanup_(closep) int in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return log_error_errno(errno, "cannot read %s", src);
        _cleanup_(closep) int out = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (out < 0)
                return log_error_errno(errno, "cannot create %s/%s", dir, name);
        char buf[1 << 16];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t) (n - off));
                        if (w < 0)
                                return log_error_errno(errno, "cannot write %s/%s", dir, name);
                        off += w;
                }
        if (n < 0)
                return log_error_errno(errno, "cannot read %s", src);
        if (fchmod(out, mode) < 0 || fsync(out) < 0)
                return log_error_errno(errno, "cannot write %s/%s", dir, name);
        return 0;
}

/* DIR/.cluster-etcd-operator-tmp-<pid>/{cluster-etcd-operator,lib/...}, then renamed to `copy`. */
static int make_copy(const Objects *o, const char *dir, const char *copy)
{
        _cleanup_free_ char *tmp = strdup_printf("%s/" TMP_PREFIX "%d", dir, (int) getpid());
        _cleanup_free_ char *lib = tmp ? strdup_printf("%s/lib", tmp) : NULL;
        int r;

        if (!lib)
                return log_error_errno(ENOMEM, "out of memory");
        (void) host_remove_tree(dir, base_name(tmp));
        if (mkdir(tmp, 0755) < 0 || mkdir(lib, 0755) < 0)
                return log_error_errno(errno, "cannot create %s", lib);
        _cleanup_(closep) int tmp_fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(closep) int lib_fd = open(lib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (tmp_fd < 0 || lib_fd < 0)
                r = log_error_errno(errno, "cannot open %s", lib);
        else
                r = copy_file(o->exe, tmp_fd, tmp, TOOL, 0755);
        for (size_t i = 0; r >= 0 && i < o->n; i++)
                r = copy_file(o->libs[i], lib_fd, lib, base_name(o->libs[i]), 0755);
        if (r >= 0 && (fsync(lib_fd) < 0 || fsync(tmp_fd) < 0))
                r = log_error_errno(errno, "cannot write %s", tmp);
        if (r >= 0 && rename(tmp, copy) < 0)
                r = log_error_errno(errno, "cannot rename %s to %s", tmp, copy);
        if (r < 0) {
                (void) host_remove_tree(dir, base_name(tmp));
                return r;
        }
        return fsync_path(dir);
}

/* The copy started once, as the script will start it. */
static int check_copy(const char *copy, const char *loader)
{
        _cleanup_free_ char *ld = strdup_printf("%s/lib/%s", copy, loader);
        _cleanup_free_ char *lib = strdup_printf("%s/lib", copy);
        _cleanup_free_ char *bin = strdup_printf("%s/" TOOL, copy);
        _cleanup_free_ char *out = NULL;
        if (!ld || !lib || !bin)
                return log_error_errno(ENOMEM, "out of memory");
        const char *argv[] = {ld, "--library-path", lib, "--inhibit-cache", bin, "--version", NULL};
        int r = host_command_run(argv, &out);
        if (r != 0)
                return log_error_errno(r < 0 ? r : ENOEXEC,
                                       "%s does not start through its own loader (exit %d); the installed "
                                       "tools are left as they were",
                                       copy, r);
        return 0;
}

/* The copy the installed script names (NULL: none, or not a script of ours). */
static char *script_copy(const char *script)
{
        _cleanup_free_ char *text = NULL;
        if (read_full_file(script, 64 * 1024, &text, NULL) < 0)
                return NULL;
        const char *p = strstr(text, "\nd=");
        if (!p)
                return NULL;
        p += 3;
        size_t n = strcspn(p, "\n");
        _cleanup_free_ char *path = strndup(p, n);
        return path ? strdup(base_name(path)) : NULL;
}

static int write_script(const char *script, const char *copy, const char *loader)
{
        _cleanup_free_ char *text = strdup_printf(
                "#!/bin/sh\n"
                "### Created by cluster-etcd-operator. DO NOT edit.\n"
                "# cluster-etcd-operator for this host's disaster-recovery scripts: the binary with the\n"
                "# libraries and the loader of the image it came from (install-host-tools), so that it\n"
                "# needs none of the host's.\n"
                "d=%s\n"
                "exec \"$d/lib/%s\" --library-path \"$d/lib\" --inhibit-cache --argv0 \"$0\" \"$d/" TOOL
                "\" \"$@\"\n",
                copy, loader);
        if (!text)
                return log_error_errno(ENOMEM, "out of memory");
        int r = write_file_atomic(script, text, strlen(text), 0755);
        if (r < 0)
                return log_error_errno(r, "cannot write %s", script);
        return 0;
}

/* Every copy but `keep` and `previous`, and temporary copies a dead run left. */
static void remove_old_copies(const char *dir, const char *keep, const char *previous)
{
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        time_t now = time(NULL);

        while (d && (de = readdir(d))) {
                struct stat st;
                if (!startswith(de->d_name, COPY_PREFIX) || streq(de->d_name, keep) ||
                    streq_ptr(de->d_name, previous))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (startswith(de->d_name, TMP_PREFIX) && now - st.st_mtime < STALE_TMP)
                        continue; /* another run's copy in progress */
                log_info("removing %s/%s (an older copy)", dir, de->d_name);
                int r = host_remove_tree(dir, de->d_name);
                if (r < 0)
                        log_warning_errno(r, "cannot remove %s/%s", dir, de->d_name);
        }
}

static int install(const char *dir)
{
        _cleanup_(objects_done) Objects o = {};
        char digest[DIGEST_CHARS + 1] = {};
        int r;

        if (objects_get(&o) < 0)
                return EXIT_RUNTIME;
        if ((r = objects_digest(&o, digest)) < 0) {
                log_error_errno(r, "cannot hash %s and its libraries", o.exe);
                return EXIT_RUNTIME;
        }
        const char *loader = base_name(o.interp);
        _cleanup_free_ char *name = strdup_printf(COPY_PREFIX "%s", digest);
        _cleanup_free_ char *copy = name ? strdup_printf("%s/%s", dir, name) : NULL;
        _cleanup_free_ char *script = strdup_printf("%s/" TOOL, dir);
        if (!copy || !script)
                return log_error_errno(ENOMEM, "out of memory"), EXIT_RUNTIME;
        struct stat st;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                log_error("--dir %s: not a directory (the host's /usr/local/bin, mounted into the pod)",
                          dir);
                return EXIT_USAGE;
        }
        if (access(copy, F_OK) == 0)
                log_info("%s is there already", copy);
        else if (make_copy(&o, dir, copy) < 0)
                return EXIT_RUNTIME;
        if (check_copy(copy, loader) < 0)
                return EXIT_RUNTIME;
        _cleanup_free_ char *previous = script_copy(script);
        if (!streq_ptr(previous, name)) {
                if (write_script(script, copy, loader) < 0)
                        return EXIT_RUNTIME;
                log_info("installed %s: %s with %zu libraries and its loader %s", script, copy, o.n, loader);
        } else
                log_info("%s runs %s already", script, copy);
        remove_old_copies(dir, name, previous);
        return EXIT_OK;
}

static void help(FILE *f)
{
        (void) fprintf(f,
                       "Usage: cluster-etcd-operator install-host-tools [--dir DIR]\n"
                       "\n"
                       "Installs this binary for the host's disaster-recovery scripts: DIR/" COPY_PREFIX
                       "<digest>/\n"
                       "holds it with every shared library it runs with and its dynamic loader, and\n"
                       "DIR/" TOOL " is a script that starts it through them, so it needs\n"
                       "none of the host's libraries. The new copy is started once before the script is\n"
                       "replaced; the copy the script named before is kept, older ones are removed.\n"
                       "\n"
                       "  --dir DIR   the host's /usr/local/bin as mounted here (default /usr/local/bin)\n"
                       "  -v=N        log verbosity\n"
                       "\n"
                       "Exit codes: 0 installed, 1 runtime failure, 2 usage error.\n");
}

static int host_tools_main(int argc, char *argv[])
{
        static const struct option options[] = {
                {"dir", required_argument, NULL, 'd'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        const char *dir = "/usr/local/bin";
        int c;

        argc = cmd_take_verbosity(argc, argv);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case 'd':
                        dir = optarg;
                        break;
                default:
                        nodecmd_flag_error("install-host-tools", c, argv);
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("install-host-tools: unexpected argument %s (see --help)", argv[optind]);
                return EXIT_USAGE;
        }
        if (dir[0] != '/') {
                log_error("--dir %s: must be absolute (the script names the copy by its path)", dir);
                return EXIT_USAGE;
        }
        return install(dir);
}

const Command cmd_install_host_tools = {
        .name = "install-host-tools",
        .summary = "put this binary, its libraries and its loader on the host for the DR scripts",
        .run = host_tools_main,
};
