"""Container shim: what a container runtime does between the kubelet and the command.

Run as `python3 -I -S shim.py SPEC.json|'{json}'` by the kubelet, with stdout/stderr already
pointing at the container's log file. It must not import anything outside the standard
library (it runs with -I -S so that it starts in milliseconds).

run mode (a container):
  1. PR_SET_PDEATHSIG(SIGKILL): the shim dies with the kubelet thread that spawned it.
  2. unshare(mount | PID | UTS): a private mount namespace (propagation private, so
     nothing leaks to the host), a PID namespace (when its init dies the kernel kills
     every process left in it, so no grandchild outlives the container) and a UTS
     namespace with the pod's hostname.
  3. bind-mount every volume at its mountPath, shallowest first (so a mountPath nested in
     another volume is created inside that volume, not on the real filesystem);
     directories missing on the real filesystem are created (only directories, never
     files); read-only mounts are remounted read-only.
  4. fork the namespace's init (this same program): it mounts a /proc of the new PID
     namespace, forwards SIGTERM/SIGINT/... to the command, reaps orphans, and exits with
     the command's status. The command itself is
     forked from the init with default signal dispositions and PDEATHSIG(SIGKILL).
  5. the outer shim forwards signals to the init and exits with its status.
  The status pipe (fd given in the spec) carries "pid <init's host PID>" and, for a
  failure before the command runs, "error <message>" (the shim then exits 128, which the
  kubelet reports as StartError like containerd does). It reaches EOF when the command
  has been exec'd.

exec mode (an exec probe): setns() into the mount, UTS and PID namespaces of a running
container (by its init's PID), PDEATHSIG, fork and exec the command.
"""

import ctypes
import json
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWPID = 0x20000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
O_PATH = 0o10000000
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2, signal.SIGWINCH)

_libc = ctypes.CDLL(None, use_errno=True)


class StartError(Exception):
    pass


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise StartError("%s: %s" % (what, os.strerror(e)))


def _pdeathsig(sig=signal.SIGKILL):
    _libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def _mount(src, dst, flags):
    return _libc.mount(src.encode() if src else None, dst.encode(), None, flags, None)


def _setup_mounts(mounts):
    _check(_mount(None, "/", MS_REC | MS_PRIVATE), "make / private")
    # open every source first: a mountPath that covers a later source's path (say /tmp)
    # must not change what that source means
    srcs = {}
    for i, m in enumerate(mounts):
        try:
            srcs[i] = os.open(m["source"], O_PATH | os.O_CLOEXEC)
        except OSError as e:
            raise StartError("volume %s: host path %s: %s" % (m.get("name"), m["source"],
                                                              e.strerror))
    bound = []
    order = sorted(range(len(mounts)),
                   key=lambda i: len(os.path.normpath(mounts[i]["mountPath"]).split("/")))
    for i in order:
        m = mounts[i]
        dst = os.path.normpath(m["mountPath"])
        src_is_dir = os.path.isdir("/proc/self/fd/%d" % srcs[i])
        if not os.path.lexists(dst):
            nested = any(dst == b or dst.startswith(b.rstrip("/") + "/") for b in bound)
            if src_is_dir:
                os.makedirs(dst, exist_ok=True)
            elif nested:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                open(dst, "a").close()
            else:
                raise StartError("mountPath %s does not exist; kubelet-sim creates only "
                                 "directories on the real filesystem, never files" % dst)
        _check(_mount("/proc/self/fd/%d" % srcs[i], dst, MS_BIND | MS_REC),
               "bind %s at %s" % (m["source"], dst))
        if m.get("readOnly"):
            _check(_mount(None, dst, MS_REMOUNT | MS_BIND | MS_RDONLY),
                   "remount %s read-only" % dst)
        bound.append(dst)
    for fd in srcs.values():
        os.close(fd)


def _resolve(argv, env, bindir, rootfs=None, mounts=()):
    """Commands naming an absolute path that does not exist (an image path such as
    /usr/bin/cluster-etcd-operator) resolve through the node's binary map by basename.
    With an image root filesystem (strict images), a command is what the image has: an
    absolute path inside it (or inside a volume), a bare name on its PATH, else the
    runtime's error."""
    cmd = argv[0] if argv else ""
    if rootfs and cmd:
        if cmd.startswith("/"):
            if any(m.get("mountPath") and (cmd + "/").startswith(m["mountPath"].rstrip("/") + "/")
                   for m in mounts) and os.path.exists(cmd):
                return argv
            inside = os.path.join(rootfs, cmd.lstrip("/"))
            if os.path.exists(inside):
                return [inside] + argv[1:]
            raise StartError('exec: "%s": stat %s: no such file or directory' % (cmd, cmd))
        if "/" not in cmd:
            for d in env.get("PATH", "").split(":"):
                p = os.path.join(d, cmd)
                if d and os.path.isfile(p) and os.access(p, os.X_OK):
                    return argv
            raise StartError('exec: "%s": executable file not found in $PATH' % cmd)
        return argv
    if "/" in cmd and not os.path.exists(cmd) and bindir:
        alt = os.path.join(bindir, os.path.basename(cmd))
        if os.path.exists(alt):
            return [alt] + argv[1:]
    return argv


