/* Running a tool to its end, and the clean stop on SIGTERM and SIGINT
 * (host/process.h). */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "process.h"

extern char **environ;

int host_command_run(const char *const argv[], char **ret_out)
{
        posix_spawn_file_actions_t fa;
        int pipefd[2] = {-1, -1}, status = 0, r;
        Buf out = BUF_INIT(0);
        bool too_much = false;
        pid_t pid;

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
