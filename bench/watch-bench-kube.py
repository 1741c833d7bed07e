#!/usr/bin/env python3
"""The watch benchmark on kube-apiserver's own watch (bench/README.md, "On kube-apiserver"):
our pod informer (bench/watch-bench, the operator's cache transform) and kubectl (client-go)
watch the same live stream of pod updates, at the same time, from Kubernetes' own
kube-apiserver. The stream's rate is the writer's, not the clients', so the figures compared
are what each client spends on it: CPU seconds per 1,000 events and peak RSS.

    test/integration/with-kube.sh python3 bench/watch-bench-kube.py [--pods 500] [--updates 20000]
                                                                     [--bin build-release/bench/watch-bench]

with-kube.sh starts the control plane (KUBECONFIG: the admin's client certificate) and stops
it after. The script creates namespace watch-bench with --pods pods shaped as etcd static pods
(four containers, about 7 KB each as stored; unscheduled: there are no nodes), starts both
clients, waits until both have the initial list, then merge-patches an annotation of one pod
after another (--updates in all, four writers) and stops each client once it has seen every
update. For each client: events seen, CPU seconds (utime + stime from /proc/PID/stat, the
last read before it exits), peak RSS (VmHWM), and the ratios ours/kubectl. Nothing is
asserted; it prints its figures. Build the client first:
    cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DSANITIZE=OFF && make -C build-release watch-bench
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import operator_bench as ob  # noqa: E402  (the benchmark's stdlib API client)

NS = "watch-bench"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pod(i):
    """An etcd static pod's shape: four containers with long command lines and env."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "etcd-master-%d" % i, "namespace": NS,
        "labels": {"app": "etcd", "k8s-app": "etcd", "etcd": "true", "revision": "7"},
        "annotations": {"kubernetes.io/config.hash": "a" * 32, "kubernetes.io/config.source": "file"}},
        "spec": {"containers": [{
            "name": c, "image": "registry.example.com/etcd@sha256:" + "b" * 64,
            "command": ["/bin/sh", "-c", "exec etcd " + " ".join("--flag-%d=value-%d" % (k, k) for k in range(40))],
            "env": [{"name": "NODE_master_%d_ETCD_URL_HOST" % k, "value": "10.0.0.%d" % k} for k in range(12)],
            "resources": {"requests": {"cpu": "300m", "memory": "600Mi"}}}
            for c in ("etcdctl", "etcd", "etcd-metrics", "etcd-readyz")]}}


def proc_figures(pid):
    """(CPU seconds, VmHWM kB) of a running process, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/%d/status" % pid) as f:
            hwm = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
        return (int(fields[11]) + int(fields[12])) / CLK_TCK, hwm
    except (OSError, StopIteration, IndexError, ValueError):
        return None


class Client:
    """A watching process; its stdout lines counted, its CPU and peak RSS sampled until it ends."""

    def __init__(self, name, argv, count_lines):
        self.name, self.count_lines = name, count_lines
        self.lines, self.last, self.out = 0, None, []
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.sample, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            self.lines += 1
            if not self.count_lines:
                self.out.append(line)

    def sample(self):
        while self.p.poll() is None:
            f = proc_figures(self.p.pid)
            if f:
                self.last = f
            time.sleep(0.05)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        self.p.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--updates", type=int, default=20000)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-release", "bench", "watch-bench"))
    a = ap.parse_args()
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        raise SystemExit("KUBECONFIG is not set: run it under test/integration/with-kube.sh")
    if not os.access(a.bin, os.X_OK):
        raise SystemExit("no %s: build it first (see --help)" % a.bin)
    api = ob.Api(kubeconfig)
    api.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                "application/json")
    deadline = time.monotonic() + 60  # kube-controller-manager makes the namespace's default ServiceAccount
    while True:
        try:
            api.get("/api/v1/namespaces/%s/serviceaccounts/default" % NS)
            break
        except RuntimeError:
            if time.monotonic() > deadline:
                raise SystemExit("no ServiceAccount %s/default after 60 s" % NS)
            time.sleep(0.5)
    t0 = time.monotonic()
    for i in range(a.pods):
        api.request("POST", "/api/v1/namespaces/%s/pods" % NS, pod(i), "application/json")
    size = len(json.dumps(api.get("/api/v1/namespaces/%s/pods/etcd-master-0" % NS)))
    print("watch-bench-kube: %d pods created in %.1f s (%d bytes each as stored)" % (
        a.pods, time.monotonic() - t0, size), flush=True)

    # Both watch every pod of the cluster; the initial list counts as events for both.
    total = a.pods + a.updates
    ours = Client("ours", [a.bin, kubeconfig, str(total), "900"], count_lines=False)
    kc = Client("kubectl", ["kubectl", "get", "pods", "-A", "-w", "-o", "name"], count_lines=True)
    deadline = time.monotonic() + 60
    while kc.lines < a.pods and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)  # ours lists as fast; its count shows only at its end
    print("watch-bench-kube: both clients watching; %d updates by 4 writers" % a.updates, flush=True)

    done = [0]
    lock = threading.Lock()

    def writer(k):
        w = ob.Api(kubeconfig)
        for j in range(k, a.updates, 4):
            w.merge_patch("/api/v1/namespaces/%s/pods/etcd-master-%d" % (NS, j % a.pods),
                          {"metadata": {"annotations": {"watch-bench/seq": str(j)}}})
            with lock:
                done[0] += 1
    t0 = time.monotonic()
    ws = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in ws:
        t.start()
    for t in ws:
        t.join()
    wrote = time.monotonic() - t0
    print("watch-bench-kube: %d updates written in %.1f s (%.0f/s)" % (done[0], wrote, done[0] / wrote), flush=True)

    # kubectl never exits by itself: stopped once it printed every event (or 60 s after the writes).
    deadline = time.monotonic() + 60
    while kc.lines < total and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    kc_fig = kc.last
    kc.stop()
    try:
        ours.p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        ours.stop()
    time.sleep(0.2)
    line = next((ln for ln in ours.out if ln.startswith("watch-bench ")), "")
    got = dict(kv.split("=", 1) for kv in line.split()[1:])
    if not got:
        raise SystemExit("our client printed no result (saw it all?)")
    o_events, o_cpu, o_rss = int(got["events"]), float(got["cpu_seconds"]), int(got["peak_rss_kb"])
    k_events, (k_cpu, k_rss) = kc.lines, kc_fig
    print("\n%-8s %10s %14s %18s %14s" % ("client", "events", "CPU seconds", "CPU ms/1000 ev", "peak RSS MB"))
    for n, e, c, r in (("ours", o_events, o_cpu, o_rss), ("kubectl", k_events, k_cpu, k_rss)):
        print("%-8s %10d %14.2f %18.1f %14.1f" % (n, e, c, 1e6 * c / max(e, 1), r / 1024))
    print("\nCPU per event ours/kubectl: %.3f; peak RSS ours/kubectl: %.2f" % (
        (o_cpu / max(o_events, 1)) / (k_cpu / max(k_events, 1)), o_rss / k_rss))
    print("(the same live stream at the writers' %.0f updates/s; CPU from /proc/PID/stat, ours from getrusage)" % (
        done[0] / wrote))
    return 0


if __name__ == "__main__":
    sys.exit(main())
