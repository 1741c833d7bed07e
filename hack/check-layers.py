#!/usr/bin/env python3
"""check-layers.py BUILD_DIR - prove the layers of docs/architecture.md hold in the build.

Reads BUILD_DIR/layers.json (written by CMakeLists.txt: each layer's folder, static
library, direct dependencies and whole include path) and checks, for every pair of layers
(L, U):

1. Headers. A file of L that includes a header of U compiles when U is L or below it, and
   fails with "No such file or directory" when U is above or beside it: the include path
   the build gives L does not hold U. The probe is compiled with the include path of L
   exactly as the build has it, so a layer's CMake entry that grew a dependency upward
   fails this check, not only a source file that includes upward.
2. Symbols. Every symbol L's library leaves undefined is defined by L itself, by a layer
   below it, or by none of the layers (libc, libcurl, ...): a call upward through an
   `extern` declaration, which no include path catches, fails here.

Prints one line per layer and every violation; exits 1 on any.
"""
import json
import os
import subprocess
import sys
import tempfile


def closure(layers, name):
    seen, pending = set(), [name]
    while pending:
        n = pending.pop()
        if n in seen:
            continue
        seen.add(n)
        for d in layers[n]["deps"].split(";"):
            if d.startswith("ceo-") and d[4:] in layers:
                pending.append(d[4:])
    return seen


def public_header(layer):
    """A header of the layer for the probe: the first one that is not internal."""
    hs = sorted(h for h in os.listdir(layer["dir"]) if h.endswith(".h") and "internal" not in h)
    if not hs:
        sys.exit(f"check-layers: layer {layer['name']} has no header in {layer['dir']}")
    return hs[0]


def compile_probe(cc, includes, header, tmp):
    src = os.path.join(tmp, "probe.c")
    with open(src, "w") as f:
        f.write(f'#include "{header}"\n')
    cmd = [cc, "-std=gnu17", "-D_GNU_SOURCE", "-fsyntax-only"] + [f"-I{i}" for i in includes] + [src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stderr


def symbols(lib):
    out = subprocess.run(["nm", "-g", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    defined = {ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3}
    out = subprocess.run(["nm", "-g", "--undefined-only", lib], capture_output=True, text=True, check=True).stdout
    undefined = {ln.split()[-1] for ln in out.splitlines() if ln.strip() and not ln.endswith(":")}
    return defined, undefined


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-layers.py BUILD_DIR")
    with open(os.path.join(sys.argv[1], "layers.json")) as f:
        doc = json.load(f)
    layers = {l["name"]: l for l in doc["layers"] if l}
    order = [l["name"] for l in doc["layers"] if l]
    for l in layers.values():
        l["includes"] = [i for i in l["includes"].split(";") if i]
        l["header"] = f"{l['name']}/{public_header(l)}"
    defs = {n: symbols(layers[n]["lib"]) for n in order}
    owner = {}
    for n in order:
        for s in defs[n][0]:
            owner.setdefault(s, n)

    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n in order:
            below = closure(layers, n)
            allowed, refused = [], []
            for u in order:
                rc, err = compile_probe(doc["cc"], layers[n]["includes"], layers[u]["header"], tmp)
                if u in below:
                    if rc != 0:
                        bad += 1
                        print(f"FAIL {n}: including {layers[u]['header']} (a layer below) does not compile:\n{err}")
                    else:
                        allowed.append(u)
                else:
                    if rc == 0:
                        bad += 1
                        print(f"FAIL {n}: including {layers[u]['header']} (not below {n}) compiles")
                    elif "No such file or directory" not in err:
                        bad += 1
                        print(f"FAIL {n}: including {layers[u]['header']} failed, but not for want of the header:\n{err}")
                    else:
                        refused.append(u)
            upward = sorted(s for s in defs[n][1] if owner.get(s) and owner[s] not in below)
            for s in upward:
                bad += 1
                print(f"FAIL {n}: uses {s}, defined by layer {owner[s]}, which is not below it")
            print(f"{n:12} sees {' '.join(allowed):60} refused: {' '.join(refused) or '-'}")
    if bad:
        print(f"check-layers: {bad} violation(s)")
        return 1
    print("check-layers: every layer sees only itself and the layers below it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
