/* The one logging sink. stderr in klog layout by default; native journal
 * fields when $JOURNAL_STREAM names our stderr, so `journalctl -o verbose`
 * shows CODE_FILE/CODE_LINE/CONTROLLER as systemd tools do. */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

static int verbosity = 0;
static int use_journal = -1;
static const char *controller = NULL;

void log_set_verbosity(int v)
{
        verbosity = v;
}

int log_get_verbosity(void)
{
        return verbosity;
}

void log_set_controller(const char *name)
{
        controller = name;
}

static bool stderr_is_journal(void)
{
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev = 0, ino = 0;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t) dev && st.st_ino == (ino_t) ino;
}

void log_open(void)
{
        use_journal = stderr_is_journal();
}

bool log_level_enabled(LogLevel level)
{
        if (level == LOG_LEVEL_DEBUG)
                return verbosity >= 4;
        return true;
}

static const char *basename_of(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

/* Control characters as C escapes, in place: a message carries text other
 * programs wrote (API Status messages, etcd and S3 errors, a tool's output),
 * and a newline in it would start a line that looks like one of ours. */
static void escape_controls(char *msg, size_t size)
{
        char out[4096];
        size_t o = 0;
        const char *p = msg;

        while (*p && (unsigned char) *p >= 0x20 && *p != 0x7f)
                p++;
        if (!*p)
                return; /* nearly always: nothing to escape */
        for (p = msg; *p && o + 5 < sizeof out; p++) {
                unsigned char c = (unsigned char) *p;
                if (c >= 0x20 && c != 0x7f)
                        out[o++] = (char) c;
                else if (c == '\n' || c == '\r' || c == '\t') {
                        out[o++] = '\\';
                        out[o++] = (char) (c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
                } else
                        o += (size_t) snprintf(out + o, sizeof out - o, "\\x%02x", c);
        }
        out[o] = 0;
        (void) snprintf(msg, size, "%s", out);
}

int log_internal(LogLevel level, int error, const char *file, int line, const char *fmt, ...)
{
        static const char letters[] = {'E', 'W', 'I', 'I'};
        static const int priorities[] = {3, 4, 6, 7};
        char msg[4096];
        va_list ap;
        int saved = errno;

        if (!log_level_enabled(level))
                return -error;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (error > 0) {
                size_t n = strlen(msg);
                (void) snprintf(msg + n, sizeof msg - n, ": %s", strerror(error));
        }
        escape_controls(msg, sizeof msg);

        if (use_journal < 0)
                log_open();
        if (use_journal > 0) {
                (void) sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priorities[level], "CODE_FILE=%s",
                                       file, "CODE_LINE=%d", line, "CONTROLLER=%s", strempty(controller),
                                       error > 0 ? "ERRNO=%d" : NULL, error, NULL);
        } else {
                struct timeval tv;
                struct tm tm;
                (void) gettimeofday(&tv, NULL);
                (void) localtime_r(&tv.tv_sec, &tm);
                (void) fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] %s%s%s\n", letters[level],
                               tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                               (long) tv.tv_usec, (int) getpid(), basename_of(file), line,
                               controller ? controller : "", controller ? ": " : "", msg);
        }
        errno = saved;
        return -error;
}
