#!/usr/bin/env python3
"""How soon kube-apiserver's watch delivers a write, per resource, when the write follows
another write's event on the same watch (bench/README.md, "The operator's reaction on
kube-apiserver").

    bench/api-event-hold.py KUBECONFIG [--n 8]

Against a running cluster (hack/local-up.sh, or operator-bench.sh --keep: its
state/kube/kubeconfig), in namespace default, on objects of its own (ConfigMap, Secret and
Endpoints `api-event-hold`, created if absent, deleted at the end): for each resource, N
rounds of two merge patches, the second sent GAP ms after the first one's watch event, each
timed from its PATCH to its event on an open watch (one connection each, HTTP/1.1, the
kubeconfig's credentials). Prints, per resource and gap, the median of each; nothing is
asserted. The operator's repair of host-etcd-2 is such a pair: another writer's edit, then
the operator's rewrite a few ms after that edit's event.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import operator_bench as ob  # noqa: E402  (the benchmark's stdlib API client and watch)

NAME = "api-event-hold"
RESOURCES = (("configmaps", {"data": {}}), ("secrets", {"data": {}}), ("endpoints", {"subsets": []}))
GAPS_MS = (0, 10, 20, 30, 50, 80)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kubeconfig")
    ap.add_argument("--n", type=int, default=8)
    a = ap.parse_args()
    api = ob.Api(a.kubeconfig)
    print("%-11s %6s %18s %18s %22s" % ("resource", "gap", "1st: PATCH->event", "2nd: PATCH->event",
                                        "2nd event - 1st event"))
    for plural, body in RESOURCES:
        path = "/api/v1/namespaces/default/" + plural
        kind = {"configmaps": "ConfigMap", "secrets": "Secret", "endpoints": "Endpoints"}[plural]
        try:
            api.request("POST", path, dict(body, apiVersion="v1", kind=kind, metadata={"name": NAME}),
                        "application/json")
        except RuntimeError:
            pass  # already there
        rv = api.get(path + "/" + NAME)["metadata"]["resourceVersion"]
        w = ob.Watch(ob.Api(a.kubeconfig), path + "?fieldSelector=metadata.name%3D" + NAME, rv)
        w.start()
        w.opened.wait()
        if w.error:
            raise SystemExit("watch %s: %s" % (plural, w.error))
        try:
            for gap in GAPS_MS:
                first, second, between = [], [], []
                for i in range(a.n):
                    time.sleep(0.3)
                    w.drain()
                    t0 = time.monotonic()
                    rv = api.merge_patch(path + "/" + NAME, {"metadata": {"annotations": {
                        "v": "a-%d-%d" % (gap, i)}}})["metadata"]["resourceVersion"]
                    e0 = w.wait_for(lambda o: o["metadata"]["resourceVersion"] == rv, t0 + 5)
                    time.sleep(gap / 1e3)
                    t1 = time.monotonic()
                    rv = api.merge_patch(path + "/" + NAME, {"metadata": {"annotations": {
                        "v": "b-%d-%d" % (gap, i)}}})["metadata"]["resourceVersion"]
                    e1 = w.wait_for(lambda o: o["metadata"]["resourceVersion"] == rv, t1 + 5)
                    if e0 is None or e1 is None:
                        raise SystemExit("%s: an event did not arrive within 5 s" % plural)
                    first.append((e0 - t0) * 1e3)
                    second.append((e1 - t1) * 1e3)
                    between.append((e1 - e0) * 1e3)
                print("%-11s %4d ms %15.1f ms %15.1f ms %19.1f ms" % (plural, gap, median(first), median(second),
                                                                      median(between)), flush=True)
        finally:
            try:
                api.request("DELETE", path + "/" + NAME)
            except RuntimeError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
