"""The container runtime: starts containers through the shim (shim.py) and stops them.

Every child is forked by one long-lived thread (Spawner): PR_SET_PDEATHSIG fires when
the *thread* that forked a child exits, so forking from short-lived threads would kill
containers early. A container is the shim process (the kubelet's child, tracked by PID);
inside its PID namespace run the shim's init and the command.
"""

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time

from .log import log

SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim.py")


class Spawner:
    def __init__(self):
        self.q = queue.Queue()
        t = threading.Thread(target=self._loop, name="spawner", daemon=True)
        t.start()

    def _loop(self):
        while True:
            fn, box, ev = self.q.get()
            try:
                box.append((True, fn()))
            except BaseException as e:  # noqa: BLE001 - handed back to the caller
                box.append((False, e))
            ev.set()

    def call(self, fn):
        box, ev = [], threading.Event()
        self.q.put((fn, box, ev))
        ev.wait()
        ok, val = box[0]
        if not ok:
            raise val
        return val


class Process:
    """One running container instance."""

    def __init__(self, proc, init_pid, started_at):
        self.proc = proc
        self.pid = proc.pid
        self.init_pid = init_pid
        self.started_at = started_at
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = 128 - rc if rc < 0 else rc
        return self.returncode

    def signal(self, sig):
        if self.poll() is not None:
            return
        try:
            if sig == signal.SIGKILL and self.init_pid:
                # killing the namespace's init makes the kernel empty the namespace before
                # the shim sees init exit, so the shim's exit means "nothing left running"
                os.kill(self.init_pid, signal.SIGKILL)
            else:
                self.proc.send_signal(sig)
        except ProcessLookupError:
            pass

    def on_exit(self, callback):
        """Call callback() from a thread of its own once the shim has exited (a pidfd, as the
        runtime's exit events reach an evented PLEG). The exit is reaped by poll() as before:
        nothing here takes the process' status."""
        try:
            fd = os.pidfd_open(self.pid)
        except OSError:  # gone already: the next poll() sees it
            callback()
            return

        def watch():
            try:
                select.select([fd], [], [])
            finally:
                os.close(fd)
            callback()
        threading.Thread(target=watch, name="exit-%d" % self.pid, daemon=True).start()

    def wait(self, timeout):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        return self.poll()


def start_container(node, spec_path, spec, log_path):
    """Start the shim; returns (Process, None) or (None, start error message)."""
    r, w = os.pipe()
    spec = dict(spec, statusFd=w, kubeletPid=os.getpid(), mode="run",
                bindir=None if spec.get("rootfs") else node.bindir)
    with open(spec_path + ".tmp", "w") as f:
        json.dump(spec, f, indent=1)
    os.replace(spec_path + ".tmp", spec_path)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    logf = open(log_path, "ab")
    try:
        proc = node.spawner.call(lambda: subprocess.Popen(
            [sys.executable, "-I", "-S", SHIM, spec_path], stdin=subprocess.DEVNULL,
            stdout=logf, stderr=subprocess.STDOUT, pass_fds=(w,), close_fds=True))
    except OSError as e:
        os.close(r)
        os.close(w)
        logf.close()
        return None, "starting the shim: %s" % e
    os.close(w)
    logf.close()
    started = time.time()
    # the pipe reaches EOF once the command was exec'd (or everything failed)
    data = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rl, _, _ = select.select([r], [], [], 1.0)
        if rl:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    os.close(r)
    text = data.decode(errors="replace")
    init_pid = None
    msgs = []
    for line in text.splitlines():
        if line.startswith("pid "):
            try:
                init_pid = int(line[4:])
            except ValueError:
                pass
        elif line.startswith("error "):
            msgs.append(line[6:])
    p = Process(proc, init_pid, started)
    if msgs:
        p.wait(5)
        return p, "; ".join(msgs)
    return p, None


def run_exec(node, target_pid, argv, env, workdir, timeout):
    """An exec probe in a container's mount namespace: (exit code or None on timeout, output)."""
    spec = {"mode": "exec", "kubeletPid": os.getpid(), "targetPid": target_pid, "argv": argv,
            "env": env, "workingDir": workdir, "bindir": None if node.strict_images else node.bindir}
    proc = node.spawner.call(lambda: subprocess.Popen(
        [sys.executable, "-I", "-S", SHIM, json.dumps(spec)], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=True))
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("exec probe process %d did not exit after SIGKILL", proc.pid)
        return None, "command timed out after %ss" % timeout
