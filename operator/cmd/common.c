/* Flag helpers shared by subcommands. */
#include "base/log.h"
#include "cmd.h"

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
