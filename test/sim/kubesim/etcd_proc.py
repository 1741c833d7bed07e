"""The private etcd of storage mode (a).

It runs as a child on the simulator's own loopback address with free ports, keeps its
data under DIR/etcd (so restarting the simulator on the same DIR keeps the objects),
and must never outlive the simulator: PR_SET_PDEATHSIG kills it if the simulator
dies without cleaning up, and stop() ends it by PID on a normal exit.
"""

import ctypes
import os
import signal
import socket
import subprocess
import time
import urllib.request

PR_SET_PDEATHSIG = 1


def _pdeathsig():
    # Runs in the child between fork and exec.  The signal fires when the thread
    # that forked exits, which is why the simulator starts etcd from its main thread.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setpgid(0, 0)  # ^C in a terminal goes to the simulator, which then stops etcd


def free_port(ip):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


class PrivateEtcd:
    def __init__(self, ip, data_dir, log_path, log=None):
        self.ip = ip
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc = None
        self.client_url = None
        self._log = log or (lambda *a: None)

    def start(self, wait_s=30.0):
        # Ports are picked by binding port 0 and closing; another process could grab
        # one in between, so a failed start is retried with new ports.
        for attempt in range(3):
            cport, pport = free_port(self.ip), free_port(self.ip)
            if cport == pport:
                continue
            self.client_url = "http://%s:%d" % (self.ip, cport)
            peer = "http://%s:%d" % (self.ip, pport)
            args = ["etcd", "--name", "sim", "--data-dir", self.data_dir,
                    "--listen-client-urls", self.client_url,
                    "--advertise-client-urls", self.client_url,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", "sim=" + peer,
                    "--initial-cluster-token", "kube-apiserver-sim-%d" % os.getpid(),
                    # the watch cache turns progress notifications into bookmarks
                    "--experimental-watch-progress-notify-interval", "1s",
                    "--logger", "zap", "--log-outputs", "stderr"]
            logf = open(self.log_path, "ab")
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, preexec_fn=_pdeathsig,
                                         close_fds=True)
            logf.close()
            self._log("started etcd pid %d on %s (data %s)" % (self.proc.pid, self.client_url,
                                                             self.data_dir))
            if self._wait_healthy(wait_s):
                return self.client_url
            self.stop()
            self._log("etcd did not become healthy (attempt %d); see %s" % (attempt + 1,
                                                                             self.log_path))
        raise RuntimeError("could not start etcd; see %s" % self.log_path)

    def _wait_healthy(self, wait_s):
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.client_url + "/health", timeout=1) as r:
                    if b'"true"' in r.read():
                        return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self, grace=5.0):
        p = self.proc
        if p is None or p.poll() is not None:
            return
        try:
            p.send_signal(signal.SIGTERM)
            p.wait(grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
        except OSError:
            pass
