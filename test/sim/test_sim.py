#!/usr/bin/env python3
"""Conformance tests of kube-apiserver-sim over raw HTTP: one test per item of
its conformance checklist (test_cNN_*).

One simulator (own temp dir, random 127.x.y.z address, port 0) serves most tests;
each test works in its own namespace.  Separate simulators cover plain HTTP and
storage mode (b) with a one-member TLS etcd.  Test names carry the checklist
number they cover (c01 ... c35).  Everything started is stopped by PID, also
when a test fails.
"""

import atexit
import copy
import json
import os
import socket
import sys
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kubesim.testing import Sim, TlsEtcd, random_loopback  # noqa: E402
from kubesim.test_units import *  # noqa: E402,F401,F403  (yaml/patch/selector/cel unit tests)

SIM = None
C = None
_started = []


def setUpModule():
    global SIM, C
    SIM = Sim()
    _started.append(SIM)
    C = SIM.client()


def tearDownModule():
    if C is not None:
        C.close()
    for s in _started:
        s.stop()
    _started.clear()


atexit.register(tearDownModule)

TABLE_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
V2_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
             "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
             "application/json")


def new_ns(prefix="t"):
    name = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
    r = C.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": name}})
    assert r.status == 201, r
    # The service account controller adds "default" right after (a write of its own):
    # wait for it, so that tests comparing revisions see only their own writes.
    deadline = time.monotonic() + 10
    while C.get("/api/v1/namespaces/%s/serviceaccounts/default" % name).status != 200:
        assert time.monotonic() < deadline, "no ServiceAccount default in namespace %s" % name
        time.sleep(0.02)
    return name


def cm(name, data=None, labels=None, **meta):
    md = {"name": name}
    if labels is not None:
        md["labels"] = labels
    md.update(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {"k": "v"}}


def revision():
    return C.get("/sim/stats").json["revision"]


def etcd_cr(name="cluster", **spec):
    return {"apiVersion": "operator.openshift.io/v1", "kind": "Etcd", "metadata": {"name": name},
            "spec": dict({"managementState": "Managed"}, **spec)}


class Base(unittest.TestCase):
    maxDiff = None

    def assertStatus(self, r, code, reason=None):
        self.assertEqual(r.status, code, r)
        st = r.json
        self.assertIsInstance(st, dict, r)
        self.assertEqual(st.get("kind"), "Status", r)
        self.assertEqual(st.get("apiVersion"), "v1")
        self.assertEqual(st.get("code"), code)
        self.assertEqual(st.get("status"), "Failure")
        self.assertIn("message", st)
        if reason:
            self.assertEqual(st.get("reason"), reason, r)
        return st


# ---------------------------------------------------------------- discovery/transport
class Discovery(Base):
    def test_c01_version(self):
        r = C.get("/version")
        self.assertEqual(r.status, 200)
        self.assertEqual((r.json["major"], r.json["minor"]), ("1", "32"))

    def test_c02_legacy_documents(self):
        r = C.get("/api")
        self.assertEqual(r.json["kind"], "APIVersions")
        self.assertEqual(r.json["versions"], ["v1"])
        r = C.get("/apis")
        self.assertEqual(r.json["kind"], "APIGroupList")
        groups = {g["name"]: g for g in r.json["groups"]}
        for g in ("apps", "coordination.k8s.io", "policy", "rbac.authorization.k8s.io",
                  "apiextensions.k8s.io", "operator.openshift.io", "config.openshift.io"):
            self.assertIn(g, groups)
        self.assertEqual(groups["apps"]["preferredVersion"]["groupVersion"], "apps/v1")
        core = {x["name"]: x for x in C.get("/api/v1").json["resources"]}
        self.assertEqual(core["nodes"]["kind"], "Node")
        self.assertFalse(core["nodes"]["namespaced"])
        self.assertEqual(core["nodes"]["singularName"], "node")
        self.assertIn("watch", core["pods"]["verbs"])
        self.assertIn("pods/status", core)
        self.assertEqual(core["pods/status"]["verbs"], ["get", "patch", "update"])
        self.assertEqual(core["pods"]["shortNames"], ["po"])
        self.assertNotIn("configmaps/status", core)
        op = {x["name"]: x for x in C.get("/apis/operator.openshift.io/v1").json["resources"]}
        self.assertEqual(op["etcds"]["kind"], "Etcd")
        self.assertEqual(op["etcds"]["singularName"], "etcd")
        self.assertIn("etcds/status", op)
        self.assertEqual(op["etcds"]["categories"], ["coreoperators"])
        apps = {x["name"]: x for x in C.get("/apis/apps/v1").json["resources"]}
        self.assertEqual(apps["deployments"]["categories"], ["all"])
        self.assertIn("deployments/scale", apps)
        net = {x["name"] for x in C.get("/apis/config.openshift.io/v1").json["resources"]}
        self.assertIn("networks", net)
        self.assertNotIn("networks/status", net)   # that CRD has no status subresource

    def test_c03_aggregated_only_for_v2(self):
        r = C.get("/apis", headers={"Accept": V2_ACCEPT})
        self.assertEqual(r.header("Content-Type"),
                         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        self.assertEqual(r.json["kind"], "APIGroupDiscoveryList")
        self.assertEqual(r.json["apiVersion"], "apidiscovery.k8s.io/v2")
        items = {i["metadata"]["name"]: i for i in r.json["items"]}
        etcds = [x for x in items["operator.openshift.io"]["versions"][0]["resources"]
                 if x["resource"] == "etcds"][0]
        self.assertEqual(etcds["scope"], "Cluster")
        self.assertEqual(etcds["responseKind"], {"group": "operator.openshift.io", "version": "v1",
                                                 "kind": "Etcd"})
        self.assertEqual(etcds["subresources"][0]["subresource"], "status")
        r = C.get("/api", headers={"Accept": V2_ACCEPT})
        self.assertEqual(len(r.json["items"]), 1)
        self.assertEqual(r.json["items"][0]["metadata"]["name"], "")
        # kubectl 1.29 asks for v2beta1 only: it must get the legacy document
        r = C.get("/apis", headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2beta1;"
                                              "as=APIGroupDiscoveryList,application/json"})
        self.assertEqual(r.json["kind"], "APIGroupList")
        self.assertTrue(r.header("Content-Type").startswith("application/json"))
        self.assertNotIn("apidiscovery", r.header("Content-Type"))

    def test_c04_kubectl_style_reads(self):
        # kubectl itself is exercised by kubectl-conformance.sh; these are its requests
        r = C.get("/api/v1/nodes?limit=500", headers={"Accept": TABLE_ACCEPT})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["kind"], "Table")
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"] if c["priority"] == 0],
                         ["Name", "Status", "Roles", "Age", "Version"])
        C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c04"))
        r = C.get("/apis/operator.openshift.io/v1/etcds/c04")
        self.assertEqual(r.json["kind"], "Etcd")
        self.assertEqual(C.get("/apis/config.openshift.io/v1/clusteroperators",
                               headers={"Accept": TABLE_ACCEPT}).status, 200)

    def test_c05_unknown_paths(self):
        for p in ("/nope", "/api/v1/nopes", "/apis/foo.example.com/v1/bars",
                  "/api/v1/namespaces/default/configmaps/x/bogus", "/apis/operator.openshift.io/v9"):
            r = C.get(p)
            st = self.assertStatus(r, 404, "NotFound")
            self.assertIsInstance(st["message"], str)

    def test_c06_openapi_v3(self):
        r = C.get("/openapi/v3")
        self.assertEqual(r.status, 200)
        paths = r.json["paths"]
        self.assertIn("api/v1", paths)
        self.assertIn("apis/operator.openshift.io/v1", paths)
        url = paths["apis/operator.openshift.io/v1"]["serverRelativeURL"]
        self.assertTrue(url.startswith("/openapi/v3/apis/operator.openshift.io/v1?hash="))
        doc = C.get(url).json
        self.assertEqual(doc["openapi"], "3.0.0")
        p = doc["paths"]["/apis/operator.openshift.io/v1/etcds/{name}"]["patch"]
        self.assertEqual(p["x-kubernetes-group-version-kind"],
                         {"group": "operator.openshift.io", "version": "v1", "kind": "Etcd"})
        self.assertIn("fieldValidation", [x["name"] for x in p["parameters"]])
        core = C.get(paths["api/v1"]["serverRelativeURL"]).json
        self.assertIn("/api/v1/namespaces/{namespace}/configmaps/{name}", core["paths"])
        self.assertEqual(C.get("/openapi/v2").status, 404)

    def test_c07_authentication(self):
        anon = SIM.client(token=None)
        self.assertStatus(anon.get("/api/v1/namespaces"), 401, "Unauthorized")
        bad = SIM.client(token="wrong")
        self.assertStatus(bad.get("/api/v1/namespaces"), 401, "Unauthorized")
        self.assertStatus(anon.get("/sim/stats"), 401, "Unauthorized")
        self.assertEqual(anon.get("/version").status, 200)   # public, as system:public-info-viewer
        self.assertEqual(C.get("/api/v1/namespaces").status, 200)
        certc = SIM.client(token=None, cert=os.path.join(SIM.dir, "client.crt"),
                           key=os.path.join(SIM.dir, "client.key"))
        self.assertEqual(certc.get("/api/v1/namespaces").status, 200)

    def test_files_and_kubeconfig(self):
        for f in ("kubeconfig", "token", "ca.crt", "client.crt", "client.key", "server-url",
                  "sim.pid", "ready"):
            self.assertTrue(os.path.exists(os.path.join(SIM.dir, f)), f)
        with open(os.path.join(SIM.dir, "kubeconfig")) as f:
            kc = f.read()
        for k in ("certificate-authority-data:", "client-certificate-data:", "client-key-data:",
                  "token:", "current-context: sim", SIM.url):
            self.assertIn(k, kc)
        with open(os.path.join(SIM.dir, "sim.pid")) as f:
            self.assertEqual(int(f.read()), SIM.proc.pid)
        with os.popen("openssl x509 -noout -subject -in %s" % os.path.join(SIM.dir, "client.crt")) as p:
            subj = p.read()
        self.assertIn("system:masters", subj)
        self.assertIn("system:admin", subj)


