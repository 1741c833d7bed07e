"""Unit tests of kubelet-sim's YAML subset loader (kubeletsim/yaml_lite.py), which reads the
kubeconfig and the static pod manifests. Run alone with
`python3 -m unittest kubeletsim.test_yaml_lite` from test/sim (ctest kubelet-sim-units).
"""

import glob
import os
import unittest

from kubeletsim import yaml_lite

# The real OpenShift CRDs, vendored in the repository (manifests/crds).
CRDS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "manifests", "crds"))


def _read(path):
    with open(path) as f:
        return f.read()


class YamlLiteTest(unittest.TestCase):
    def test_block_structures(self):
        self.assertEqual(yaml_lite.load("a: 1\nb:\n  c: [1, 2]\n  d: {e: f}\nl:\n- x\n- k: v\n  k2: v2\n"),
                         {"a": 1, "b": {"c": [1, 2], "d": {"e": "f"}}, "l": ["x", {"k": "v", "k2": "v2"}]})
        self.assertEqual(yaml_lite.load("- - a\n  - b\n- c\n"), [["a", "b"], "c"])
        self.assertEqual(yaml_lite.load("k:\n- 1\n- 2\nz: 3\n"), {"k": [1, 2], "z": 3})

    def test_scalars(self):
        d = yaml_lite.load("a: ~\nb: null\nc:\nd: yes\ne: off\nf: 0x1F\ng: 010\nh: 1.5e3\ni: '07'\n"
                           "j: \"x\\ty\\u00e9\"\nk: -.inf\nl: 12:30\nm: 1_000\n")
        self.assertEqual(d["a"], None)
        self.assertEqual(d["b"], None)
        self.assertEqual(d["c"], None)
        self.assertIs(d["d"], True)
        self.assertIs(d["e"], False)
        self.assertEqual(d["f"], 31)
        self.assertEqual(d["g"], 8)          # go-yaml v2: leading 0 is octal
        self.assertEqual(d["h"], 1500.0)
        self.assertEqual(d["i"], "07")
        self.assertEqual(d["j"], "x\ty\u00e9")
        self.assertEqual(d["k"], float("-inf"))
        self.assertEqual(d["l"], "12:30")    # no YAML 1.1 sexagesimals
        self.assertEqual(d["m"], 1000)

    def test_block_scalars(self):
        self.assertEqual(yaml_lite.load("k: |\n  a\n   b\n\n  c\n\n")["k"], "a\n b\n\nc\n")
        self.assertEqual(yaml_lite.load("k: |-\n  a\n")["k"], "a")
        self.assertEqual(yaml_lite.load("k: |+\n  a\n\n\n")["k"], "a\n\n\n")
        self.assertEqual(yaml_lite.load("k: >\n  a\n  b\n\n  c\n   d\n  e\n")["k"], "a b\nc\n d\ne\n")
        self.assertEqual(yaml_lite.load("k: >-\n  a\n  b\n")["k"], "a b")
        self.assertEqual(yaml_lite.load("k: |2\n   x\n  y\n")["k"], " x\ny\n")

    def test_multiline_and_comments(self):
        d = yaml_lite.load("# top\na: plain\n  continued # c\nb: 'it''s\n  two\n\n  three'\n"
                           "c: \"x\\\n  y\"\nurl: http://x/#frag # real comment\nh: a#b\n")
        self.assertEqual(d, {"a": "plain continued", "b": "it's two\nthree", "c": "xy",
                             "url": "http://x/#frag", "h": "a#b"})

    def test_documents_and_json(self):
        self.assertEqual(yaml_lite.load_all("---\na: 1\n---\n# empty\n---\nb: 2\n...\n"),
                         [{"a": 1}, {"b": 2}])
        self.assertEqual(yaml_lite.load('{"a": [1, 2.5, true, null, "s"], "b": {}}'),
                         {"a": [1, 2.5, True, None, "s"], "b": {}})
        self.assertEqual(yaml_lite.load("a: [\n  1,\n  2\n]\n"), {"a": [1, 2]})

    def test_rejections(self):
        for bad in ("a: &x 1\n", "a: *x\n", "a: 1\na: 2\n", "a: 'open\n", "%YAML 1.2\n---\na: 1\n"):
            with self.assertRaises(yaml_lite.YamlError, msg=bad):
                yaml_lite.load(bad)

    def test_openshift_crds_parse(self):
        files = glob.glob(os.path.join(CRDS, "*.yaml"))
        self.assertTrue(files, CRDS)
        for f in files:
            d = yaml_lite.load(_read(f))
            self.assertEqual(d["kind"], "CustomResourceDefinition", f)
            self.assertTrue(d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"])
        etcd = yaml_lite.load(_read(os.path.join(CRDS, "0000_12_etcd_01_etcds.crd.yaml")))
        spec = etcd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        self.assertEqual(spec["properties"]["backendQuotaGiB"]["default"], 8)
        self.assertTrue(spec["properties"]["backendQuotaGiB"]["description"].startswith(
            "backendQuotaGiB sets the etcd backend storage size limit in gibibytes.\nThe value"))


if __name__ == "__main__":
    unittest.main()
