#!/usr/bin/env python3
"""Assembles the root filesystem of one of our images (images/*/Containerfile)
for the kubelet simulator, from this machine's Debian packages and our build,
so that a simulated container finds exactly the commands the real image has.

    hack/image-rootfs.py CONTAINERFILE CONTEXT_DIR OUT_DIR

The Containerfile is the definition; this reads the small subset of it that
our images use and refuses anything else:
  FROM docker.io/library/debian:<codename>-slim   Debian's Essential packages
  RUN apt-get update && apt-get install -y --no-install-recommends PKG...
      && rm -rf /var/lib/apt/lists/*              those packages
  RUN ln -s TARGET LINK [&& ln -s ...]            links inside the image
  COPY SRC DST                                    SRC from CONTEXT_DIR
  FROM docker.io/library/debian:<codename>-slim AS NAME
  RUN apt-get update && apt-get install ...       a build stage's packages
  COPY --from=NAME SRC... DST                     commands of that stage
  FROM docker.io/library/golang:<version>-<codename> AS NAME
  RUN go install MODULE/PKG@VERSION [&& go install ...]
                                                  a Go build stage: its /go/bin/<name> are
                                                  what hack/build-etcd.sh built, when that
                                                  script pins the same module at the same
                                                  version (only etcd's main packages are)
Every command a package installs (its files in /usr/bin, /usr/sbin, /bin,
/sbin) appears at its path in OUT_DIR as a link to this machine's file, and
COPY links to the build's file, so the rootfs stays current as the build
changes; /bin and /sbin link to usr/ as on a merged-/usr Debian. Libraries
are not modelled (the commands run with this machine's). The last stage is
the image and must be this machine's Debian release; an earlier stage may
be another release when its packages are installed here at a version that
release has (hack/install-deps.sh pins them so), and only the commands
COPY --from names reach the image. A package that is not installed here,
another release, or an instruction outside the subset is an error naming
the fix. OUT_DIR is replaced as a whole."""
import json
import os
import shlex
import shutil
import subprocess
import sys

BIN_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Go main packages a Go stage may install -> (the script that builds them here, its go.mod, the
# name it gives the binary). `go install` names a binary after the package path's last
# element, a major-version suffix dropped: go.etcd.io/etcd/server/v3 -> /go/bin/server.
GO_BUILT = {
    "go.etcd.io/etcd/server/v3": ("hack/build-etcd.sh", "hack/etcd/go.mod", "etcd"),
    "go.etcd.io/etcd/etcdctl/v3": ("hack/build-etcd.sh", "hack/etcd/go.mod", "etcdctl"),
    "go.etcd.io/etcd/etcdutl/v3": ("hack/build-etcd.sh", "hack/etcd/go.mod", "etcdutl"),
}


def die(msg):
    sys.exit("image-rootfs: %s" % msg)


def instructions(path):
    """(keyword, rest) per instruction, continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in open(path).read().splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            kw, _, rest = cur.partition(" ")
            out.append((kw.upper(), rest.strip()))
            cur = ""
    return out


def codename():
    for line in open("/etc/os-release"):
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return ""


def essential():
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Essential}\\n"], capture_output=True, text=True,
                         check=True).stdout
    return sorted(p for p, _, e in (l.partition(" ") for l in out.splitlines()) if e == "yes")


def package_commands(pkg):
    r = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True)
    if r.returncode != 0:
        die("package %s is not installed on this machine (hack/install-deps.sh installs what the images "
            "need)" % pkg)
    cmds = []
    for p in r.stdout.splitlines():
        if os.path.dirname(p) in BIN_DIRS and os.path.lexists(p) and not os.path.isdir(p):
            cmds.append(p)
    return cmds


def inside(out, path):
    """OUT_DIR/path, with /bin and /sbin folded into /usr as the image has them."""
    for d in ("/bin/", "/sbin/"):
        if path.startswith(d):
            path = "/usr" + path
    return os.path.join(out, path.lstrip("/"))


def link(out, target, path):
    dst = inside(out, path)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.lexists(dst):
        os.unlink(dst)
    os.symlink(target, dst)


def go_install_name(pkg):
    parts = pkg.split("/")
    if len(parts) > 1 and parts[-1].startswith("v") and parts[-1][1:].isdigit():
        parts.pop()
    return parts[-1]


def go_built(containerfile, pkg, version):
    """This machine's build of `go install pkg@version`: the binary the pinning script built."""
    if pkg not in GO_BUILT:
        die("%s: go install %s: not modelled (only %s)" % (containerfile, pkg, ", ".join(sorted(GO_BUILT))))
    script, gomod, name = GO_BUILT[pkg]
    module = pkg  # each of these main packages is its own module's root
    pinned = None
    for line in open(os.path.join(ROOT, gomod)):
        f = line.split()
        if len(f) >= 2 and f[0] == module:
            pinned = f[1]
    if pinned != version:
        die("%s: go install %s@%s, but %s pins %s at %s: change one to match the other"
            % (containerfile, pkg, version, gomod, module, pinned or "no version"))
    r = subprocess.run(["bash", os.path.join(ROOT, script), "--bin-dir"], capture_output=True, text=True)
    if r.returncode != 0:
        die("%s: go install %s@%s: %s" % (containerfile, pkg, version, r.stderr.strip()))
    return os.path.join(r.stdout.strip(), name)


def installed_from(pkg, release):
    """The installed version of pkg, when apt knows it as a version of `release` (e.g. trixie)."""
    ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True).stdout
    if not ver:
        die("package %s (Debian %s) is not installed on this machine (hack/install-deps.sh installs what the "
            "images need)" % (pkg, release))
    out = subprocess.run(["apt-cache", "madison", pkg], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) >= 3 and f[1] == ver and f[2].split()[1].split("/")[0] == release:
            return ver
    die("package %s %s installed here is not Debian %s's (apt-cache madison %s: %s); hack/install-deps.sh "
        "installs %s's" % (pkg, ver, release, pkg, " / ".join(out.split("\n")[:3]) or "unknown", release))