# ---------------------------------------------------------------- reads
class Reads(Base):
    def test_c08_list_shape(self):
        ns = new_ns()
        r = C.get("/api/v1/namespaces/%s/configmaps" % ns)
        self.assertEqual(r.json["kind"], "ConfigMapList")
        self.assertEqual(r.json["apiVersion"], "v1")
        self.assertEqual(r.json["items"], [])
        self.assertEqual(int(r.json["metadata"]["resourceVersion"]), revision())
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("a"))
        r = C.get("/api/v1/namespaces/%s/configmaps" % ns)
        self.assertEqual(int(r.json["metadata"]["resourceVersion"]), revision())
        self.assertNotIn("kind", r.json["items"][0])          # built-in list items
        C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c08"))
        r = C.get("/apis/operator.openshift.io/v1/etcds")
        self.assertEqual(r.json["kind"], "EtcdList")
        self.assertEqual(r.json["items"][0]["kind"], "Etcd")     # CR list items keep theirs

    def test_c09_pagination(self):
        ns = new_ns()
        for i in range(7):
            C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("p%d" % i))
        seen, token, pages, first_rv = [], None, 0, None
        while True:
            q = "limit=3" + ("&continue=" + token if token else "")
            r = C.get("/api/v1/namespaces/%s/configmaps?%s" % (ns, q))
            self.assertEqual(r.status, 200, r)
            pages += 1
            first_rv = first_rv or r.json["metadata"]["resourceVersion"]
            self.assertEqual(r.json["metadata"]["resourceVersion"], first_rv)  # one snapshot
            seen += [i["metadata"]["name"] for i in r.json["items"]]
            token = r.json["metadata"].get("continue")
            if pages == 1:
                self.assertEqual(r.json["metadata"]["remainingItemCount"], 4)
                # created after the first page: not part of this snapshot
                C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("p99"))
            if not token:
                self.assertNotIn("remainingItemCount", r.json["metadata"])
                break
        self.assertEqual(seen, ["p%d" % i for i in range(7)])
        self.assertEqual(pages, 3)
        r = C.get("/api/v1/namespaces/%s/configmaps?limit=3" % ns)
        tok = r.json["metadata"]["continue"]
        self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps?limit=3&continue=%s&"
                                "resourceVersion=5" % (ns, tok)), 400, "BadRequest")
        self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps?continue=%s&"
                                "resourceVersionMatch=NotOlderThan" % (ns, tok)), 422, "Invalid")
        self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps?continue=garbage" % ns), 400)
        # with a selector, pages still hold up to limit matching items
        r = C.get("/api/v1/namespaces/%s/configmaps?limit=2&fieldSelector=metadata.name!=p0" % ns)
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["p1", "p2"])

    def test_list_resource_version_rules(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        self.assertStatus(C.get(base + "?resourceVersionMatch=Exact"), 422, "Invalid")
        st = self.assertStatus(C.get(base + "?resourceVersion=0&resourceVersionMatch=Exact"), 422)
        self.assertEqual(st["details"]["kind"], "ListOptions")
        self.assertStatus(C.get(base + "?sendInitialEvents=true"), 422, "Invalid")
        self.assertStatus(C.get(base + "?resourceVersion=abc"), 400)
        r = C.post(base, cm("x"))
        rv = int(r.json["metadata"]["resourceVersion"])
        C.put(base + "/x", dict(cm("x", {"k": "v2"}), metadata={"name": "x"}))
        r = C.get(base + "?resourceVersion=%d&resourceVersionMatch=Exact" % rv)
        self.assertEqual(r.json["items"][0]["data"], {"k": "v"})     # state at rv
        self.assertEqual(r.json["metadata"]["resourceVersion"], str(rv))
        r = C.get(base + "?resourceVersion=%d&resourceVersionMatch=NotOlderThan" % rv)
        self.assertEqual(r.json["items"][0]["data"], {"k": "v2"})
        r = C.get(base + "?resourceVersion=%d" % (revision() + 1000))
        st = self.assertStatus(r, 504, "Timeout")
        self.assertEqual(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        self.assertIn("retryAfterSeconds", st["details"])
        r = C.get(base + "?resourceVersion=0&limit=1")   # RV=0: any state, limit may be ignored
        self.assertEqual(r.status, 200)

    def test_c10_label_selectors(self):
        ns = new_ns()
        for name, labels in (("a", {"env": "prod", "tier": "web"}), ("b", {"env": "dev"}),
                             ("c", {"env": "qa", "x": ""}), ("d", None)):
            C.post("/api/v1/namespaces/%s/configmaps" % ns, cm(name, labels=labels))

        def names(sel):
            import urllib.parse
            r = C.get("/api/v1/namespaces/%s/configmaps?labelSelector=%s"
                      % (ns, urllib.parse.quote(sel)))
            self.assertEqual(r.status, 200, r)
            return sorted(i["metadata"]["name"] for i in r.json["items"])
        self.assertEqual(names("env=prod"), ["a"])
        self.assertEqual(names("env==dev"), ["b"])
        self.assertEqual(names("env!=prod"), ["b", "c", "d"])      # unlabeled matches !=
        self.assertEqual(names("env in (prod,qa)"), ["a", "c"])
        self.assertEqual(names("env notin (prod,qa)"), ["b", "d"])  # and notin
        self.assertEqual(names("tier"), ["a"])
        self.assertEqual(names("!tier"), ["b", "c", "d"])
        self.assertEqual(names("env,!tier"), ["b", "c"])
        self.assertEqual(names("x="), ["c"])
        self.assertEqual(names("env in (prod,dev),tier!=web"), ["b"])
        self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps?labelSelector=%s"
                                % (ns, "env%20in%20prod")), 400, "BadRequest")

    def test_c11_field_selectors(self):
        ns = new_ns()
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("f1"))
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("f2"))
        r = C.get("/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3Df2" % ns)
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["f2"])
        r = C.get("/api/v1/configmaps?fieldSelector=metadata.namespace%%3D%s" % ns)
        self.assertEqual(sorted(i["metadata"]["name"] for i in r.json["items"]), ["f1", "f2"])
        r = C.get("/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name!=f2" % ns)
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["f1"])
        # every resource supports metadata.name / metadata.namespace
        for path in ("/api/v1/nodes", "/api/v1/namespaces/%s/secrets" % ns,
                     "/apis/operator.openshift.io/v1/etcds", "/apis/apps/v1/deployments",
                     "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns,
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles"):
            self.assertEqual(C.get(path + "?fieldSelector=metadata.name=zz,metadata.namespace="
                                   "q").status, 200, path)
        for pod in (("p1", "n1", "Running"), ("p2", "n2", "Pending"), ("p3", None, "Pending")):
            spec = {"containers": [{"name": "c", "image": "busybox"}]}
            if pod[1]:
                spec["nodeName"] = pod[1]
            C.post("/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod",
                                                       "metadata": {"name": pod[0]}, "spec": spec})
            C.patch("/api/v1/namespaces/%s/pods/%s/status" % (ns, pod[0]),
                    {"status": {"phase": pod[2], "podIP": "10.0.0.%s" % pod[0][1]}})

        def pods(sel):
            r = C.get("/api/v1/namespaces/%s/pods?fieldSelector=%s" % (ns, sel))
            self.assertEqual(r.status, 200, r)
            return sorted(i["metadata"]["name"] for i in r.json["items"])
        self.assertEqual(pods("spec.nodeName=n1"), ["p1"])
        self.assertEqual(pods("spec.nodeName="), ["p3"])
        self.assertEqual(pods("status.phase=Pending"), ["p2", "p3"])
        self.assertEqual(pods("status.phase!=Pending,spec.nodeName=n1"), ["p1"])
        self.assertEqual(pods("status.podIP=10.0.0.2"), ["p2"])
        st = self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps?fieldSelector=data.k=v" % ns),
                               400, "BadRequest")
        self.assertIn("field label not supported: data.k", st["message"])
        self.assertEqual(C.get("/api/v1/namespaces/%s/secrets?fieldSelector=type=Opaque" % ns).status,
                         200)
        self.assertEqual(C.get("/api/v1/events?fieldSelector=involvedObject.name=x,reason=y,"
                               "type=Normal").status, 200)
        # and on watch
        w = C.watch("/api/v1/namespaces/%s/configmaps?watch=true&fieldSelector=metadata.name%%3Df1"
                    % ns)
        evs = w.collect(1)
        self.assertEqual(evs[0]["object"]["metadata"]["name"], "f1")
        C.patch("/api/v1/namespaces/%s/configmaps/f2" % ns, {"data": {"z": "1"}})
        C.patch("/api/v1/namespaces/%s/configmaps/f1" % ns, {"data": {"z": "1"}})
        ev = w.collect(1)[0]
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("MODIFIED", "f1"))
        w.close()

    def test_c12_get_missing(self):
        ns = new_ns()
        st = self.assertStatus(C.get("/api/v1/namespaces/%s/configmaps/nope" % ns), 404, "NotFound")
        self.assertEqual(st["details"]["kind"], "configmaps")
        self.assertEqual(st["details"]["name"], "nope")
        self.assertEqual(st["message"], 'configmaps "nope" not found')
        st = self.assertStatus(C.get("/apis/operator.openshift.io/v1/etcds/nope"), 404, "NotFound")
        self.assertEqual(st["details"], {"name": "nope", "group": "operator.openshift.io",
                                         "kind": "etcds"})
        self.assertEqual(st["message"], 'etcds.operator.openshift.io "nope" not found')

    def test_tables(self):
        ns = new_ns()
        C.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": "tbl-node", "labels": {"node-role.kubernetes.io/master": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}})
        r = C.get("/api/v1/nodes/tbl-node", headers={"Accept": TABLE_ACCEPT})
        self.assertEqual(r.json["rows"][0]["cells"][:3], ["tbl-node", "Ready", "master"])
        self.assertEqual(r.json["rows"][0]["cells"][4], "v1.32.0")
        self.assertEqual(r.json["rows"][0]["object"]["kind"], "PartialObjectMetadata")
        C.post("/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod",
                                                   "metadata": {"name": "tp"},
                                                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
        r = C.get("/api/v1/namespaces/%s/pods" % ns, headers={"Accept": TABLE_ACCEPT})
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"] if not c["priority"]],
                         ["Name", "Ready", "Status", "Restarts", "Age"])
        self.assertEqual(r.json["rows"][0]["cells"][:4], ["tp", "0/1", "Pending", 0])
        co = {"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
              "metadata": {"name": "tbl-co"}, "spec": {}}
        self.assertEqual(C.post("/apis/config.openshift.io/v1/clusteroperators", co).status, 201)
        C.patch("/apis/config.openshift.io/v1/clusteroperators/tbl-co/status", {"status": {
            "conditions": [{"type": "Available", "status": "True",
                            "lastTransitionTime": "2020-01-01T00:00:00Z"}],
            "versions": [{"name": "operator", "version": "4.18.0"}]}})
        r = C.get("/apis/config.openshift.io/v1/clusteroperators/tbl-co?includeObject=Object",
                  headers={"Accept": TABLE_ACCEPT})
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"]],
                         ["Name", "Version", "Available", "Progressing", "Degraded", "Since"])
        cells = r.json["rows"][0]["cells"]
        self.assertEqual(cells[:4], ["tbl-co", "4.18.0", "True", None])
        self.assertTrue(cells[5].endswith(("d", "y")), cells)
        self.assertEqual(r.json["rows"][0]["object"]["kind"], "ClusterOperator")
        r = C.get("/api/v1/namespaces/%s/configmaps" % ns,
                  headers={"Accept": "application/json;as=PartialObjectMetadataList;v=v1;"
                                     "g=meta.k8s.io"})
        self.assertEqual(r.json["kind"], "PartialObjectMetadataList")
        self.assertEqual(C.get("/api/v1/namespaces", headers={
            "Accept": "application/vnd.kubernetes.protobuf"}).status, 406)


