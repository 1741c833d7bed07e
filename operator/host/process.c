/* Running a tool to its end, and the clean stop on SIGTERM and SIGINT
 * (host/process.h). */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "process.h"

extern char **environ;

/* Whether `name` is a program posix_spawnp() would find: a path, or an executable file in
 * one of $PATH's directories. glibc's posix_spawnp() reports a failed exec as ENOENT only
 * where it can run the child in the parent's memory (CLONE_VFORK); elsewhere (valgrind runs
 * it as a fork) the child just exits 127. So a missing tool is found missing here, before
 * anything is spawned. */
static bool on_path(const char *name)
{
        if (strchr(name, '/'))
                return access(name, X_OK) == 0;
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");
                char full[PATH_MAX];
                int k = snprintf(full, sizeof full, "%.*s%s%s", (int) n, p, n ? "/" : "", name);
                struct stat st;
                if (k > 0 && (size_t) k < sizeof full && stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
                    access(full, X_OK) == 0)
                        return true;
                p += n;
                if (*p == ':')
                        p++;
        }
        return false;
}

int host_command_run(const char *const argv[], char **ret_out)
{
        posix_spawn_file_actions_t fa;
        int pipefd[2] = {-1, -1}, status = 0, r;
        Buf out = BUF_INIT(0);
        bool too_much = false;
        pid_t pid;

        if (!on_path(argv[0]))
                return -ENOENT;
        if (ret_out && pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_init(&fa);
        if (ret_out)
                posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        r = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *) argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (ret_out)
                (void) close(pipefd[1]);
        if (r != 0) {
                if (ret_out)
                        (void) close(pipefd[0]);
                return -r;
        }
        if (ret_out) {
                char chunk[4096];
                ssize_t k;
                /* Read on to the end past the cap, so the child is never stuck writing. */
                while ((k = read(pipefd[0], chunk, sizeof chunk)) > 0 || (k < 0 && errno == EINTR))
                        if (k > 0 && (too_much || out.len + (size_t) k > HOST_COMMAND_OUTPUT_MAX ||
                                      buf_append(&out, chunk, (size_t) k) < 0))
                                too_much = true;
                (void) close(pipefd[0]);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        buf_free(&out);
                        return -errno;
                }
        if (too_much) { /* never half an answer taken for the whole one (review L8) */
                buf_free(&out);
                return -E2BIG;
        }
        if (ret_out) {
                if (buf_append(&out, "", 1) < 0) {
                        buf_free(&out);
                        return -ENOMEM;
                }
                *ret_out = out.data ? out.data : strdup("");
                if (!*ret_out)
                        return -ENOMEM;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        log_info("received signal %u, exiting", si->ssi_signo);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int host_exit_on_signals(Loop *l)
{
        sd_event *e = loop_get_event(l);
        sigset_t mask;
        int r;

        assert_return(l, -EINVAL);
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        if ((r = sd_event_add_signal(e, NULL, SIGTERM, on_signal, NULL)) < 0 ||
            (r = sd_event_add_signal(e, NULL, SIGINT, on_signal, NULL)) < 0)
                return r;
        return 0;
}
