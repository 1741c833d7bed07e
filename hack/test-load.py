#!/usr/bin/env python3
"""Measures what each running ctest test costs the machine, to choose the suite's schedule
(issue 38): every INTERVAL seconds it reads /proc, charges each process's CPU time since the
last look to the test it descends from (the direct child of ctest whose command line it is),
and keeps each test's peak resident memory. It stops when the ctest process it watches exits
and prints, per test: wall seconds seen, CPU seconds, average cores used and peak RSS.

    python3 hack/test-load.py [--by-command] CTEST_PID [INTERVAL] > load.txt

A process is charged to the test it was first seen under, also after it is re-parented to
init; one never seen under a test is not counted. With --by-command it also prints, per
test, the CPU seconds of each command (the executable's name). A process's CPU time is charged when it is seen, so a process
that lived less than INTERVAL is missed: the figures are a lower bound."""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def snapshot():
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        ppid = int(rest[1])
        cpu = (int(rest[11]) + int(rest[12])) / HZ  # utime + stime
        rss = int(rest[21]) * PAGE
        starttime = int(rest[19])
        procs[int(d)] = (ppid, cpu, rss, starttime, cmd)
    return procs


def test_name(cmd):
    """A short name for a test's command line: the script or binary and its first argument."""
    words = [w for w in cmd.split() if not w.startswith("-")]
    for i, w in enumerate(words):
        base = os.path.basename(w)
        if base.startswith("with-kube") and i + 1 < len(words):
            return os.path.basename(words[i + 1])  # the test that the wrapper runs
        if base.endswith((".py", ".sh")) or base.startswith(("test-", "test_")):
            return " ".join([base] + words[i + 2:i + 4])  # words[i + 1] is the build directory
    return cmd[:60]


def main():
    args = sys.argv[1:]
    by_command = "--by-command" in args
    args = [a for a in args if a != "--by-command"]
    ctest = int(args[0])
    interval = float(args[1]) if len(args) > 1 else 2.0
    owner = {}  # (pid, starttime) -> test name, once seen under a test
    seen = {}  # (pid, starttime) -> cpu charged so far
    tests = {}  # name -> [first, last, cpu, peak_rss]
    commands = {}  # (test, command) -> cpu
    t0 = time.monotonic()
    while os.path.exists("/proc/%d" % ctest):
        procs = snapshot()
        now = time.monotonic() - t0
        per_test_rss = {}
        for pid, (ppid, cpu, rss, start, cmd) in procs.items():
            key = (pid, start)
            name = owner.get(key)
            if name is None:
                p, hops = pid, 0  # walk up to the direct child of ctest
                while p in procs and procs[p][0] not in (ctest, 0, 1) and hops < 64:
                    p, hops = procs[p][0], hops + 1
                if p == ctest or p not in procs or procs[p][0] != ctest:
                    continue
                name = owner[key] = test_name(procs[p][4])
            delta = max(cpu - seen.get(key, 0.0), 0.0)
            seen[key] = cpu
            t = tests.setdefault(name, [now, now, 0.0, 0])
            t[1] = now
            t[2] += delta
            exe = os.path.basename(cmd.split()[0]) if cmd else "?"
            if exe.startswith("python"):
                exe = "python:" + os.path.basename(cmd.split()[1]) if len(cmd.split()) > 1 else exe
            commands[(name, exe)] = commands.get((name, exe), 0.0) + delta
            per_test_rss[name] = per_test_rss.get(name, 0) + rss
        for name, rss in per_test_rss.items():
            tests[name][3] = max(tests[name][3], rss)
        time.sleep(interval)
    print("%-60s %8s %8s %6s %8s" % ("test", "wall_s", "cpu_s", "cores", "rss_MiB"))
    for name, (first, last, cpu, rss) in sorted(tests.items(), key=lambda kv: -kv[1][2]):
        wall = max(last - first, interval)
        print("%-60s %8.0f %8.1f %6.2f %8.0f" % (name[:60], wall, cpu, cpu / wall, rss / 2**20))
        if by_command:
            mine = sorted(((c, v) for (n, c), v in commands.items() if n == name), key=lambda kv: -kv[1])
            for c, v in mine[:10]:
                if v >= 1.0:
                    print("    %-56s %8s %8.1f" % (c[:56], "", v))


if __name__ == "__main__":
    main()