# ---------------------------------------------------------------- watch
class Watches(Base):
    def test_c13_watch_from_list_rv(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("w0"))
        rv = C.get(base).json["metadata"]["resourceVersion"]
        w = C.watch(base + "?watch=true&resourceVersion=" + rv)
        self.assertEqual(w.headers.get("Transfer-Encoding"), "chunked")
        self.assertTrue(w.headers.get("Content-Type").startswith("application/json"))
        C.post(base, cm("w1"))
        C.patch(base + "/w1", {"data": {"a": "b"}})
        C.patch(base + "/w0", {"data": {"a": "c"}})
        C.delete(base + "/w1")
        evs = w.collect(4)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs],
                         [("ADDED", "w1"), ("MODIFIED", "w1"), ("MODIFIED", "w0"), ("DELETED", "w1")])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(rvs))
        self.assertTrue(rvs[0] > int(rv))
        for e in evs:
            self.assertEqual((e["object"]["kind"], e["object"]["apiVersion"]), ("ConfigMap", "v1"))
        self.assertEqual(w.drain(0.5), [])
        w.close()

    def test_c14_synthetic_added(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("s1"))
        C.post(base, cm("s2"))
        for q in ("watch=true", "watch=true&resourceVersion=0"):
            w = C.watch(base + "?" + q)
            evs = w.collect(2)
            self.assertEqual(sorted((e["type"], e["object"]["metadata"]["name"]) for e in evs),
                             [("ADDED", "s1"), ("ADDED", "s2")])
            C.post(base, cm("s3-" + q[-1]))
            self.assertEqual(w.collect(1)[0]["type"], "ADDED")
            w.close()

    def test_c15_deleted_final_state(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("d1", {"final": "yes"}))
        rv = r.json["metadata"]["resourceVersion"]
        w = C.watch(base + "?watch=true&resourceVersion=" + rv)
        C.delete(base + "/d1")
        ev = w.collect(1)[0]
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["data"], {"final": "yes"})
        self.assertGreater(int(ev["object"]["metadata"]["resourceVersion"]), int(rv))
        w.close()

    def test_c16_expired(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("e1"))
        old = r.json["metadata"]["resourceVersion"]
        r = C.get(base + "?limit=1")
        C.post(base, cm("e2"))
        tok = C.get(base + "?limit=1").json["metadata"]["continue"]
        C.patch(base + "/e1", {"data": {"n": "1"}})
        self.assertEqual(C.post("/sim/compact", {}).status, 200)
        w = C.watch(base + "?watch=true&resourceVersion=" + old)
        self.assertEqual(w.status, 200)
        ev = w.next()
        self.assertEqual(ev["type"], "ERROR")
        st = ev["object"]
        self.assertEqual((st["kind"], st["code"], st["reason"], st["status"]),
                         ("Status", 410, "Expired", "Failure"))
        self.assertIn("too old resource version", st["message"])
        self.assertTrue(w.ended.wait(5))
        self.assertEqual(w.drain(0.2), [])
        self.assertStatus(C.get(base + "?resourceVersion=%s&resourceVersionMatch=Exact" % old), 410,
                          "Expired")
        self.assertStatus(C.get(base + "?limit=1&continue=" + tok), 410, "Expired")

    def test_c17_bookmarks(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("b1"))
        rv = C.get(base).json["metadata"]["resourceVersion"]
        w = C.watch(base + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=" + rv)
        C.post("/api/v1/namespaces/%s/configmaps" % new_ns(), cm("elsewhere"))
        self.assertTrue(w.ended.wait(10))
        evs = w.drain(0.1)
        bms = [e for e in evs if e["type"] == "BOOKMARK"]
        self.assertTrue(bms, evs)
        for b in bms:
            self.assertEqual(set(b["object"]), {"kind", "apiVersion", "metadata"})
            self.assertEqual(set(b["object"]["metadata"]), {"resourceVersion"})
            self.assertEqual(b["object"]["kind"], "ConfigMap")
        # the bookmark revision covers the unrelated write
        self.assertGreater(int(bms[-1]["object"]["metadata"]["resourceVersion"]), int(rv))
        w = C.watch(base + "?watch=true&timeoutSeconds=3&resourceVersion=" + rv)
        self.assertTrue(w.ended.wait(10))
        self.assertEqual([e for e in w.drain(0.1) if e["type"] == "BOOKMARK"], [])

    def test_c18_timeout(self):
        ns = new_ns()
        t0 = time.monotonic()
        w = C.watch("/api/v1/namespaces/%s/configmaps?watch=true&timeoutSeconds=2" % ns)
        self.assertTrue(w.ended.wait(10))
        took = time.monotonic() - t0
        self.assertTrue(1.5 < took < 4.5, took)
        self.assertTrue(w.clean_end, "stream did not end with the terminating chunk")

    def test_c19_watch_list(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        for i in range(3):
            C.post(base, cm("l%d" % i))
        w = C.watch(base + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                    "&allowWatchBookmarks=true&resourceVersion=")
        evs = w.collect(4, skip_bookmarks=False)
        self.assertEqual([e["type"] for e in evs], ["ADDED"] * 3 + ["BOOKMARK"])
        bm = evs[3]["object"]["metadata"]
        self.assertEqual(bm["annotations"], {"k8s.io/initial-events-end": "true"})
        self.assertGreaterEqual(int(bm["resourceVersion"]),
                                max(int(e["object"]["metadata"]["resourceVersion"]) for e in evs[:3]))
        C.post(base, cm("l9"))
        self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "l9")
        w.close()
        for q in ("sendInitialEvents=true&allowWatchBookmarks=true",          # no match
                  "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",  # no bookmarks
                  "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"):  # no sIE
            w = C.watch(base + "?watch=true&" + q)
            self.assertEqual(w.status, 422, q)
            self.assertEqual(w.body["reason"], "Invalid")

    def test_c20_selector_transitions(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("t1", labels={"app": "x"}))
        rv = r.json["metadata"]["resourceVersion"]
        w = C.watch(base + "?watch=true&labelSelector=app%3Dx&resourceVersion=" + rv)
        r = C.patch(base + "/t1", {"metadata": {"labels": {"app": "y"}}})
        ev = w.collect(1)[0]
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(ev["object"]["metadata"]["labels"], {"app": "x"})   # old content
        self.assertEqual(ev["object"]["metadata"]["resourceVersion"], r.json["metadata"]["resourceVersion"])
        C.patch(base + "/t1", {"data": {"q": "1"}})          # still not matching: nothing
        C.post(base, cm("t2", labels={"app": "y"}))           # not matching: nothing
        C.patch(base + "/t1", {"metadata": {"labels": {"app": "x"}}})
        ev = w.collect(1)[0]
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "t1"))
        self.assertEqual(w.drain(0.3), [])
        w.close()

    def test_table_watch(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("tw1"))
        rv = C.get(base).json["metadata"]["resourceVersion"]
        w = C.watch(base + "?watch=true&resourceVersion=" + rv, headers={"Accept": TABLE_ACCEPT})
        C.post(base, cm("tw2"))
        C.post(base, cm("tw3"))
        a, b = w.collect(2)
        self.assertEqual(a["object"]["kind"], "Table")
        self.assertTrue(a["object"]["columnDefinitions"])
        self.assertFalse(b["object"]["columnDefinitions"])
        self.assertEqual(b["object"]["rows"][0]["cells"][0], "tw3")
        w.close()

    def test_client_disconnect_mid_watch(self):
        ns = new_ns()
        st0 = C.get("/sim/stats").json
        ws = [C.watch("/api/v1/namespaces/%s/configmaps?watch=true" % ns) for _ in range(3)]
        time.sleep(0.3)
        st1 = C.get("/sim/stats").json
        self.assertEqual(st1["watchesTotal"] - st0["watchesTotal"], 3)
        self.assertGreaterEqual(st1["openWatches"], 3)
        for w in ws:
            w.close()       # the server notices while idle, before any event is due
        deadline = time.monotonic() + 5
        while C.get("/sim/stats").json["openWatches"] > st0["openWatches"]:
            self.assertLess(time.monotonic(), deadline, "watch threads did not notice")
            time.sleep(0.1)
        self.assertEqual(C.get("/version").status, 200)


