"""Probes: startup, liveness and readiness workers for one container instance.

Each probe runs in its own thread with the kubelet's semantics: initialDelaySeconds,
then every periodSeconds a check with timeoutSeconds; the result flips after
successThreshold consecutive successes or failureThreshold consecutive failures.
Liveness and readiness wait for the startup probe to succeed. httpGet (http/https, host
defaulting to the pod IP, certificates not verified, 200-399 = success), tcpSocket,
exec (in the container's namespaces with its environment) and grpc (approximated
by a TCP connect).
"""

import http.client
import math
import socket
import ssl
import threading

from . import runtime
from .podspec import expand


def _port(c, port):
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for p in c.spec.get("ports") or []:
        if p.get("name") == port:
            return int(p.get("containerPort"))
    raise ValueError("port %r not found in the container's ports" % port)


def _insecure_tls():
    """The kubelet's probes skip certificate verification (InsecureSkipVerify), so they need
    no trust store: one context for every HTTPS probe. ssl.create_default_context() per probe
    loaded the system's CA certificates each time, and was two thirds of a kubelet-sim's CPU in
    an e2e scenario (py-spy, 2026-11-29)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


_PROBE_TLS = _insecure_tls()


def check(node, c, probe, env):
    """Run one probe: (success, message)."""
    timeout = max(float(probe.get("timeoutSeconds") or 1), 0.1)
    try:
        if probe.get("httpGet") is not None:
            h = probe["httpGet"]
            host = h.get("host") or node.ip
            port = _port(c, h.get("port"))
            path = h.get("path") or "/"
            if not path.startswith("/"):
                path = "/" + path
            if (h.get("scheme") or "HTTP").upper() == "HTTPS":
                conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=_PROBE_TLS)
            else:
                conn = http.client.HTTPConnection(host, port, timeout=timeout)
            headers = {"User-Agent": "kube-probe/1.32", "Accept": "*/*"}
            for hh in h.get("httpHeaders") or []:
                headers[hh.get("name")] = hh.get("value", "")
            try:
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                body = r.read(10240)
            finally:
                conn.close()
            if 200 <= r.status < 400:
                return True, ""
            return False, "HTTP probe failed with statuscode: %d %s" % (
                r.status, body[:200].decode(errors="replace").strip())
        if probe.get("tcpSocket") is not None or probe.get("grpc") is not None:
            t = probe.get("tcpSocket") or probe.get("grpc")
            host = t.get("host") or node.ip
            s = socket.create_connection((host, _port(c, t.get("port"))), timeout=timeout)
            s.close()
            return True, ""
        if probe.get("exec") is not None:
            proc = c.process
            if proc is None or proc.poll() is not None or not proc.init_pid:
                return False, "container is not running"
            argv = [expand(a, env) for a in probe["exec"].get("command") or []]
            if not argv:
                return False, "exec probe without a command"
            rc, out = runtime.run_exec(node, proc.init_pid, argv, env, c.spec.get("workingDir"),
                                       timeout)
            if rc == 0:
                return True, ""
            if rc is None:
                return False, out
            return False, "command %r exited with %d: %s" % (argv, rc, out.strip()[-300:])
        return False, "probe without a handler"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return False, "%s: %s" % (type(e).__name__, e)


class Prober(threading.Thread):
    """kind: startup | liveness | readiness. Reports through worker.probe_result()."""

    def __init__(self, worker, c, kind, probe, env, instance):
        super().__init__(name="probe-%s-%s" % (c.name, kind), daemon=True)
        self.worker, self.c, self.kind, self.probe, self.env = worker, c, kind, probe, env
        self.instance = instance
        self.stop_ev = threading.Event()
        self.result = None

    def stop(self):
        self.stop_ev.set()

    def timing(self):
        """(initial delay, period, failure threshold). With the kubelet-sim's
        --startup-probe-step S, a startup probe is checked every min(period, S) seconds
        from min(initialDelay, S) on, and fails at the deadline the pod spec sets
        (initialDelay + period x failureThreshold) as the kubelet's would: a started
        container is seen sooner, a failing one is killed no sooner."""
        p = self.probe
        delay = float(p.get("initialDelaySeconds") or 0)
        period = max(float(p.get("periodSeconds") or 10), 0.1)
        fail_th = max(int(p.get("failureThreshold") or 3), 1)
        step = getattr(self.worker.node, "startup_probe_step", 0) or 0
        if self.kind != "startup" or step <= 0 or (step >= period and step >= delay):
            return delay, period, fail_th
        deadline = delay + period * fail_th
        d, per = min(delay, step), min(period, step)
        return d, per, max(int(math.ceil((deadline - d) / per - 1e-9)), 1)

    def run(self):
        p = self.probe
        delay, period, fail_th = self.timing()
        succ_th = max(int(p.get("successThreshold") or 1), 1)
        if self.stop_ev.wait(delay):
            return
        succ = fail = 0
        while not self.stop_ev.is_set():
            if self.kind != "startup" and not self.worker.container_started(self.c, self.instance):
                if self.stop_ev.wait(min(period, 0.5)):
                    return
                continue
            ok, msg = check(self.worker.node, self.c, p, self.env)
            if self.stop_ev.is_set():
                return
            if ok:
                succ, fail = succ + 1, 0
                if succ >= succ_th and self.result is not True:
                    self.result = True
                    self.worker.probe_result(self.c, self.instance, self.kind, True, "")
            else:
                succ, fail = 0, fail + 1
                if fail >= fail_th and self.result is not False:
                    self.result = False
                    self.worker.probe_result(self.c, self.instance, self.kind, False, msg)
                elif fail >= fail_th and self.kind != "readiness":
                    self.worker.probe_result(self.c, self.instance, self.kind, False, msg)
            if self.kind == "startup" and self.result is True:
                return
            if self.stop_ev.wait(period):
                return