def main():
    if len(sys.argv) != 4:
        die("usage: image-rootfs.py CONTAINERFILE CONTEXT_DIR OUT_DIR")
    containerfile, context, out = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    packages, links, copies, base = [], [], [], None
    stages = {}  # NAME -> (release, packages) of the build stages before the image's
    stage = None  # the stage being read when it has a name
    staged = []  # (stage, command path, destination) from COPY --from
    for kw, rest in instructions(containerfile):
        if kw == "FROM":
            argv = rest.split()
            if len(argv) == 3 and argv[1].upper() == "AS":
                stage = argv[2]
                if stage in stages:
                    die("%s: FROM %s: stage %s twice" % (containerfile, rest, stage))
            elif len(argv) == 1:
                stage = None
            else:
                die("%s: FROM %s: only FROM IMAGE [AS NAME] is modelled" % (containerfile, rest))
            name = argv[0].rsplit("/", 1)[-1]
            if name.startswith("golang:") and stage is not None:
                stages[stage] = ("go", [])
                continue
            if not name.startswith("debian:") or not name.endswith("-slim"):
                die("%s: FROM %s: only debian:<codename>-slim is modelled" % (containerfile, rest))
            release = name[len("debian:"):-len("-slim")]
            if stage is not None:
                stages[stage] = (release, [])
                continue
            if packages or links or copies or staged:
                die("%s: FROM %s: a second image stage without a name is not modelled" % (containerfile, rest))
            base = release
            if base != codename():
                die("%s: built FROM Debian %s, but this machine runs Debian %s: the commands would differ"
                    % (containerfile, base, codename() or "(unknown)"))
        elif kw == "RUN":
            for cmd in rest.split("&&"):
                argv = shlex.split(cmd)
                if argv[:2] == ["apt-get", "update"] or argv == ["rm", "-rf", "/var/lib/apt/lists/*"]:
                    continue
                if stage is not None and stages[stage][0] == "go":
                    if argv[:2] != ["go", "install"] or len(argv) != 3 or "@" not in argv[2]:
                        die("%s: RUN %s: only go install PKG@VERSION is modelled in a Go stage"
                            % (containerfile, cmd.strip()))
                    pkg, version = argv[2].split("@", 1)
                    stages[stage][1].append((pkg, version))
                    continue
                if argv[:2] == ["apt-get", "install"]:
                    (stages[stage][1] if stage is not None else packages).extend(
                        a for a in argv[2:] if not a.startswith("-"))
                elif argv[:2] == ["ln", "-s"] and len(argv) == 4 and stage is None:
                    links.append((argv[2], argv[3]))
                else:
                    die("%s: RUN %s: not modelled (apt-get install, ln -s in the image's stage)"
                        % (containerfile, cmd.strip()))
        elif kw == "COPY":
            argv = shlex.split(rest)
            if stage is not None:
                die("%s: COPY %s: not modelled in a build stage" % (containerfile, rest))
            if argv and argv[0].startswith("--from="):
                src_stage = argv[0][len("--from="):]
                if src_stage not in stages or len(argv) < 3:
                    die("%s: COPY %s: only COPY --from=STAGE SRC... DST of an earlier stage is modelled"
                        % (containerfile, rest))
                dst = argv[-1]
                if len(argv) > 3 and not dst.endswith("/"):
                    die("%s: COPY %s: several sources need a DST ending in /" % (containerfile, rest))
                for src in argv[1:-1]:
                    staged.append((src_stage, src, dst + os.path.basename(src) if dst.endswith("/") else dst))
                continue
            if len(argv) != 2 or argv[0].startswith("-"):
                die("%s: COPY %s: only COPY SRC DST is modelled" % (containerfile, rest))
            copies.append((argv[0], argv[1]))
        else:
            die("%s: %s: not modelled" % (containerfile, kw))
    if base is None:
        die("%s: no FROM" % containerfile)

    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for d in ("usr/bin", "usr/sbin"):
        os.makedirs(os.path.join(tmp, d))
    os.symlink("usr/bin", os.path.join(tmp, "bin"))
    os.symlink("usr/sbin", os.path.join(tmp, "sbin"))
    all_packages = essential() + packages
    n = 0
    for pkg in all_packages:
        for cmd in package_commands(pkg):
            link(tmp, os.path.realpath(cmd), cmd)
            n += 1
    stage_versions = {}
    for src_stage, src, dst in staged:
        release, pkgs = stages[src_stage]
        if release == "go":
            built = [(p, v) for p, v in pkgs if "/go/bin/" + go_install_name(p) == src]
            if not built:
                die("%s: COPY --from=%s %s: no go install of that stage makes it (%s)" % (
                    containerfile, src_stage, src, " ".join("%s@%s" % pv for pv in pkgs) or "none"))
            link(tmp, go_built(containerfile, *built[0]), dst)
            stage_versions[built[0][0]] = built[0][1]
            n += 1
            continue
        found = None
        for pkg in pkgs:
            if release != base:
                stage_versions[pkg] = installed_from(pkg, release)
            if src in package_commands(pkg) or os.path.realpath(src) in map(os.path.realpath, package_commands(pkg)):
                found = src
        if not found:
            die("%s: COPY --from=%s %s: no package of that stage (%s) installs it" % (
                containerfile, src_stage, src, " ".join(pkgs) or "none"))
        link(tmp, os.path.realpath(src), dst)
        n += 1
    for src, dst in copies:
        path = os.path.join(context, src)
        if not os.path.exists(path):
            die("%s: COPY %s: %s does not exist (build it first)" % (containerfile, src, path))
        link(tmp, path, dst)
    for target, path in links:
        # Inside the image: an absolute target resolves in the rootfs, not on this machine.
        link(tmp, inside(tmp, target).replace(tmp, out, 1) if target.startswith("/") else target, path)
    with open(os.path.join(tmp, ".image.json"), "w") as f:
        json.dump({"containerfile": os.path.abspath(containerfile), "debian": base, "packages": all_packages,
                   "commands": n, "copied": [d for _, d in copies], "links": [l for _, l in links],
                   "from_stages": [{"stage": st, "release": stages[st][0], "path": d} for st, _, d in staged],
                   "stage_versions": stage_versions}, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print("image-rootfs: %s: %d commands from %d packages, %d copied, %d links -> %s" % (
        containerfile, n, len(all_packages), len(copies), len(links), out))


if __name__ == "__main__":
    main()