# ---------------------------------------------------------------- writes
class Writes(Base):
    def test_c21_create(self):
        ns = new_ns()
        r = C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("c1"))
        self.assertEqual(r.status, 201)
        md = r.json["metadata"]
        for f in ("uid", "creationTimestamp", "resourceVersion"):
            self.assertTrue(md.get(f), f)
        self.assertNotIn("generation", md)
        self.assertRegex(md["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        st = self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("c1")), 409,
                               "AlreadyExists")
        self.assertEqual(st["details"], {"name": "c1", "kind": "configmaps"})
        self.assertEqual(st["message"], 'configmaps "c1" already exists')
        r = C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c21"))
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json["metadata"]["generation"], 1)
        st = self.assertStatus(C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c21")), 409,
                               "AlreadyExists")
        self.assertEqual(st["details"]["group"], "operator.openshift.io")
        self.assertEqual(st["message"], 'etcds.operator.openshift.io "c21" already exists')
        self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns,
                                 cm("c2", resourceVersion="5")), 500)
        self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("c3", namespace="zz")),
                          400, "BadRequest")
        self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns,
                                 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}), 422,
                          "Invalid")
        self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("Bad_Name")), 422)

    def test_c22_generate_name(self):
        ns = new_ns()
        names = set()
        for _ in range(5):
            r = C.post("/api/v1/namespaces/%s/configmaps" % ns,
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})
            self.assertEqual(r.status, 201, r)
            self.assertRegex(r.json["metadata"]["name"], r"^gen-[a-z0-9]{5}$")
            names.add(r.json["metadata"]["name"])
        self.assertEqual(len(names), 5)

    def test_c23_revision_and_noop(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        before = revision()
        r = C.post(base, cm("n1"))
        rv1 = int(r.json["metadata"]["resourceVersion"])
        self.assertGreater(rv1, before)
        # The store's revision is global: the simulator's own controllers (a CronJob an earlier
        # test left, the disruption controller) may write meanwhile, so a no-op is judged by
        # the object's resourceVersion and by the silence of a watch on it, not by the revision.
        self.assertGreaterEqual(revision(), rv1)
        w = C.watch(base + "?watch=true&resourceVersion=%d" % rv1)
        r = C.put(base + "/n1", r.json)                        # no-op PUT
        self.assertEqual(r.status, 200)
        self.assertEqual(int(r.json["metadata"]["resourceVersion"]), rv1)
        r = C.patch(base + "/n1", {"data": {"k": "v"}})         # no-op patch
        self.assertEqual(int(r.json["metadata"]["resourceVersion"]), rv1)
        self.assertEqual(int(C.get(base + "/n1").json["metadata"]["resourceVersion"]), rv1)
        self.assertEqual(w.drain(0.5), [])
        r = C.patch(base + "/n1", {"data": {"k": "v2"}})
        rv2 = int(r.json["metadata"]["resourceVersion"])
        self.assertGreater(rv2, rv1)
        self.assertGreaterEqual(revision(), rv2)
        self.assertEqual(w.collect(1)[0]["type"], "MODIFIED")
        w.close()

    def test_c24_conflict(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("cfg"))
        stale = r.json
        C.patch(base + "/cfg", {"data": {"k": "new"}})
        r = C.put(base + "/cfg", stale)
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'Operation cannot be fulfilled on configmaps "cfg": the object has been '
                       "modified; please apply your changes to the latest version and try again",
            "reason": "Conflict", "details": {"name": "cfg", "kind": "configmaps"}, "code": 409})
        # built-ins without RV update unconditionally
        body = dict(stale)
        body["metadata"] = {"name": "cfg"}
        self.assertEqual(C.put(base + "/cfg", body).status, 200)
        # CRs without RV -> 422
        r = C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c24"))
        st = self.assertStatus(C.put("/apis/operator.openshift.io/v1/etcds/c24", etcd_cr("c24")), 422,
                               "Invalid")
        self.assertIn("must be specified for an update", st["message"])
        old = r.json
        C.patch("/apis/operator.openshift.io/v1/etcds/c24", {"spec": {"logLevel": "Debug"}})
        st = self.assertStatus(C.put("/apis/operator.openshift.io/v1/etcds/c24", old), 409, "Conflict")
        self.assertEqual(st["details"]["group"], "operator.openshift.io")
        self.assertIn('etcds.operator.openshift.io "c24"', st["message"])
        # merge patch with a stale RV is a precondition
        self.assertStatus(C.patch(base + "/cfg", {"metadata": {"resourceVersion": "1"}}), 409,
                          "Conflict")
        self.assertStatus(C.put(base + "/other", cm("cfg")), 400)   # URL/body name mismatch
        self.assertStatus(C.put(base + "/missing", cm("missing")), 404, "NotFound")

    def test_c25_patch_types(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("p", {"a": "1", "b": "2"}, labels={"x": "1"}))
        r = C.patch(base + "/p", {"data": {"a": None, "c": "3"}})
        self.assertEqual(r.json["data"], {"b": "2", "c": "3"})
        r = C.patch(base + "/p", [{"op": "test", "path": "/data/b", "value": "2"},
                                  {"op": "move", "from": "/data/b", "path": "/data/d"},
                                  {"op": "copy", "from": "/data/c", "path": "/data/e"},
                                  {"op": "add", "path": "/metadata/labels/y", "value": "2"},
                                  {"op": "replace", "path": "/data/c", "value": "33"},
                                  {"op": "remove", "path": "/metadata/labels/x"}], "json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["data"], {"c": "33", "d": "2", "e": "3"})
        self.assertEqual(r.json["metadata"]["labels"], {"y": "2"})
        self.assertStatus(C.patch(base + "/p", [{"op": "test", "path": "/data/c", "value": "x"}],
                                  "json"), 422)
        # strategic: containers merge by name, conditions by type, $patch: delete
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                   "metadata": {"labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "a", "image": "a:1"},
                                           {"name": "b", "image": "b:1"}]}}}}
        self.assertEqual(C.post("/apis/apps/v1/namespaces/%s/deployments" % ns, dep).status, 201)
        r = C.patch("/apis/apps/v1/namespaces/%s/deployments/web" % ns, {"spec": {"template": {"spec": {
            "containers": [{"name": "b", "image": "b:2"}, {"name": "a", "$patch": "delete"},
                           {"name": "c", "image": "c:1"}]}}}}, "strategic")
        self.assertEqual(r.status, 200, r)
        cs = [(c["name"], c["image"]) for c in r.json["spec"]["template"]["spec"]["containers"]]
        self.assertEqual(cs, [("b", "b:2"), ("c", "c:1")])
        self.assertEqual(r.json["metadata"]["generation"], 2)
        r = C.patch("/apis/apps/v1/namespaces/%s/deployments/web/status" % ns, {"status": {
            "conditions": [{"type": "Available", "status": "False"},
                           {"type": "Progressing", "status": "True"}]}}, "strategic")
        r = C.patch("/apis/apps/v1/namespaces/%s/deployments/web/status" % ns, {"status": {
            "conditions": [{"type": "Available", "status": "True"}]}}, "strategic")
        self.assertEqual([(c["type"], c["status"]) for c in r.json["status"]["conditions"]],
                         [("Available", "True"), ("Progressing", "True")])
        r = C.patch(base + "/p", {"metadata": {"finalizers": ["a/b"]}}, "strategic")
        r = C.patch(base + "/p", {"metadata": {"finalizers": ["c/d"]}}, "strategic")
        self.assertEqual(r.json["metadata"]["finalizers"], ["a/b", "c/d"])   # merge strategy
        r = C.patch(base + "/p", {"$deleteFromPrimitiveList/finalizers": ["a/b", "c/d"],
                                  "metadata": {}}, "strategic")
        r = C.patch(base + "/p", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/b", "c/d"]}},
                    "strategic")
        self.assertNotIn("finalizers", r.json["metadata"])
        C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c25"))
        st = self.assertStatus(C.patch("/apis/operator.openshift.io/v1/etcds/c25",
                                       {"spec": {"logLevel": "Debug"}}, "strategic"), 415,
                               "UnsupportedMediaType")
        self.assertIn("application/apply-patch+yaml", st["message"])
        self.assertStatus(C.request("PATCH", base + "/p", "{}", ctype="text/plain"), 415)
        # apply: needs fieldManager, creates with 201, then merges
        cfg = cm("ap", {"a": "1"})
        self.assertStatus(C.patch(base + "/ap", cfg, "apply"), 422, "Invalid")
        r = C.patch(base + "/ap?fieldManager=t1", cfg, "apply")
        self.assertEqual(r.status, 201, r)
        mf = r.json["metadata"]["managedFields"]
        self.assertEqual((mf[0]["manager"], mf[0]["operation"]), ("t1", "Apply"))
        r = C.patch(base + "/ap?fieldManager=t1", cm("ap", {"b": "2"}), "apply")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["data"], {"b": "2"})      # t1 stopped applying a
        r = C.patch(base + "/ap?fieldManager=t2", cm("ap", {"c": "3"}), "apply")
        self.assertEqual(r.json["data"], {"b": "2", "c": "3"})
        yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  d: '4'\n"
        r = C.patch(base + "/ap?fieldManager=t3", yaml_body, "apply")
        self.assertEqual(r.json["data"]["d"], "4")
        self.assertStatus(C.patch(base + "/p?force=true", {"data": {}}), 422, "Invalid")
        r = C.patch("/apis/operator.openshift.io/v1/etcds/c26?fieldManager=t1&force=true",
                    etcd_cr("c26"), "apply")
        self.assertEqual(r.status, 201)

    def test_c26_status_semantics_every_resource(self):
        ns = new_ns()
        objs = [
            ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "st-node"}}),
            ("/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": "st-pod"}, "spec": {"containers": [{"name": "c", "image": "i"}],
                                           # the default scheduler would write its status
                                           "schedulerName": "none"}}),
            ("/api/v1/namespaces/%s/services" % ns, {"apiVersion": "v1", "kind": "Service",
                                                    "metadata": {"name": "st-svc"},
                                                    "spec": {"ports": [{"port": 80}]}}),
            ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "st-ns-" + ns[-8:]}}),
            ("/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % ns, {
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "st-pdb"}, "spec": {"maxUnavailable": 1}}),
            ("/apis/apps/v1/namespaces/%s/deployments" % ns, {
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "st-dep"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            ("/apis/operator.openshift.io/v1/etcds", etcd_cr("st-etcd")),
            ("/apis/config.openshift.io/v1/clusteroperators", {
                "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                "metadata": {"name": "st-co"}, "spec": {}}),
        ]
        def put_fresh(path, put_path, change):
            """PUT of the object as read just before, changed by `change`; again after a 409 (the
            simulator's own controllers write some statuses, e.g. a PDB's, as kube's do).
            Returns the response and the status the read showed."""
            for _ in range(10):
                obj = C.get(path).json
                before = copy.deepcopy(obj.get("status"))
                change(obj)
                r = C.put(put_path, obj)
                if r.status != 409:
                    return r, before
            return r, before

        def sim_condition(obj, labels):
            obj["metadata"]["labels"] = labels
            obj["status"] = dict(obj.get("status") or {}, conditions=[
                {"type": "Sim", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z",
                 "reason": "R", "message": "m"}])

        for coll, body in objs:
            name = body["metadata"]["name"]
            path = coll + "/" + name
            r = C.post(coll, body)
            self.assertEqual(r.status, 201, (coll, r))
            # main resource: status ignored, labels applied
            r, before_status = put_fresh(path, path, lambda o: sim_condition(o, {"m": "1"}))
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.json.get("status"), before_status, path)
            self.assertEqual(r.json["metadata"]["labels"], {"m": "1"})
            # status: everything but status ignored
            r, _ = put_fresh(path, path + "/status", lambda o: sim_condition(o, {"m": "2"}))
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.json["metadata"]["labels"], {"m": "1"}, path)
            self.assertEqual(r.json["status"]["conditions"][0]["type"], "Sim", path)
            r = C.patch(path + "/status", {"metadata": {"labels": {"m": "3"}},
                                           "status": {"conditions": []}})
            self.assertEqual(r.json["metadata"]["labels"], {"m": "1"}, path)
            self.assertEqual(C.get(path + "/status").json["metadata"]["name"], name)
        # no status subresource: status writes on the main resource are kept, /status is 404
        net = {"apiVersion": "config.openshift.io/v1", "kind": "Network",
               "metadata": {"name": "st-net"}, "spec": {}, "status": {"networkType": "X"}}
        r = C.post("/apis/config.openshift.io/v1/networks", net)
        self.assertEqual(r.json["status"], {"networkType": "X"})
        self.assertEqual(C.get("/apis/config.openshift.io/v1/networks/st-net/status").status, 404)
        self.assertEqual(C.get("/api/v1/namespaces/%s/configmaps/x/status" % ns).status, 404)

    def test_c27_cr_generation(self):
        p = "/apis/operator.openshift.io/v1/etcds/c27"
        r = C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c27"))
        self.assertEqual(r.json["metadata"]["generation"], 1)
        r = C.patch(p, {"metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}}})
        self.assertEqual(r.json["metadata"]["generation"], 1)          # metadata only
        r = C.patch(p + "/status", {"status": {"readyReplicas": 3}})
        self.assertEqual(r.json["metadata"]["generation"], 1)          # status subresource
        r = C.patch(p, {"status": {"readyReplicas": 4}})
        self.assertEqual(r.json["metadata"]["generation"], 1)          # ignored status
        self.assertEqual(r.json["status"]["readyReplicas"], 3)
        r = C.patch(p, {"spec": {"logLevel": "Debug"}})
        self.assertEqual(r.json["metadata"]["generation"], 2)
        r = C.patch(p, {"metadata": {"generation": 99}})
        self.assertEqual(r.json["metadata"]["generation"], 2)          # client cannot set it
        # without a status subresource, status changes bump it too
        C.post("/apis/config.openshift.io/v1/networks", {
            "apiVersion": "config.openshift.io/v1", "kind": "Network", "metadata": {"name": "g27"},
            "spec": {}})
        r = C.patch("/apis/config.openshift.io/v1/networks/g27", {"status": {"networkType": "Y"}})
        self.assertEqual(r.json["metadata"]["generation"], 2)

    def test_c28_finalizers(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("fz", finalizers=["example.com/hold"]))
        w = C.watch(base + "?watch=true&resourceVersion=" + r.json["metadata"]["resourceVersion"])
        r = C.delete(base + "/fz", {"propagationPolicy": "Background"})
        self.assertEqual(r.status, 200)
        self.assertTrue(r.json["metadata"]["deletionTimestamp"])
        self.assertEqual(r.json["metadata"]["deletionGracePeriodSeconds"], 0)
        ev = w.collect(1)[0]
        self.assertEqual(ev["type"], "MODIFIED")
        self.assertTrue(ev["object"]["metadata"]["deletionTimestamp"])
        r2 = C.delete(base + "/fz")                                 # again: same object back
        self.assertEqual(r2.status, 200)
        self.assertEqual(r2.json["metadata"]["resourceVersion"], r.json["metadata"]["resourceVersion"])
        r = C.patch(base + "/fz", {"metadata": {"finalizers": None}})
        self.assertEqual(r.status, 200, r)
        ev = w.collect(1)[0]
        self.assertEqual(ev["type"], "DELETED")
        self.assertEqual(C.get(base + "/fz").status, 404)
        w.close()
        # no finalizers: Status Success; pods return the object
        C.post(base, cm("plain"))
        r = C.delete(base + "/plain")
        self.assertEqual(r.json["kind"], "Status")
        self.assertEqual(r.json["status"], "Success")
        self.assertEqual(r.json["details"]["kind"], "configmaps")
        self.assertStatus(C.delete(base + "/plain"), 404, "NotFound")
        C.post("/api/v1/namespaces/%s/pods" % ns, {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "dp"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        self.assertEqual(C.delete("/api/v1/namespaces/%s/pods/dp" % ns).json["kind"], "Pod")
        # foreground and orphan add their finalizers; the mini GC finishes them
        owner = C.post(base, cm("owner")).json
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
               "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        C.post(base, cm("dep", ownerReferences=[ref]))
        r = C.delete(base + "/owner", {"propagationPolicy": "Foreground"})
        self.assertIn("foregroundDeletion", r.json["metadata"]["finalizers"])
        self._gone(base + "/owner")
        self._gone(base + "/dep")
        owner = C.post(base, cm("owner2")).json
        ref["uid"], ref["name"] = owner["metadata"]["uid"], "owner2"
        C.post(base, cm("dep2", ownerReferences=[ref]))
        r = C.delete(base + "/owner2", {"propagationPolicy": "Orphan"})
        self.assertIn("orphan", r.json["metadata"]["finalizers"])
        self._gone(base + "/owner2")
        self.assertNotIn("ownerReferences", C.get(base + "/dep2").json["metadata"])

    def _gone(self, path, timeout=10):
        deadline = time.monotonic() + timeout
        while C.get(path).status != 404:
            self.assertLess(time.monotonic(), deadline, path)
            time.sleep(0.1)

    def test_c29_delete_preconditions(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        r = C.post(base, cm("pc"))
        st = self.assertStatus(C.delete(base + "/pc", {"preconditions": {"uid": "nope"}}), 409,
                               "Conflict")
        self.assertIn("Precondition failed: UID in precondition: nope", st["message"])
        self.assertStatus(C.delete(base + "/pc", {"preconditions": {"resourceVersion": "1"}}), 409,
                          "Conflict")
        self.assertEqual(C.delete(base + "/pc", {"preconditions": {
            "uid": r.json["metadata"]["uid"],
            "resourceVersion": r.json["metadata"]["resourceVersion"]}}).status, 200)

    def test_c30_no_new_finalizers_while_deleting(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("nf", finalizers=["a.io/x"]))
        C.delete(base + "/nf")
        st = self.assertStatus(C.patch(base + "/nf", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}),
                               422, "Invalid")
        self.assertEqual(st["details"]["kind"], "ConfigMap")
        self.assertEqual(st["details"]["causes"][0]["field"], "metadata.finalizers")
        C.patch(base + "/nf", {"metadata": {"finalizers": []}})

    def test_c31_missing_namespace(self):
        st = self.assertStatus(C.post("/api/v1/namespaces/nope-ns/configmaps", cm("x")), 404, "NotFound")
        self.assertEqual(st["message"], 'namespaces "nope-ns" not found')
        self.assertEqual(st["details"]["kind"], "namespaces")

    def test_c32_errors_are_status(self):
        ns = new_ns()
        cases = [
            (C.get("/api/v1/namespaces/%s/configmaps/none" % ns), 404, "NotFound"),
            (C.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, "{bad"), 400, "BadRequest"),
            (C.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, "{}", ctype="text/plain"),
             415, "UnsupportedMediaType"),
            (C.request("POST", "/api/v1/namespaces/%s/configmaps/x" % ns, "{}"), 405,
             "MethodNotAllowed"),
            (C.get("/api/v1/namespaces", headers={"Accept": "text/html"}), 406, "NotAcceptable"),
            (C.post("/api/v1/namespaces/%s/configmaps?fieldValidation=Strict" % ns,
                    dict(cm("sx"), bogus=1)), 400, "BadRequest"),
            (C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("c32", backendQuotaGiB="x")),
             422, "Invalid"),
        ]
        for r, code, reason in cases:
            self.assertStatus(r, code, reason)

    def test_c33_429_retry_after(self):
        ns = new_ns()
        C.post("/sim/faults", {"method": "GET", "path_regex": "/namespaces/%s/configmaps" % ns,
                               "code": 429, "count": 2, "retry_after": 1})
        for _ in range(2):
            r = C.get("/api/v1/namespaces/%s/configmaps" % ns)
            st = self.assertStatus(r, 429, "TooManyRequests")
            self.assertEqual(r.header("Retry-After"), "1")
            self.assertEqual(st["details"]["retryAfterSeconds"], 1)
        self.assertEqual(C.get("/api/v1/namespaces/%s/configmaps" % ns).status, 200)

    def test_secret_and_namespace_defaults(self):
        ns = new_ns()
        r = C.post("/api/v1/namespaces/%s/secrets" % ns, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "YQ=="}, "stringData": {"b": "hello"}})
        self.assertEqual(r.json["data"], {"a": "YQ==", "b": "aGVsbG8="})
        self.assertEqual(r.json["type"], "Opaque")
        self.assertNotIn("stringData", r.json)
        r = C.get("/api/v1/namespaces/" + ns)
        self.assertEqual(r.json["status"], {"phase": "Active"})
        self.assertEqual(r.json["spec"], {"finalizers": ["kubernetes"]})

    def test_namespace_deletion(self):
        ns = new_ns()
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("a"))
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("held", finalizers=["x.io/y"]))
        r = C.delete("/api/v1/namespaces/" + ns)
        self.assertEqual(r.json["status"]["phase"], "Terminating")
        st = self.assertStatus(C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("late")), 403,
                               "Forbidden")
        self.assertIn("being terminated", st["message"])
        deadline = time.monotonic() + 10
        while C.get("/api/v1/namespaces/%s/configmaps/a" % ns).status != 404:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        time.sleep(1.5)
        self.assertEqual(C.get("/api/v1/namespaces/" + ns).status, 200)   # held by the finalizer
        C.patch("/api/v1/namespaces/%s/configmaps/held" % ns, {"metadata": {"finalizers": None}})
        deadline = time.monotonic() + 10
        while C.get("/api/v1/namespaces/" + ns).status != 404:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        self.assertStatus(C.delete("/api/v1/namespaces/default"), 403, "Forbidden")

    def test_crd_via_api_and_schema(self):
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                                  "shortNames": ["wd"], "categories": ["all"]},
                        "versions": [{"name": "v1", "served": True, "storage": True,
                                      "subresources": {"status": {}},
                                      "additionalPrinterColumns": [
                                          {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                                      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                          "spec": {"type": "object", "properties": {
                                              "size": {"type": "integer", "minimum": 1, "default": 3},
                                              "mode": {"type": "string", "enum": ["a", "b"]},
                                              "tags": {"type": "array", "items": {"type": "string"}},
                                              "free": {"type": "object",
                                                       "x-kubernetes-preserve-unknown-fields": True}}},
                                          "status": {"type": "object", "properties": {
                                              "ok": {"type": "boolean"}}}}}}}]}}
        r = C.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        self.assertEqual(r.status, 201, r)
        conds = {c["type"]: c["status"] for c in r.json["status"]["conditions"]}
        self.assertEqual(conds, {"Established": "True", "NamesAccepted": "True"})
        self.assertEqual(r.json["status"]["acceptedNames"]["kind"], "Widget")
        res = {x["name"]: x for x in C.get("/apis/example.com/v1").json["resources"]}
        self.assertEqual(res["widgets"]["shortNames"], ["wd"])
        self.assertIn("widgets/status", res)
        ns = new_ns()
        base = "/apis/example.com/v1/namespaces/%s/widgets" % ns
        w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
             "spec": {"mode": "a", "junk": 1, "free": {"any": {"thing": 1}}}, "status": {"ok": True}}
        r = C.post(base, w)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["spec"], {"mode": "a", "size": 3, "free": {"any": {"thing": 1}}})
        self.assertNotIn("status", r.json)                    # dropped on create
        self.assertIn('unknown field \\"spec.junk\\"', r.header("Warning") or "")
        st = self.assertStatus(C.post(base + "?fieldValidation=Strict", dict(w, metadata={"name": "w2"})),
                               400, "BadRequest")
        self.assertIn('unknown field "spec.junk"', st["message"])
        st = self.assertStatus(C.post(base, dict(w, metadata={"name": "w3"}, spec={"size": "big"})),
                               422, "Invalid")
        self.assertEqual(st["details"]["kind"], "Widget")
        self.assertEqual(st["details"]["causes"][0]["field"], "spec.size")
        self.assertStatus(C.post(base, dict(w, metadata={"name": "w4"}, spec={"mode": "zz"})), 422)
        self.assertStatus(C.post(base, dict(w, metadata={"name": "w5"}, spec={"size": 0})), 422)
        self.assertStatus(C.post(base, dict(w, metadata={"name": "w6"}, spec={"tags": [1]})), 422)
        r = C.get(base, headers={"Accept": TABLE_ACCEPT})
        self.assertEqual([c["name"] for c in r.json["columnDefinitions"]], ["Name", "Size"])
        self.assertEqual(r.json["rows"][0]["cells"], ["w1", 3])
        # deleting the CRD removes the type and its objects
        self.assertEqual(C.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                  "widgets.example.com").status, 200)
        self.assertEqual(C.get(base).status, 404)
        r = C.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                   dict(crd, metadata={"name": "wrong.example.com"}))
        self.assertStatus(r, 422, "Invalid")

    def test_scale_subresource(self):
        ns = new_ns()
        dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sc"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "sc"}}, "template": {
                   "metadata": {"labels": {"app": "sc"}},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
        C.post("/apis/apps/v1/namespaces/%s/deployments" % ns, dep)
        p = "/apis/apps/v1/namespaces/%s/deployments/sc/scale" % ns
        r = C.get(p)
        self.assertEqual((r.json["kind"], r.json["spec"]["replicas"], r.json["status"]["selector"]),
                         ("Scale", 1, "app=sc"))
        r = C.patch(p, {"spec": {"replicas": 4}})
        self.assertEqual(r.json["spec"]["replicas"], 4)
        self.assertEqual(C.get(p[:-6]).json["spec"]["replicas"], 4)
        body = C.get(p).json
        body["spec"]["replicas"] = 2
        self.assertEqual(C.put(p, body).json["spec"]["replicas"], 2)
        self.assertStatus(C.put(p, body), 409, "Conflict")           # stale RV
        self.assertStatus(C.patch(p, {"spec": {"replicas": -1}}), 422, "Invalid")

    def test_eviction_against_disruption_budget(self):
        """kube-controller-manager's disruption controller fills the budget's status; the
        eviction subresource spends disruptionsAllowed with a CAS before it deletes, so a
        second eviction right after the first is refused even before the status is recomputed."""
        ns = new_ns()
        pods = "/api/v1/namespaces/%s/pods" % ns
        pdbs = "/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % ns
        for i in range(4):
            r = C.post(pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": "g-%d" % i, "labels": {"app": "guard"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}})
            self.assertEqual(r.status, 201, r)
            if i < 3:   # g-3 stays unready
                r = C.patch(pods + "/g-%d/status" % i, {"status": {"conditions": [
                    {"type": "Ready", "status": "True"}]}})
                self.assertEqual(r.status, 200, r)
        r = C.post(pdbs, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "guard-pdb"},
                          "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guard"}}}})
        self.assertEqual(r.status, 201, r)

        def status():
            return C.get(pdbs + "/guard-pdb").json.get("status") or {}
        deadline = time.time() + 10
        while status().get("disruptionsAllowed") != 1 and time.time() < deadline:
            time.sleep(0.05)
        st = status()
        self.assertEqual((st["expectedPods"], st["currentHealthy"], st["desiredHealthy"],
                          st["disruptionsAllowed"]), (4, 3, 2, 1))
        self.assertEqual([c["status"] for c in st["conditions"] if c["type"] == "DisruptionAllowed"],
                         ["True"])

        def evict(name):
            return C.post(pods + "/%s/eviction" % name, {
                "apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": ns}})
        # An unready pod goes while the budget is met, without spending it.
        self.assertEqual(evict("g-3").status, 201)
        self.assertEqual(evict("g-0").status, 201)
        self.assertEqual(C.get(pods + "/g-0").status, 404)
        st = self.assertStatus(evict("g-1"), 429, "TooManyRequests")
        self.assertEqual(st["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(st["details"]["causes"][0]["reason"], "DisruptionBudget")
        self.assertRegex(st["details"]["causes"][0]["message"],
                         r"^The disruption budget guard-pdb needs 2 healthy pods and has [23] currently$")
        # No Retry-After: client-go would retry it by itself (kubectl drain would hang for 100 s).
        self.assertIsNone(evict("g-1").header("Retry-After"))
        self.assertEqual(C.get(pods + "/g-1").status, 200)
        # The disruption controller catches up with both deletions (it may publish a status
        # that has seen one and not yet the other first, as kube-controller-manager can).
        deadline = time.time() + 10
        while (status().get("expectedPods"), status().get("currentHealthy")) != (2, 2) and time.time() < deadline:
            time.sleep(0.05)
        st = status()
        self.assertEqual((st["expectedPods"], st["currentHealthy"], st["disruptionsAllowed"]), (2, 2, 0))
        self.assertEqual(st.get("disruptedPods") or {}, {})
        self.assertStatus(evict("g-1"), 429, "TooManyRequests")
        # A pod under two budgets cannot be evicted at all.
        C.post(pdbs, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "two"},
                      "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "guard"}}}})
        self.assertStatus(evict("g-2"), 500, "InternalError")

    def test_openshift_cel_rules(self):
        p = "/apis/operator.openshift.io/v1/etcds/cel"
        C.post("/apis/operator.openshift.io/v1/etcds", etcd_cr("cel", backendQuotaGiB=10))
        st = self.assertStatus(C.patch(p, {"spec": {"backendQuotaGiB": 9}}), 422, "Invalid")
        self.assertIn("may not be decreased", st["message"])
        self.assertEqual(C.patch(p, {"spec": {"backendQuotaGiB": 12}}).status, 200)
        # a node status entry may not be added with a revision set
        st = self.assertStatus(C.patch(p + "/status", {"status": {"nodeStatuses": [
            {"nodeName": "m0", "currentRevision": 1}]}}), 422, "Invalid")
        self.assertEqual(C.patch(p + "/status", {"status": {"nodeStatuses": [
            {"nodeName": "m0"}]}}).status, 200)
        self.assertEqual(C.patch(p + "/status", {"status": {"nodeStatuses": [
            {"nodeName": "m0", "currentRevision": 2}]}}).status, 200)
        self.assertStatus(C.patch(p + "/status", {"status": {"nodeStatuses": [
            {"nodeName": "m0", "currentRevision": 1}]}}), 422, "Invalid")   # only increases

    def test_protobuf_bodies(self):
        # kubectl create configmap sends protobuf; exercise a hand-made body
        def field(num, payload):
            return bytes([num << 3 | 2]) + bytes([len(payload)]) + payload
        meta = field(1, b"pb")
        entry = field(1, b"k") + field(2, b"v")
        cmb = field(1, meta) + field(2, entry)
        env = field(1, field(1, b"v1") + field(2, b"ConfigMap")) + field(2, cmb) + field(4, b"application/vnd.kubernetes.protobuf")
        ns = new_ns()
        r = C.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, b"k8s\x00" + env,
                      ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["data"], {"k": "v"})


class Leases(Base):
    def test_c34_lease_race(self):
        ns = new_ns()
        base = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns
        r = C.post(base, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": {"name": "lock"}, "spec": {"holderIdentity": "",
                                                                 "leaseDurationSeconds": 15}})
        for round_ in range(5):
            cur = C.get(base + "/lock").json
            results = []
            barrier = threading.Barrier(2)

            def grab(me):
                body = json.loads(json.dumps(cur))
                body["spec"]["holderIdentity"] = me
                c = SIM.client()
                barrier.wait()
                results.append(c.put(base + "/lock", body).status)
            ts = [threading.Thread(target=grab, args=("c%d-%d" % (i, round_),)) for i in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(sorted(results), [200, 409], results)

    def test_c35_microtime(self):
        ns = new_ns()
        base = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % ns
        r = C.post(base, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                          "metadata": {"name": "mt"}, "spec": {
                              "holderIdentity": "a", "acquireTime": "2025-01-01T00:00:00.123456Z",
                              "renewTime": "2025-01-01T00:00:01.5Z", "leaseDurationSeconds": 10}})
        self.assertEqual(r.json["spec"]["acquireTime"], "2025-01-01T00:00:00.123456Z")
        self.assertEqual(r.json["spec"]["renewTime"], "2025-01-01T00:00:01.500000Z")
        self.assertEqual(C.get(base + "/mt").json["spec"]["acquireTime"], "2025-01-01T00:00:00.123456Z")


