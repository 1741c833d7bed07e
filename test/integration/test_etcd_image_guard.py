#!/usr/bin/env python3
"""The etcd pod's setup container holds the etcd image to the minor the release declares.

A release names its etcd image and, beside it, the etcd minor that image carries
(ETCD_IMAGE_VERSION of the operator's Deployment). The operator spells every etcd setting
for that minor and decides etcd's upgrade or downgrade from it, so a release that changed
one without the other would be misread: a 3.6 image declared 3.5 reads as a rollback to
undo. The setup container (image: the etcd image) compares `etcd --version` with the
declared minor and refuses to go on; on the first node the rollout reaches, etcd is then
not started, and the rollout waits there with the other members keeping quorum.

Run here: the setup container's script, as TargetConfigController renders it into
etcd-pod (the golden file unit/test-controller-target-config keeps equal to what it
renders, for etcd 3.5), with the commands of an image root filesystem first on PATH
(hack/image-rootfs.py's images/etcd: Debian's etcd 3.5; images/etcd-3.6: the etcd
hack/build-etcd.sh builds), in a private mount namespace with a tmpfs on /var/log (the
container's log-dir volume), as kubelet-sim's shim runs a container:
  - the 3.5 image passes, and the script goes on to make /var/log/etcd;
  - the 3.6 image stops with exit 1 and a message naming both minors and the fix, before
    anything else;
  - an image without an etcd stops the same way.
Needs root (a mount namespace), as kubelet-sim does.
Usage: test_etcd_image_guard.py IMAGES_DIR GOLDEN_POD_YAML"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
from kubeletsim import yaml_lite  # noqa: E402

SKIP = 77


def setup_script(pod_yaml):
    with open(pod_yaml) as f:
        pod = yaml_lite.load(f.read())
    for c in pod["spec"]["initContainers"]:
        if c["name"] == "setup":
            assert c["command"][:2] == ["/bin/sh", "-c"], c["command"]
            return c["image"], c["command"][2]
    raise AssertionError("%s: no init container `setup`" % pod_yaml)


def run(script, image_root):
    """The script with the image's commands first on PATH; (exit code, stderr, what /var/log
    held after it: the tmpfs is private to the run)."""
    path = ":".join(os.path.join(image_root, d) for d in ("usr/bin", "bin", "usr/sbin", "sbin"))
    inner = ('mount -t tmpfs tmpfs /var/log && PATH="$1" /bin/sh -c "$2"; rc=$?; '
             'ls -A /var/log >&3; exit $rc')
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                        "exec 3>&1 1>&2; " + inner, "guard", path, script],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr, r.stdout.split()


def main():
    images, golden = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        print("SKIP: needs root for a private mount namespace (unshare --mount), as kubelet-sim does")
        return SKIP
    image, script = setup_script(golden)
    assert "etcd --version" in script, "the setup container does not check the etcd image:\n" + script

    rc, err, logdir = run(script, os.path.join(images, "etcd"))
    assert rc == 0, "the 3.5 image (images/etcd) was refused (exit %d): %s" % (rc, err)
    assert logdir == ["etcd"], "the script did not go on to make /var/log/etcd: %s" % logdir
    print("ok: images/etcd (etcd 3.5) passes the guard of an etcd-pod declared 3.5; /var/log/etcd made")

    rc, err, logdir = run(script, os.path.join(images, "etcd-3.6"))
    assert rc == 1, "the 3.6 image under a 3.5 declaration: exit %d, not 1: %s" % (rc, err)
    for want in ("carries etcd 3.6.", "declares etcd 3.5", "ETCD_IMAGE_VERSION", image,
                 "changes the etcd image and ETCD_IMAGE_VERSION together", "not started on this node"):
        assert want in err, "the refusal does not say %r: %s" % (want, err)
    assert logdir == [], "the refused script went on: /var/log holds %s" % logdir
    print("ok: images/etcd-3.6 refused: %s" % err.strip())

    # An image with no etcd at all (the operator's own: images/base has none).
    empty = os.path.join(images, "base")
    rc, err, logdir = run(script, empty)
    assert rc == 1 and "none that answers etcd --version" in err and logdir == [], (rc, err, logdir)
    print("ok: an image without etcd refused: %s" % err.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
