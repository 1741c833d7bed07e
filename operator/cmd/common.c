/* Flag helpers shared by subcommands. */
#include <stdarg.h>

#include "base/log.h"
#include "cmd.h"

int cmd_usage_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        _cleanup_free_ char *s = NULL;

        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        log_error("%s: %s", cmd, n < 0 ? fmt : s);
        return EXIT_USAGE;
}

bool cmd_parse_verbosity(const char *arg)
{
        const char *v = NULL;
        char *end = NULL;

        if (startswith(arg, "--v="))
                v = arg + 4;
        else if (startswith(arg, "-v="))
                v = arg + 3;
        else if (startswith(arg, "-v") && arg[2] >= '0' && arg[2] <= '9')
                v = arg + 2;
        if (!v)
                return false;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 10)
                return false;
        log_set_verbosity((int) n);
        return true;
}

int cmd_take_verbosity(int argc, char *argv[])
{
        int n = 0;
        for (int i = 0; i < argc; i++)
                if (i == 0 || !cmd_parse_verbosity(argv[i]))
                        argv[n++] = argv[i];
        argv[n] = NULL;
        return n;
}