# ---------------------------------------------------------------- workloads (workloads.py)
def until(pred, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


class Workloads(Base):
    """kube-controller-manager's Job controller and volume binder, kube-scheduler's binding."""

    def node(self, name, ready=True, labels=None, taints=None, unschedulable=False):
        C.delete("/api/v1/nodes/" + name)
        r = C.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": labels or {}}, "spec": {"taints": taints or [],
                                                          "unschedulable": unschedulable}})
        self.assertEqual(r.status, 201, r)
        r = C.patch("/api/v1/nodes/%s/status" % name, {"status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}})
        self.assertEqual(r.status, 200, r)

    def test_volume_binding(self):
        ns = new_ns()
        tag = uuid.uuid4().hex[:6]
        for name, size in (("pv-big-" + tag, "10Gi"), ("pv-small-" + tag, "2Gi")):
            r = C.post("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume",
                                                     "metadata": {"name": name}, "spec": {
                "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual-" + tag, "hostPath": {"path": "/var/backups/" + name}}})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.json["status"]["phase"], "Available")
        claims = "/api/v1/namespaces/%s/persistentvolumeclaims" % ns

        def claim(name, size, cls):
            r = C.post(claims, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                                         "resources": {"requests": {"storage": size}}}})
            self.assertEqual(r.status, 201, r)
            self.assertEqual(r.json["status"]["phase"], "Pending")
        claim("fits", "1Gi", "manual-" + tag)     # the smallest volume that fits
        claim("too-big", "50Gi", "manual-" + tag)
        claim("other-class", "1Gi", "other-" + tag)
        c = until(lambda: (lambda o: o if o["status"].get("phase") == "Bound" else None)(
            C.get(claims + "/fits").json))
        self.assertEqual(c["spec"]["volumeName"], "pv-small-" + tag, c)
        self.assertEqual(c["status"]["capacity"], {"storage": "2Gi"})
        pv = C.get("/api/v1/persistentvolumes/pv-small-" + tag).json
        self.assertEqual(pv["status"]["phase"], "Bound")
        self.assertEqual((pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"]), (ns, "fits"))
        time.sleep(0.5)
        for name in ("too-big", "other-class"):
            self.assertEqual(C.get(claims + "/" + name).json["status"]["phase"], "Pending")
        self.assertEqual(C.get("/api/v1/persistentvolumes/pv-big-" + tag).json["status"]["phase"], "Available")
        # A claim's class and size are immutable.
        body = C.get(claims + "/too-big").json
        body["spec"]["storageClassName"] = "changed-" + tag
        self.assertStatus(C.put(claims + "/too-big", body), 422, "Invalid")

    def test_scheduling(self):
        ns = new_ns()
        tag = uuid.uuid4().hex[:6]
        role = {"role-" + tag: ""}
        taint = [{"key": "role-" + tag, "effect": "NoSchedule"}]
        self.node("n-a-" + tag, labels=role, taints=taint)
        self.node("n-b-" + tag, labels=role, unschedulable=True)   # cordoned
        self.node("n-c-" + tag, labels=role, ready=False)
        self.node("n-d-" + tag)                                     # no role label
        pods = "/api/v1/namespaces/%s/pods" % ns

        def pod(name, tolerations, claim=None):
            spec = {"containers": [{"name": "c", "image": "i"}], "nodeSelector": role,
                    "tolerations": tolerations}
            if claim:
                spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
            r = C.post(pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
            self.assertEqual(r.status, 201, r)
        pod("tolerates", [{"key": "role-" + tag, "operator": "Exists"}])
        pod("intolerant", [])
        pod("unclaimed", [{"operator": "Exists"}], claim="nope")
        got = until(lambda: C.get(pods + "/tolerates").json["spec"].get("nodeName"))
        self.assertEqual(got, "n-a-" + tag)
        sched = [c for c in C.get(pods + "/tolerates").json["status"]["conditions"] if c["type"] == "PodScheduled"]
        self.assertEqual(sched[0]["status"], "True")

        def unschedulable(name):
            p = C.get(pods + "/" + name).json
            c = [c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"]
            return c[0] if c and c[0]["status"] == "False" else None
        c = until(lambda: unschedulable("intolerant"))
        self.assertEqual(c["reason"], "Unschedulable")
        c = until(lambda: unschedulable("unclaimed"))
        self.assertIn('persistentvolumeclaim "nope" not found', c["message"])
        self.assertNotIn("nodeName", C.get(pods + "/intolerant").json["spec"])
        for n in ("a", "b", "c", "d"):
            C.delete("/api/v1/nodes/n-%s-%s" % (n, tag))

    def job(self, ns, name, **spec):
        tmpl = {"spec": {"restartPolicy": spec.pop("restartPolicy", "Never"),
                         "containers": [{"name": "c", "image": "i"}], "nodeName": "nowhere"}}
        body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": dict({"template": tmpl}, **spec)}
        return C.post("/apis/batch/v1/namespaces/%s/jobs" % ns, body)

    def pods_of(self, ns, job):
        return C.get("/api/v1/namespaces/%s/pods?labelSelector=batch.kubernetes.io/job-name%%3D%s" % (
            ns, job)).json["items"]

    def set_phase(self, ns, pod, phase):
        r = C.patch("/api/v1/namespaces/%s/pods/%s/status" % (ns, pod["metadata"]["name"]), {"status": {
            "phase": phase, "containerStatuses": [{"name": "c", "state": {"terminated": {
                "exitCode": 0 if phase == "Succeeded" else 1,
                "finishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}}]}})
        self.assertEqual(r.status, 200, r)

    def condition(self, ns, name, t):
        j = C.get("/apis/batch/v1/namespaces/%s/jobs/%s" % (ns, name)).json
        c = [c for c in (j.get("status") or {}).get("conditions") or [] if c["type"] == t]
        return (c[0], j) if c and c[0]["status"] == "True" else None

    def test_job_runs_to_completion(self):
        ns = new_ns()
        r = self.job(ns, "ok")
        self.assertEqual(r.status, 201, r)
        uid = r.json["metadata"]["uid"]
        self.assertEqual(r.json["spec"]["backoffLimit"], 6)
        self.assertEqual(r.json["spec"]["selector"], {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        pods = until(lambda: self.pods_of(ns, "ok"))
        self.assertEqual(len(pods), 1)
        p = pods[0]
        self.assertTrue(p["metadata"]["name"].startswith("ok-"))
        self.assertEqual(p["metadata"]["ownerReferences"][0]["uid"], uid)
        self.assertTrue(p["metadata"]["ownerReferences"][0]["controller"])
        self.assertEqual(p["metadata"]["labels"]["job-name"], "ok")
        until(lambda: (C.get("/apis/batch/v1/namespaces/%s/jobs/ok" % ns).json.get("status") or {}).get("active"))
        self.set_phase(ns, p, "Succeeded")
        c, j = until(lambda: self.condition(ns, "ok", "Complete"))
        self.assertEqual(c["reason"], "CompletionsReached")
        self.assertEqual(j["status"]["succeeded"], 1)
        self.assertNotIn("active", j["status"])
        self.assertIn("completionTime", j["status"])
        self.assertEqual(len(self.pods_of(ns, "ok")), 1)   # no second pod
        # A Job's pod template must not restart for ever; its template is immutable.
        self.assertStatus(self.job(ns, "always", restartPolicy="Always"), 422, "Invalid")
        j = C.get("/apis/batch/v1/namespaces/%s/jobs/ok" % ns).json
        j["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
        self.assertStatus(C.put("/apis/batch/v1/namespaces/%s/jobs/ok" % ns, j), 422, "Invalid")
        # Deleting the Job deletes its pods.
        self.assertEqual(C.delete("/apis/batch/v1/namespaces/%s/jobs/ok" % ns).status, 200)
        self.assertEqual(until(lambda: not self.pods_of(ns, "ok")), True)

    def test_cronjob(self):
        """CronJobs: validation, the most recent missed time run once, Forbid, history,
        lastSuccessfulTime, and a deleted CronJob's Jobs deleted."""
        ns = new_ns()
        cjs = "/apis/batch/v1/namespaces/%s/cronjobs" % ns
        jobs = "/apis/batch/v1/namespaces/%s/jobs" % ns

        def cronjob(name, schedule="*/5 * * * *", tz=None, restart="Never"):
            spec = {"schedule": schedule, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
                    "jobTemplate": {"metadata": {"labels": {"app": "cj-" + name}}, "spec": {"template": {"spec": {
                        "restartPolicy": restart, "schedulerName": "none",
                        "containers": [{"name": "c", "image": "x", "command": ["true"]}]}}}}}
            if tz:
                spec["timeZone"] = tz
            return C.post(cjs, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
                                "spec": spec})
        self.assertStatus(cronjob("bad", schedule="61 * * * *"), 422, "Invalid")
        self.assertStatus(cronjob("bad", tz="Mars/Olympus_Mons"), 422, "Invalid")
        self.assertStatus(cronjob("bad", restart="Always"), 422, "Invalid")
        r = cronjob("nightly")
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["spec"]["failedJobsHistoryLimit"], 1)
        uid = r.json["metadata"]["uid"]
        time.sleep(0.5)
        self.assertEqual(C.get(jobs).json["items"], [])   # not due yet (created just now)

        def owned():
            return [j for j in C.get(jobs).json["items"]
                    if j["metadata"].get("ownerReferences", [{}])[0].get("uid") == uid]
        # Last run 11 minutes ago: two times were missed; only the most recent one runs.
        ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 660))
        r = C.patch(cjs + "/nightly/status", {"status": {"lastScheduleTime": ago}})
        self.assertEqual(r.status, 200, r)
        js = until(owned)
        self.assertEqual(len(js), 1, js)
        j = js[0]
        recent = int(time.time() // 300 * 300)
        self.assertEqual(j["metadata"]["name"], "nightly-%d" % (recent // 60))
        self.assertEqual(j["metadata"]["labels"]["app"], "cj-nightly")
        self.assertTrue(j["metadata"]["ownerReferences"][0]["controller"])
        self.assertEqual(j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
                         time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(recent)))
        st = until(lambda: (lambda s: s if s.get("active") else None)(C.get(cjs + "/nightly").json["status"]))
        self.assertEqual(st["active"][0]["name"], j["metadata"]["name"])
        self.assertEqual(st["lastScheduleTime"], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(recent)))
        # Forbid: due again while that Job runs, no second Job.
        r = C.patch(cjs + "/nightly/status", {"status": {"lastScheduleTime": ago}})
        self.assertEqual(r.status, 200, r)
        time.sleep(1.0)
        self.assertEqual(len(owned()), 1)
        # The Job completes: not active, lastSuccessfulTime; then the missed time runs.
        done = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        r = C.patch(jobs + "/" + j["metadata"]["name"] + "/status", {"status": {"completionTime": done, "conditions": [
            {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "done"}]}})
        self.assertEqual(r.status, 200, r)
        st = until(lambda: (lambda s: s if s.get("lastSuccessfulTime") else None)(C.get(cjs + "/nightly").json["status"]))
        self.assertEqual(st["lastSuccessfulTime"], done)
        # Deleting the CronJob deletes its Jobs.
        self.assertEqual(C.delete(cjs + "/nightly").status, 200)
        self.assertEqual(until(lambda: not owned()), True)

    def test_job_failures(self):
        ns = new_ns()
        # backoffLimit 1: a failed pod is replaced once (after 1 s), the second failure fails the Job.
        self.assertEqual(self.job(ns, "flaky", backoffLimit=1).status, 201)
        p = until(lambda: self.pods_of(ns, "flaky"))[0]
        self.set_phase(ns, p, "Failed")
        pods = until(lambda: (lambda ps: ps if len(ps) == 2 else None)(self.pods_of(ns, "flaky")), 5)
        second = [x for x in pods if x["metadata"]["name"] != p["metadata"]["name"]][0]
        self.set_phase(ns, second, "Failed")
        c, j = until(lambda: self.condition(ns, "flaky", "Failed"))
        self.assertEqual((c["reason"], j["status"]["failed"]), ("BackoffLimitExceeded", 2))
        # activeDeadlineSeconds: the running pod is deleted and the Job fails.
        self.assertEqual(self.job(ns, "slow", activeDeadlineSeconds=1).status, 201)
        until(lambda: self.pods_of(ns, "slow"))
        c, j = until(lambda: self.condition(ns, "slow", "Failed"), 6)
        self.assertEqual(c["reason"], "DeadlineExceeded")
        self.assertEqual(until(lambda: not self.pods_of(ns, "slow")), True)


# ---------------------------------------------------------------- fault injection
class Faults(Base):
    def test_faults(self):
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("f"))
        C.post("/sim/faults", {"method": "PUT", "path_regex": "configmaps/f$", "code": 409, "count": 1})
        body = C.get(base + "/f").json
        self.assertStatus(C.put(base + "/f", body), 409, "Conflict")
        self.assertEqual(C.put(base + "/f", body).status, 200)       # count exhausted
        C.post("/sim/faults", {"path_regex": "configmaps/f$", "code": 503, "count": 1,
                               "retry_after": 2})
        r = C.get(base + "/f")
        self.assertStatus(r, 503, "ServiceUnavailable")
        self.assertEqual(r.header("Retry-After"), "2")
        C.post("/sim/faults", {"method": "GET", "path_regex": "configmaps/f$", "code": 500, "count": 1})
        r = C.get(base + "/f")
        self.assertStatus(r, 500, "InternalError")
        self.assertIsNone(r.header("Retry-After"))
        self.assertStatus(C.post("/sim/faults", {"code": 418}), 400)
        st = C.get("/sim/stats").json
        for k in ("requests", "openWatches", "revision", "injected"):
            self.assertIn(k, st)
        self.assertGreater(st["requests"]["get"], 0)

    def test_write_log(self):
        """/sim/writes: every write served, with its body digest and status, in order;
        the same body twice has the same digest, reads and /sim/* are not writes."""
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        last = C.get("/sim/writes").json["writes"]
        since = last[-1]["seq"] + 1 if last else 0
        C.post(base, cm("w"))
        body = C.get(base + "/w").json
        body["data"] = {"k": "changed"}
        self.assertEqual(C.put(base + "/w", body).status, 200)
        self.assertStatus(C.put(base + "/w", body), 409, "Conflict")    # the same body, now stale
        C.post("/sim/faults", {"method": "DELETE", "path_regex": "configmaps/w$", "code": 503, "count": 1})
        self.assertEqual(C.delete(base + "/w").status, 503)
        mine = [w for w in C.get("/sim/writes?since=%d" % since).json["writes"] if ns in w["path"]]
        self.assertEqual([(w["method"], w["code"]) for w in mine],
                         [("POST", 201), ("PUT", 200), ("PUT", 409), ("DELETE", 503)])
        self.assertEqual(mine[1]["digest"], mine[2]["digest"])
        self.assertNotEqual(mine[0]["digest"], mine[1]["digest"])
        self.assertIn("agent", mine[0])
        self.assertTrue(all(a["seq"] < b["seq"] for a, b in zip(mine, mine[1:])))
        self.assertStatus(C.get("/sim/writes?since=x"), 400)

    def test_fault_after_the_write(self):
        """after: true carries the write out and answers with the fault: the client sees a 504,
        the object has changed, and the write log tells the two apart (code, served)."""
        ns = new_ns()
        base = "/api/v1/namespaces/%s/configmaps" % ns
        C.post(base, cm("a"))
        last = C.get("/sim/writes").json["writes"]
        since = last[-1]["seq"] + 1 if last else 0
        body = C.get(base + "/a").json
        body["data"] = {"k": "landed"}
        C.post("/sim/faults", {"method": "PUT", "path_regex": "configmaps/a$", "code": 504, "count": 1,
                               "after": True})
        self.assertStatus(C.put(base + "/a", body), 504, "Timeout")
        now = C.get(base + "/a").json
        self.assertEqual(now["data"], {"k": "landed"})
        self.assertGreater(int(now["metadata"]["resourceVersion"]), int(body["metadata"]["resourceVersion"]))
        self.assertStatus(C.put(base + "/a", body), 409, "Conflict")    # sent again: it is stale now
        # A fault without `after` still refuses before anything happens.
        C.post("/sim/faults", {"method": "DELETE", "path_regex": "configmaps/a$", "code": 504, "count": 1})
        self.assertEqual(C.delete(base + "/a").status, 504)
        self.assertEqual(C.get(base + "/a").status, 200)
        mine = [w for w in C.get("/sim/writes?since=%d" % since).json["writes"] if ns in w["path"]]
        self.assertEqual([(w["method"], w["code"], w["served"]) for w in mine],
                         [("PUT", 504, 200), ("PUT", 409, 409), ("DELETE", 504, 504)])

    def test_latency(self):
        C.post("/sim/latency", {"ms": 300})
        try:
            t0 = time.monotonic()
            C.get("/api/v1/namespaces/default")
            self.assertGreater(time.monotonic() - t0, 0.25)
        finally:
            C.post("/sim/latency", {"ms": 0})

    def test_drop_watches(self):
        ns = new_ns()
        w = C.watch("/api/v1/namespaces/%s/configmaps?watch=true" % ns)
        time.sleep(0.2)
        self.assertEqual(C.post("/sim/drop-watches", {}).status, 200)
        self.assertTrue(w.ended.wait(5))
        self.assertTrue(w.clean_end)
        w = C.watch("/api/v1/namespaces/%s/configmaps?watch=true" % ns)
        time.sleep(0.2)
        C.post("/sim/drop-watches", {"abort": True})
        self.assertTrue(w.ended.wait(5))
        self.assertFalse(w.clean_end)
        C.post("/sim/drop-watches", {"abort": False})
        w = C.watch("/api/v1/namespaces/%s/configmaps?watch=true" % ns)   # new watches work
        C.post("/api/v1/namespaces/%s/configmaps" % ns, cm("after"))
        self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "after")
        w.close()


# ---------------------------------------------------------------- other simulators
class PlainHttp(Base):
    def test_plain_http_and_restart_keeps_data(self):
        s = Sim(["--plain-http"], crds=False)
        _started.append(s)
        self.assertTrue(s.url.startswith("http://"))
        c = s.client(token=None)            # no auth over plain HTTP (kubectl sends none)
        self.assertEqual(c.post("/api/v1/namespaces/default/configmaps", cm("keep")).status, 201)
        epid = s.etcd_pid()
        s.stop(keep_dir=True)
        _started.remove(s)
        self.assertFalse(_pid_running(epid), "private etcd outlived the simulator")
        self.assertFalse(os.path.exists(os.path.join(s.dir, "ready")))
        s2 = Sim(["--plain-http"], crds=False, ip=s.ip, dir=s.dir)   # same DIR: same data
        _started.append(s2)
        r = s2.client(token=None).get("/api/v1/namespaces/default/configmaps/keep")
        self.assertEqual(r.status, 200, r)

    def test_sigkill_does_not_leak_etcd(self):
        s = Sim(["--plain-http"], crds=False)
        _started.append(s)
        epid = s.etcd_pid()
        s.proc.kill()
        s.proc.wait()
        deadline = time.monotonic() + 5
        while _pid_running(epid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(_pid_running(epid), "PR_SET_PDEATHSIG did not stop etcd")
        s.stop()
        _started.remove(s)


class Compaction(Base):
    def test_compact_keep(self):
        s = Sim(["--plain-http", "--compact-keep", "2", "--compact-interval", "0.3"], crds=False)
        _started.append(s)
        c = s.client(token=None)
        first = c.post("/api/v1/namespaces/default/configmaps", cm("k0")).json
        for i in range(6):
            c.patch("/api/v1/namespaces/default/configmaps/k0", {"data": {"i": str(i)}})
        time.sleep(1.2)
        w = c.watch("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" +
                    first["metadata"]["resourceVersion"])
        ev = w.next()
        self.assertEqual((ev["type"], ev["object"]["code"]), ("ERROR", 410))
        s.stop()
        _started.remove(s)


def _pid_running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _write_atomically(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


class ExternalEtcd(Base):
    """Storage mode (b): external TLS etcd, failover, kube-apiserver revisions."""

    def test_mode_b(self):
        etcd = TlsEtcd()
        try:
            dead = "https://%s.1:2379" % etcd.ip.rsplit(".", 1)[0]
            s = Sim(["--etcd-endpoints", "%s,%s" % (dead, etcd.url), "--etcd-cacert", etcd.cacert,
                     "--etcd-cert", etcd.cert, "--etcd-key", etcd.key,
                     "--kas-node-names", "master-0,master-1"])
            _started.append(s)
            c = s.client()
            # failover: the first endpoint is dead, everything still works
            self.assertEqual(c.post("/api/v1/namespaces/default/configmaps", cm("b1")).status, 201)
            w = c.watch("/api/v1/namespaces/default/configmaps?watch=true")
            self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "b1")
            w.close()
            kas = self._wait_kas(c, 1)
            self.assertEqual(self._servers(c, 1), sorted([dead, etcd.url]))
            self.assertEqual(sorted(n["nodeName"] for n in kas["status"]["nodeStatuses"]),
                             ["master-0", "master-1"])
            # the operator publishes etcd-endpoints with a bootstrap annotation
            boot = etcd.ip.rsplit(".", 1)[0] + ".254"
            c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "openshift-etcd"}})
            r = c.post("/api/v1/namespaces/openshift-etcd/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                    "name": "etcd-endpoints",
                    "annotations": {"alpha.installer.openshift.io/etcd-bootstrap": boot}},
                "data": {"member-id-1": etcd.ip}})
            self.assertEqual(r.status, 201)
            self._wait_kas(c, 2)
            self.assertEqual(self._servers(c, 2), sorted([etcd.url, "https://%s:2379" % boot]))
            self.assertEqual(c.get("/api/v1/namespaces/default/configmaps/b1").status, 200)
            # bootstrap removed: annotation dropped -> new revision without it
            c.patch("/api/v1/namespaces/openshift-etcd/configmaps/etcd-endpoints",
                    {"metadata": {"annotations": {"alpha.installer.openshift.io/etcd-bootstrap": None}}})
            kas = self._wait_kas(c, 3)
            self.assertEqual(self._servers(c, 3), [etcd.url])
            self.assertEqual([n["currentRevision"] for n in kas["status"]["nodeStatuses"]], [3, 3])
            self.assertEqual(c.get("/sim/stats").json["etcdEndpoints"], [etcd.url])
            self.assertEqual(c.get("/sim/stats").json["etcdPreferred"], etcd.url)
            # still serving after the switch, including watches
            w = c.watch("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" +
                        c.get("/api/v1/namespaces/default/configmaps").json["metadata"]["resourceVersion"])
            c.post("/api/v1/namespaces/default/configmaps", cm("b2"))
            self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "b2")
            # etcd "restored" to an older revision: open watches end, the watch cache
            # follows the new history, and old resourceVersions are too large
            old_rv = c.get("/api/v1/namespaces/default/configmaps").json["metadata"]["resourceVersion"]
            etcd.restart_empty()
            self.assertTrue(w.ended.wait(10))
            deadline = time.monotonic() + 15
            while c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "default"}}).status != 201:
                self.assertLess(time.monotonic(), deadline, s.tail())
                time.sleep(0.3)
            w = c.watch("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0")
            c.post("/api/v1/namespaces/default/configmaps", cm("b3"))
            self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "b3")
            w.close()
            self.assertEqual(c.get("/api/v1/namespaces/default/configmaps?resourceVersion=%s&"
                                   "resourceVersionMatch=NotOlderThan" % old_rv).status, 504)
            s.stop()
            _started.remove(s)
        finally:
            etcd.stop()

    def test_mode_b_etcd_starts_later(self):
        """As on a bootstrap host: the kubeconfig exists before the etcd runs; until
        etcd answers, connections are refused and DIR/ready is absent."""
        etcd = TlsEtcd()
        try:
            etcd.proc.terminate()
            etcd.proc.wait(10)
            args = ["--etcd-endpoints", etcd.url, "--etcd-cacert", etcd.cacert, "--etcd-cert", etcd.cert,
                    "--etcd-key", etcd.key]
            s = Sim(args + ["--etcd-wait", "60"], wait_for="kubeconfig")
            _started.append(s)
            self.assertFalse(os.path.exists(os.path.join(s.dir, "ready")))
            port = int(s.url.rsplit(":", 1)[1])
            with self.assertRaises(ConnectionRefusedError):
                socket.create_connection((s.ip, port), 1).close()
            etcd._start()
            self._wait_ready(s)
            c = s.client()
            self.assertEqual(c.post("/api/v1/namespaces/default/configmaps", cm("late")).status, 201)
            s.stop()
            _started.remove(s)

            # An etcd that never comes: the simulator gives up after --etcd-wait and says why.
            etcd.proc.terminate()
            etcd.proc.wait(10)
            t0 = time.monotonic()
            s = Sim(args + ["--etcd-wait", "1"], wait_for="kubeconfig")
            _started.append(s)
            self.assertNotEqual(s.proc.wait(20), 0)
            self.assertLess(time.monotonic() - t0, 15)
            self.assertIn("etcd not reachable", s.tail())
            _started.remove(s)
        finally:
            etcd.stop()

    def test_mode_b_refused_body_leaves_the_connection_clean(self):
        """A request answered before its body was read (etcd gone while the RBAC authorizer
        refreshes its cache) must leave none of that body on its keep-alive connection: the next
        request on it is answered as itself, not parsed out of the last body (a front such as
        nghttpx pools these connections for every client)."""
        etcd = TlsEtcd()
        try:
            s = Sim(["--etcd-endpoints", etcd.url, "--etcd-cacert", etcd.cacert, "--etcd-cert", etcd.cert,
                     "--etcd-key", etcd.key, "--etcd-wait", "60"], wait_for="kubeconfig")
            _started.append(s)
            self._wait_ready(s)
            admin = s.client()
            self.assertIn(admin.post("/api/v1/namespaces/default/serviceaccounts", {
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app"}}).status, (201, 409))
            r = admin.post("/api/v1/namespaces/default/serviceaccounts/app/token", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
            self.assertEqual(r.status, 201, r)
            sa = s.client(token=r.json["status"]["token"])
            self.assertEqual(sa.get("/api").status, 200)
            # Past the authorizer's cache age (1 s), within the token's (5 s): the next
            # request's authorization reads etcd.
            etcd.proc.kill()
            etcd.proc.wait(10)
            time.sleep(1.5)
            r = sa.post("/api/v1/namespaces/default/configmaps", cm("x", {"k": "v" * 20000}))
            self.assertEqual(r.status, 503, r)
            r = sa.get("/api/v1/namespaces/default/configmaps/x")
            self.assertEqual(r.status, 503, r)
            self.assertIn("storage is unavailable", r.json["message"])
            s.stop()
            _started.remove(s)
        finally:
            etcd.stop()

    def test_mode_b_localhost(self):
        """Each master's kube-apiserver also reaches its own etcd at https://localhost:2379: after
        the whole cluster moved, the configured endpoints name an address nobody has and one whose
        certificate names the old address, and the API answers only once the masters' addresses
        (--etcd-local-file) are known, the certificate checked for "localhost"."""
        old = random_loopback()
        etcd = TlsEtcd(cert_ip=old)
        try:
            local = os.path.join(etcd.dir, "local-etcd")
            with open(local, "w") as f:
                f.write("\n")
            s = Sim(["--etcd-endpoints", "https://%s:2379,%s" % (old, etcd.url), "--etcd-cacert", etcd.cacert,
                     "--etcd-cert", etcd.cert, "--etcd-key", etcd.key, "--etcd-local-file", local,
                     "--etcd-wait", "60"], wait_for="kubeconfig")
            _started.append(s)
            time.sleep(2)
            self.assertFalse(os.path.exists(os.path.join(s.dir, "ready")), s.tail())
            _write_atomically(local, "%s\n" % etcd.ip)
            self._wait_ready(s)
            c = s.client()
            self.assertEqual(c.post("/api/v1/namespaces/default/configmaps", cm("moved")).status, 201)
            w = c.watch("/api/v1/namespaces/default/configmaps?watch=true")
            self.assertEqual(w.collect(1)[0]["object"]["metadata"]["name"], "moved")
            w.close()
            # The master goes away: nothing answers any more.
            _write_atomically(local, "%s\n" % old)
            self.assertEqual(c.get("/api/v1/namespaces/default/configmaps/moved").status, 503)
            s.stop()
            _started.remove(s)
        finally:
            etcd.stop()

    def _wait_ready(self, s, timeout=30):
        """Until the simulator writes DIR/ready (it reached etcd), failing if it exits."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(os.path.join(s.dir, "ready")):
            self.assertLess(time.monotonic(), deadline, s.tail())
            self.assertIsNone(s.proc.poll(), s.tail())
            time.sleep(0.1)

    def _wait_kas(self, c, n, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            r = c.get("/apis/operator.openshift.io/v1/kubeapiservers/cluster")
            if r.status == 200:
                st = r.json.get("status") or {}
                if st.get("latestAvailableRevision") == n and all(
                        x.get("currentRevision") == n for x in st.get("nodeStatuses") or [{}]):
                    return r.json
            self.assertLess(time.monotonic(), deadline, "no kube-apiserver revision %d: %s" % (n, r))
            time.sleep(0.2)

    def _servers(self, c, n):
        r = c.get("/api/v1/namespaces/openshift-kube-apiserver/configmaps/config-%d" % n)
        self.assertEqual(r.status, 200, r)
        return json.loads(r.json["data"]["config.yaml"])["apiServerArguments"]["etcd-servers"]


# ---------------------------------------------------------------- RBAC (c36)
RBAC = "/apis/rbac.authorization.k8s.io/v1"


class Rbac(Base):
    """ServiceAccount tokens (TokenRequest) and the RBAC authorizer, with kube-apiserver's
    exact denials and escalation prevention."""

    def _sa_client(self, ns, name="app"):
        r = C.post("/api/v1/namespaces/%s/serviceaccounts" % ns, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
        self.assertIn(r.status, (201, 409), r)
        r = C.post("/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, name), {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["kind"], "TokenRequest")
        self.assertTrue(r.json["status"]["expirationTimestamp"].endswith("Z"))
        return SIM.client(token=r.json["status"]["token"])

    def _grant(self, ns, name, rules, sa="app", cluster=False, sa_ns=None):
        kind = "ClusterRole" if cluster else "Role"
        base = RBAC if cluster else "%s/namespaces/%s" % (RBAC, ns)
        r = C.post(base + ("/clusterroles" if cluster else "/roles"), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "rules": rules})
        self.assertEqual(r.status, 201, r)
        r = C.post(base + ("/clusterrolebindings" if cluster else "/rolebindings"), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind + "Binding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": sa_ns or ns}]})
        self.assertEqual(r.status, 201, r)

    def test_c36_token_and_denials(self):
        ns = new_ns("rbac")
        sa = self._sa_client(ns)
        user = "system:serviceaccount:%s:app" % ns
        # every authenticated user may discover the API
        for path in ("/api", "/apis", "/version", "/api/v1", "/apis/apps/v1"):
            self.assertEqual(sa.get(path).status, 200, path)
        r = sa.get("/api/v1/namespaces/%s/pods" % ns)
        st = self.assertStatus(r, 403, "Forbidden")
        self.assertEqual(st["message"], 'pods is forbidden: User "%s" cannot list resource "pods" in API '
                         'group "" in the namespace "%s"' % (user, ns))
        self.assertEqual(st["details"], {"kind": "pods"})
        st = self.assertStatus(sa.get("/api/v1/namespaces/%s/configmaps/x" % ns), 403)
        self.assertEqual(st["message"], 'configmaps "x" is forbidden: User "%s" cannot get resource '
                         '"configmaps" in API group "" in the namespace "%s"' % (user, ns))
        st = self.assertStatus(sa.get("/apis/apps/v1/deployments"), 403)
        self.assertEqual(st["message"], 'deployments.apps is forbidden: User "%s" cannot list resource '
                         '"deployments" in API group "apps" at the cluster scope' % user)
        st = self.assertStatus(sa.post("/api/v1/namespaces/%s/pods/p/eviction" % ns, {}), 403)
        self.assertIn('cannot create resource "pods/eviction"', st["message"])
        st = self.assertStatus(sa.get("/sim/stats"), 403)
        self.assertEqual(st["message"], 'forbidden: User "%s" cannot get path "/sim/stats"' % user)
        # a Role in the namespace: list but not watch, one named ConfigMap, pods/status only
        self._grant(ns, "reader", [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["mine"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}])
        self.assertEqual(sa.get("/api/v1/namespaces/%s/pods" % ns).status, 200)
        self.assertStatus(sa.get("/api/v1/namespaces/%s/pods?watch=true" % ns), 403)
        self.assertStatus(sa.get("/api/v1/namespaces/%s/configmaps/other" % ns), 403)
        self.assertStatus(sa.get("/api/v1/namespaces/%s/configmaps/mine" % ns), 404, "NotFound")
        # a watch of one name is a get of that name to RBAC only when it has resourceNames rules
        st = self.assertStatus(sa.get("/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3Dmine"
                                      "&watch=true" % ns), 403)
        self.assertIn('"mine" is forbidden: User "%s" cannot watch' % user, st["message"])
        self.assertStatus(sa.patch("/api/v1/namespaces/%s/pods/p" % ns, {}), 403)
        self.assertStatus(sa.patch("/api/v1/namespaces/%s/pods/p/status" % ns, {}), 404, "NotFound")
        # only in its namespace; the cluster scope needs a ClusterRoleBinding
        other = new_ns("rbac")
        self.assertStatus(sa.get("/api/v1/namespaces/%s/pods" % other), 403)
        self.assertStatus(sa.get("/api/v1/pods"), 403)
        self._grant(ns, "node-reader-" + ns, [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["*"]}],
                    cluster=True)
        self.assertEqual(sa.get("/api/v1/nodes").status, 200)
        # the denials are kept for tests
        log = C.get("/sim/forbidden").json["forbidden"]
        mine = [f for f in log if f["user"] == user]
        self.assertTrue(any(f["verb"] == "watch" and f["path"].endswith("/pods") for f in mine), mine[-5:])

    def test_c36_default_service_account(self):
        ns = new_ns("rbac")   # kube-controller-manager's service account controller
        deadline = time.monotonic() + 10
        while C.get("/api/v1/namespaces/%s/serviceaccounts/default" % ns).status != 200:
            self.assertLess(time.monotonic(), deadline, "no ServiceAccount default in a new namespace")
            time.sleep(0.1)

    def test_c36_bad_tokens(self):
        ns = new_ns("rbac")
        sa = self._sa_client(ns, "gone")
        self.assertEqual(sa.get("/api").status, 200)
        forged = sa.token[:-2] + ("AA" if not sa.token.endswith("AA") else "BB")
        self.assertStatus(SIM.client(token=forged).get("/api"), 401, "Unauthorized")
        r = C.post("/api/v1/namespaces/%s/serviceaccounts/gone/token" % ns, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}})
        st = self.assertStatus(r, 422, "Invalid")
        self.assertIn("may not specify a duration less than 10 minutes", st["message"])
        self.assertStatus(C.post("/api/v1/namespaces/%s/serviceaccounts/none/token" % ns, {}), 404)
        # the token dies with its ServiceAccount, also when one of the same name comes back
        self.assertEqual(C.delete("/api/v1/namespaces/%s/serviceaccounts/gone" % ns).status, 200)
        self.assertStatus(sa.get("/api"), 401, "Unauthorized")
        r = C.post("/api/v1/namespaces/%s/serviceaccounts" % ns, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gone"}})
        self.assertEqual(r.status, 201, r)
        self.assertStatus(sa.get("/api"), 401, "Unauthorized")

    def test_c36_escalation(self):
        ns = new_ns("rbac")
        sa = self._sa_client(ns)
        user = "system:serviceaccount:%s:app" % ns
        self._grant(ns, "role-admin", [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
             "verbs": ["create", "update", "get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])

        def role(name, rules):
            return sa.post("%s/namespaces/%s/roles" % (RBAC, ns), {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": name}, "rules": rules})
        self.assertEqual(role("held", [{"apiGroups": [""], "resources": ["configmaps"],
                                        "verbs": ["get"]}]).status, 201)
        st = self.assertStatus(role("more", [{"apiGroups": [""], "resources": ["secrets", "configmaps"],
                                              "verbs": ["get"]}]), 403, "Forbidden")
        self.assertTrue(st["message"].startswith(
            'roles.rbac.authorization.k8s.io "more" is forbidden: user "%s" (groups=' % user), st["message"])
        self.assertIn("attempting to grant RBAC permissions not currently held:\n"
                      '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}', st["message"])
        self.assertNotIn('Resources:["configmaps"]', st["message"])
        # a wildcard is held only through a wildcard
        self.assertStatus(role("wild", [{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}]), 403)
        # updating a held role to grant more is refused too
        r = sa.get("%s/namespaces/%s/roles/held" % (RBAC, ns))
        body = r.json
        body["rules"][0]["verbs"] = ["get", "delete"]
        self.assertStatus(sa.put("%s/namespaces/%s/roles/held" % (RBAC, ns), body), 403)

        def binding(name, role_name):
            return sa.post("%s/namespaces/%s/rolebindings" % (RBAC, ns), {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]})
        self.assertEqual(binding("b1", "held").status, 201)
        r = C.post("%s/namespaces/%s/roles" % (RBAC, ns), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "secrets"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
        self.assertEqual(r.status, 201, r)
        st = self.assertStatus(binding("b2", "secrets"), 403)
        self.assertIn('rolebindings.rbac.authorization.k8s.io "b2" is forbidden', st["message"])
        self.assertStatus(binding("b3", "no-such-role"), 404, "NotFound")
        # the bind verb on that role (by name) allows binding it without holding it
        self._grant(ns, "binder", [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                                    "verbs": ["bind"], "resourceNames": ["secrets"]}])
        self.assertEqual(binding("b2", "secrets").status, 201)
        # the admin (system:masters) is never checked
        r = C.post("%s/namespaces/%s/roles" % (RBAC, ns), {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "all"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
        self.assertEqual(r.status, 201, r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
