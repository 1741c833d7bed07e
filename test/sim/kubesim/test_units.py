"""Unit tests of the simulator's pure modules: patches, selectors,
CEL, JSONPath, time formatting.  Run alone with
`python3 -m unittest kubesim.test_units` from test/sim, or as part of test_sim.py.
"""

import glob
import os
import unittest

from kubeletsim import yaml_lite
from kubesim import api, cel, cron, etcd, jsonpath, objects, patch
from kubesim.errors import ApiError
from kubesim.selectors import FieldSelector, LabelSelector

# The real OpenShift CRDs, vendored in the repository (manifests/crds).
CRDS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "manifests", "crds"))


def _read(path):
    with open(path) as f:
        return f.read()


class PatchTest(unittest.TestCase):
    def test_merge_patch_rfc7386(self):
        cases = [({"a": "b"}, {"a": "c"}, {"a": "c"}), ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
                 ({"a": "b"}, {"a": None}, {}), ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
                 ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
                 ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}), ({}, {"a": {"bb": {"ccc": None}}},
                                                                 {"a": {"bb": {}}})]
        for target, p, want in cases:
            self.assertEqual(patch.merge_patch(target, p), want)

    def test_json_patch_rfc6902(self):
        doc = {"foo": ["bar", "baz"], "q": {"x": 1}}
        out = patch.json_patch(doc, [{"op": "add", "path": "/foo/1", "value": "qux"},
                                     {"op": "add", "path": "/foo/-", "value": "end"},
                                     {"op": "remove", "path": "/foo/0"},
                                     {"op": "replace", "path": "/q/x", "value": 2},
                                     {"op": "copy", "from": "/q", "path": "/r"},
                                     {"op": "move", "from": "/q/x", "path": "/q/y"},
                                     {"op": "test", "path": "/r/x", "value": 2},
                                     {"op": "add", "path": "/a~1b", "value": 1}])
        self.assertEqual(out, {"foo": ["qux", "baz", "end"], "q": {"y": 2}, "r": {"x": 2}, "a/b": 1})
        self.assertEqual(doc["foo"], ["bar", "baz"])   # input untouched
        for bad in ([{"op": "test", "path": "/foo/0", "value": "nope"}],
                    [{"op": "remove", "path": "/nope"}], [{"op": "replace", "path": "/nope", "value": 1}],
                    [{"op": "add", "path": "/foo/9", "value": 1}], [{"op": "bogus", "path": "/"}],
                    [{"op": "move", "from": "/q", "path": "/q/z"}]):
            with self.assertRaises(patch.PatchError, msg=bad):
                patch.json_patch(doc, bad)
        self.assertEqual(patch.json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}]),
                         {"a": 1})

    def test_strategic(self):
        orig = {"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
                                        {"name": "b", "image": "1"}]},
                "metadata": {"finalizers": ["f1"], "labels": {"k": "v", "j": "w"}}}
        out = patch.strategic_merge(orig, {
            "spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]},
                                    {"name": "b", "$patch": "delete"}]},
            "metadata": {"finalizers": ["f2"], "labels": {"j": None}}})
        self.assertEqual(out["spec"]["containers"], [{"name": "a", "image": "1", "env": [
            {"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}])
        self.assertEqual(out["metadata"], {"finalizers": ["f1", "f2"], "labels": {"k": "v"}})
        out = patch.strategic_merge(orig, {"spec": {"containers": [{"$patch": "replace"},
                                                                   {"name": "z"}]}})
        self.assertEqual(out["spec"]["containers"], [{"name": "z"}])
        out = patch.strategic_merge(orig, {"metadata": {"$retainKeys": ["labels"], "labels": {"n": "1"}}})
        self.assertEqual(out["metadata"], {"labels": {"k": "v", "j": "w", "n": "1"}})
        out = patch.strategic_merge(orig, {"spec": {"$setElementOrder/containers": [
            {"name": "b"}, {"name": "a"}]}})
        self.assertEqual([c["name"] for c in out["spec"]["containers"]], ["b", "a"])
        out = patch.strategic_merge({"status": {"conditions": [{"type": "A", "status": "F"}]}},
                                    {"status": {"conditions": [{"type": "A", "status": "T"},
                                                               {"type": "B", "status": "T"}]}})
        self.assertEqual(out["status"]["conditions"], [{"type": "A", "status": "T"},
                                                       {"type": "B", "status": "T"}])
        out = patch.strategic_merge({"spec": {"ports": [{"port": 80, "name": "h"}]}},
                                    {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}]}})
        self.assertEqual(out["spec"]["ports"], [{"port": 80, "name": "http"}, {"port": 443}])

    def test_apply_patch_errors(self):
        with self.assertRaises(ApiError) as e:
            patch.apply_patch("application/merge-patch+json", {}, b"{nope")
        self.assertEqual(e.exception.code, 400)
        with self.assertRaises(ApiError) as e:
            patch.apply_patch("application/json-patch+json", {}, b'[{"op":"remove","path":"/x"}]')
        self.assertEqual(e.exception.code, 422)


class SelectorTest(unittest.TestCase):
    def test_labels(self):
        m = lambda s, l: LabelSelector(s).matches(l)  # noqa: E731
        self.assertTrue(m("", {}))
        self.assertTrue(m("a=b", {"a": "b"}))
        self.assertFalse(m("a=b", {}))
        self.assertTrue(m("a!=b", {}))
        self.assertTrue(m("a notin (b,c)", {}))
        self.assertFalse(m("a notin (b,c)", {"a": "c"}))
        self.assertTrue(m("a in (b, c)", {"a": "c"}))
        self.assertTrue(m("!a,b", {"b": "1"}))
        self.assertTrue(m("node-role.kubernetes.io/master", {"node-role.kubernetes.io/master": ""}))
        self.assertTrue(m("n>3", {"n": "4"}))
        self.assertFalse(m("n<3", {"n": "x"}))
        for bad in ("a in b", "a=b=c", "=b", "a in (", "a,", "-a=b", "a=" + "x" * 64):
            with self.assertRaises(ApiError, msg=bad):
                LabelSelector(bad)

    def test_fields(self):
        pod = {"metadata": {"name": "p", "namespace": "n"}, "spec": {"nodeName": "m0"},
               "status": {"phase": "Running"}}
        f = FieldSelector("spec.nodeName=m0,status.phase!=Pending", "", "pods")
        self.assertTrue(f.matches(pod))
        self.assertTrue(FieldSelector(r"metadata.name=p", "", "pods").matches(pod))
        self.assertEqual(FieldSelector("metadata.name==x", "", "pods").exact_name(), "x")
        with self.assertRaises(ApiError) as e:
            FieldSelector("spec.nodeName=m0", "", "configmaps")
        self.assertEqual(e.exception.code, 400)
        self.assertTrue(FieldSelector(r"metadata.name=a\,b", "", "configmaps").matches(
            {"metadata": {"name": "a,b"}}))


class CelTest(unittest.TestCase):
    def test_rules(self):
        E = cel.evaluate
        self.assertTrue(E("self >= oldSelf", 9, 8, True, False))
        self.assertFalse(E("self >= oldSelf", 7, 8, True, False))
        self.assertFalse(E("oldSelf.hasValue() || !has(self.currentRevision)",
                           {"currentRevision": 1}, None, False, True))
        self.assertTrue(E("has(self.currentRevision) || !has(oldSelf.currentRevision)",
                          {"currentRevision": 2}, {"currentRevision": 1}, True, False))
        self.assertTrue(E("size(self.filter(s, s.?targetRevision.orValue(0) != 0)) <= 1",
                          [{"targetRevision": 0}, {"targetRevision": 3}, {}], None, False, False))
        self.assertFalse(E("self.all(x, self.exists_one(y, x == y))", ["a", "a"], None, False, False))
        self.assertTrue(E("self.all(x, x in oldSelf) && oldSelf.all(x, x in self)", [1, 2], [2, 1],
                          True, False))
        self.assertTrue(E("isCIDR(self) && !isIP(self)", "10.0.0.0/8", None, False, False))
        self.assertTrue(E("!self.startsWith('openshift-io')", "x", None, False, False))
        self.assertTrue(E("has(self.a) ? self.a.b == 'x' : true", {}, None, False, False))
        self.assertIsNone(E("self.unknownFunction()", 1, None, False, False))
        self.assertIsNone(E("self.a.b == 1", {}, None, False, False))    # runtime error: skip


class CronTest(unittest.TestCase):
    def test_next_after(self):
        import datetime

        def t(*a):
            return datetime.datetime(*a, tzinfo=datetime.timezone.utc).timestamp()
        s = cron.Schedule("*/15 * * * *")
        self.assertEqual(s.next_after(t(2026, 11, 26, 10, 7, 30)), t(2026, 11, 26, 10, 15))
        self.assertEqual(s.next_after(t(2026, 11, 26, 10, 15)), t(2026, 11, 26, 10, 30))   # strictly after
        self.assertEqual(cron.Schedule("0 3 * * *").next_after(t(2026, 11, 26, 10, 0)), t(2026, 11, 27, 3, 0))
        self.assertEqual(cron.Schedule("@hourly").next_after(t(2026, 11, 26, 23, 59)), t(2026, 11, 27, 0, 0))
        self.assertEqual(cron.Schedule("@monthly").next_after(t(2026, 12, 5)), t(2027, 1, 1))
        # 2026-11-26 is a Thursday: the next Sunday (0 or 7 or SUN) is the 29th
        for dow in ("0", "7", "SUN"):
            self.assertEqual(cron.Schedule("30 1 * * %s" % dow).next_after(t(2026, 11, 26)), t(2026, 11, 29, 1, 30))
        # both day fields restricted: either matches (the 1st, or a Monday)
        self.assertEqual(cron.Schedule("0 0 1 * MON").next_after(t(2026, 11, 26)), t(2026, 11, 30))
        self.assertEqual(cron.Schedule("0 0 1-5/2 JAN *").next_after(t(2026, 11, 26)), t(2027, 1, 1))
        # in a time zone: 03:00 in Berlin (UTC+1 in November) is 02:00 UTC
        self.assertEqual(cron.Schedule("0 3 * * *", "Europe/Berlin").next_after(t(2026, 11, 26, 10)),
                         t(2026, 11, 27, 2, 0))

    def test_invalid(self):
        for bad in ("* * * *", "60 * * * *", "*/0 * * * *", "a * * * *", "0 0 32 * *", "@often"):
            with self.assertRaises(cron.CronError, msg=bad):
                cron.Schedule(bad)
        with self.assertRaises(cron.CronError):
            cron.Schedule("* * * * *", "Mars/Olympus_Mons")


class MiscTest(unittest.TestCase):
    def test_jsonpath(self):
        obj = {"status": {"conditions": [{"type": "A", "status": "F"}, {"type": "B", "status": "T"}],
                          "versions": [{"name": "operator", "version": "1"}]}}
        s = jsonpath.compile_path('.status.conditions[?(@.type=="B")].status')
        self.assertEqual(jsonpath.find(obj, s), ["T"])
        self.assertEqual(jsonpath.find(obj, jsonpath.compile_path(".status.conditions[0].type")), ["A"])
        self.assertEqual(jsonpath.find(obj, jsonpath.compile_path(".status.conditions[*].type")),
                         ["A", "B"])
        self.assertEqual(jsonpath.find(obj, jsonpath.compile_path(".missing.x")), [])

    def test_human_duration(self):
        h = objects.human_duration
        self.assertEqual([h(5), h(119), h(125), h(600), h(3 * 3600 + 60), h(50 * 3600), h(9 * 86400)],
                         ["5s", "119s", "2m5s", "10m", "3h1m", "2d2h", "9d"])

    def test_microtime(self):
        self.assertEqual(objects.normalize_micro("2025-01-01T01:00:00.5+01:00"),
                         "2025-01-01T00:00:00.500000Z")
        self.assertIsNone(objects.normalize_micro("yesterday"))


class SlowRequestTest(unittest.TestCase):
    def test_is_watch(self):
        self.assertTrue(api._is_watch("/api/v1/pods?watch=true&resourceVersion=5"))
        self.assertTrue(api._is_watch("/api/v1/pods?watch=1"))
        self.assertTrue(api._is_watch("/api/v1/watch/namespaces/a/pods"))
        self.assertFalse(api._is_watch("/api/v1/pods?watch=false"))
        self.assertFalse(api._is_watch("/api/v1/namespaces/watchers/pods"))

    def test_thread_spent(self):
        # An endpoint that refuses at once: the call fails, and its time still counts.
        c = etcd.EtcdClient(["http://127.0.0.1:9"], timeout=1.0)
        self.assertEqual(c.thread_spent(reset=True), (0, 0.0))
        for _ in range(2):
            with self.assertRaises(etcd.EtcdUnavailable):
                c.call("/v3/kv/range", {"key": "YQ=="})
        calls, spent = c.thread_spent()
        self.assertEqual(calls, 2)
        self.assertGreaterEqual(spent, 0.0)
        self.assertEqual(c.thread_spent(reset=True)[0], 2)
        self.assertEqual(c.thread_spent(), (0, 0.0))


if __name__ == "__main__":
    unittest.main()