def _exec_command(spec, status_fd):
    """In the forked command process: never returns."""
    try:
        for s in range(1, signal.NSIG):
            try:
                signal.signal(s, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        _pdeathsig()
        wd = spec.get("workingDir") or "/"
        try:
            os.chdir(wd)
        except OSError as e:
            raise StartError("chdir to %s: %s" % (wd, e.strerror))
        argv = _resolve(spec["argv"], spec["env"], spec.get("bindir"), spec.get("rootfs"),
                        spec.get("mounts") or ())
        if not argv or not argv[0]:
            raise StartError("no command given (images are not modelled: set command or args)")
        os.set_inheritable(status_fd, False)  # closes on a successful exec: EOF = started
        try:
            os.execvpe(argv[0], argv, spec["env"])
        except OSError as e:
            raise StartError("exec: \"%s\": %s" % (argv[0], e.strerror))
    except StartError as e:
        _report(status_fd, str(e))
        os._exit(128)
    except BaseException as e:  # noqa: BLE001 - never return into the init's code
        _report(status_fd, "shim: %r" % (e,))
        os._exit(128)


def _report(fd, msg):
    try:
        os.write(fd, ("error " + msg.replace("\n", " ")).encode()[:4000] + b"\n")
    except OSError:
        pass
    try:
        sys.stderr.write("kubelet-sim: %s\n" % msg)
        sys.stderr.flush()
    except OSError:
        pass


def _status_of(st):
    if os.WIFEXITED(st):
        return os.WEXITSTATUS(st)
    if os.WIFSIGNALED(st):
        return 128 + os.WTERMSIG(st)
    return 255


def _init(spec, status_fd):
    """PID 1 of the container's PID namespace."""
    child = [None]

    def forward(sig, _frame):
        if child[0]:
            try:
                os.kill(child[0], sig)
            except ProcessLookupError:
                pass

    # FORWARDED signals are still blocked (inherited from the shim): one that arrives
    # before the command exists stays pending until it can be forwarded
    for s in FORWARDED:
        signal.signal(s, forward)
    # a /proc of the container's PID namespace (the mount namespace is the container's)
    if _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        _report(status_fd, "mount /proc: %s" % os.strerror(ctypes.get_errno()))
        os._exit(128)
    pid = os.fork()
    if pid == 0:
        _exec_command(spec, status_fd)
    child[0] = pid
    os.close(status_fd)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    while True:
        try:
            got, st = os.wait()
        except ChildProcessError:
            os._exit(255)
        if got == pid:
            # leaving kills everything else in the namespace, like a container's end
            os._exit(_status_of(st))


def run(spec):
    status_fd = spec["statusFd"]
    # a stop request that arrives while we set up is kept pending and forwarded later
    # (a PID namespace's init would silently drop it without a handler)
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    _pdeathsig()
    if os.getppid() != spec["kubeletPid"]:
        os._exit(137)  # the kubelet is gone already
    try:
        flags = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWUTS if spec.get("hostname") else 0)
        _check(_libc.unshare(flags), "unshare")
        if spec.get("hostname"):
            h = spec["hostname"].encode()[:64]
            _check(_libc.sethostname(h, len(h)), "sethostname")
        _setup_mounts(spec.get("mounts") or [])
    except (StartError, OSError) as e:
        _report(status_fd, str(e))
        os._exit(128)
    init = [None]

    def forward(sig, _frame):
        if init[0]:
            try:
                os.kill(init[0], sig)
            except ProcessLookupError:
                pass

    for s in FORWARDED:
        signal.signal(s, forward)
    pid = os.fork()
    if pid == 0:
        _pdeathsig()
        _init(spec, status_fd)
        os._exit(255)
    init[0] = pid
    try:
        os.write(status_fd, b"pid %d\n" % pid)
    except OSError:
        pass
    os.close(status_fd)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    while True:
        try:
            _, st = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(255)
    os._exit(_status_of(st))


def exec_in(spec):
    """An exec probe: enter the container's mount, UTS and PID namespaces (through the
    namespace init's PID) and run the command, like `kubectl exec`."""
    _pdeathsig()
    if os.getppid() != spec["kubeletPid"]:
        os._exit(137)
    try:
        target = spec["targetPid"]
        fds = [(os.open("/proc/%d/ns/%s" % (target, ns), os.O_RDONLY), flag, ns)
               for ns, flag in (("mnt", CLONE_NEWNS), ("uts", CLONE_NEWUTS),
                                ("pid", CLONE_NEWPID))]
        for fd, flag, ns in fds:
            _check(_libc.setns(fd, flag), "setns %s" % ns)
            os.close(fd)
        os.setsid()  # the kubelet kills the probe's process group on timeout
    except (StartError, OSError) as e:
        sys.stderr.write("kubelet-sim exec: %s\n" % e)
        os._exit(126)
    pid = os.fork()  # the PID namespace applies to children only
    if pid == 0:
        try:
            _pdeathsig()
            for s in range(1, signal.NSIG):
                try:
                    signal.signal(s, signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
            os.chdir(spec.get("workingDir") or "/")
            argv = _resolve(spec["argv"], spec["env"], spec.get("bindir"))
            os.execvpe(argv[0], argv, spec["env"])
        except (StartError, OSError) as e:
            sys.stderr.write("kubelet-sim exec: %s\n" % e)
        os._exit(126)
    while True:
        try:
            _, st = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(255)
    os._exit(_status_of(st))


def main():
    arg = sys.argv[1]
    if arg.startswith("{"):
        spec = json.loads(arg)
    else:
        with open(arg) as f:
            spec = json.load(f)
    if spec.get("mode") == "exec":
        exec_in(spec)
    else:
        run(spec)


if __name__ == "__main__":
    main()
