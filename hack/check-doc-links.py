#!/usr/bin/env python3
"""check-doc-links.py [ROOT]: the docs point only at things that exist, inside the tree.

A newcomer follows the docs with nothing but a clone, so this fails on:

1. a Markdown link `[text](target)` in any tracked *.md whose target file is
   missing, or whose `#anchor` names no heading of the target (GitHub's
   slugs: lower case, punctuation dropped, spaces as hyphens, -1, -2 for
   repeats); links to http(s) and mailto are not fetched;
2. a repository path named in the text of a tracked *.md (in backquotes or
   not): a word starting with one of the tree's top directories
   (`controllers/facts.h`, `test/unit/test-controller-<name>.c`) that names
   no file or directory; `<...>` and `*` match anything, `{a,b}` each of
   a and b, and a benchmark or test binary is found by its source
   (`bench/rss-floor` by `bench/rss-floor.c`);
3. anywhere in a tracked text file (docs, code comments, scripts): a path
   outside the repository, such as the team's working tree that the design
   notes and reference files live in. Those are not in a clone; say the
   fact where it is needed, point inside the tree, or give the public
   upstream URL.

Prints one line per problem, `file:line: what`, and exits 1 if there is any.
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
TOP_DIRS = ("bench", "cmake", "controllers", "docs", "hack", "images", "manifests", "operator", "render", "test")
# A binary named after its source file (bench/rss-floor, test/kube/api-fault-proxy).
SOURCE_SUFFIXES = ("", ".c", ".sh", ".py", ".md")
# Places outside the repository: the team tree (shared/DESIGN.md, shared/reference/...,
# shared/bench/...) and absolute paths of the machine the tree was written on.
OUTSIDE = re.compile(r"\.\./shared\b|\bshared/(?:reference|bench|crds|hooks)\b|/work/|\bDESIGN\.md\b|\bCONVENTIONS\.md\b"
                     r"|\b(?:ceo-contracts|contract-audit[\w-]*|kube-api|etcd-gateway|security-review|dr-and-day2)\.md\b")
THIS_FILE = "hack/check-doc-links.py"

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
PATH = re.compile(r"(?<![\w./<>{}*-])((?:%s)/[\w./<>{},*+-]*[\w>}*])" % "|".join(TOP_DIRS))
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked(pattern=None):
        args = ["git", "-C", ROOT, "ls-files", "-z"]
        if pattern:
                args.append(pattern)
        out = subprocess.run(args, check=True, capture_output=True).stdout.decode()
        return [p for p in out.split("\0") if p]


def slug(heading):
        h = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip()).lower()
        h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
        h = re.sub(r"[^\w\- ]", "", h)
        return h.replace(" ", "-")


_anchors = {}


def anchors(path):
        if path not in _anchors:
                seen, out, fenced = {}, set(), False
                with open(path, encoding="utf-8") as f:
                        for line in f:
                                if FENCE.match(line):
                                        fenced = not fenced
                                        continue
                                m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                                if not m:
                                        continue
                                s = slug(m.group(1))
                                n = seen.get(s, 0)
                                seen[s] = n + 1
                                out.add(s if n == 0 else "%s-%d" % (s, n))
                _anchors[path] = out
        return _anchors[path]


def expand(p):
        """`a/{b,c}/d` -> [a/b/d, a/c/d], recursively; `<x>` -> `*`."""
        p = re.sub(r"<[^>]*>", "*", p)
        m = re.search(r"\{([^{}]*)\}", p)
        if not m:
                return [p]
        return [q for alt in m.group(1).split(",") for q in expand(p[: m.start()] + alt + p[m.end():])]


def path_exists(p):
        p = p.rstrip("/.,")
        for q in expand(p):
                full = os.path.join(ROOT, q)
                if not any(glob.glob(full + s) for s in SOURCE_SUFFIXES):
                        return False
        return True


def check_link(md, lineno, target, problems):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                return
        path, _, anchor = target.partition("#")
        here = os.path.join(ROOT, md)
        dest = os.path.normpath(os.path.join(os.path.dirname(here), path)) if path else here
        if os.path.relpath(dest, ROOT).startswith(".."):
                problems.append("%s:%d: link outside the repository: %s" % (md, lineno, target))
                return
        if not os.path.exists(dest):
                problems.append("%s:%d: link to a missing file: %s" % (md, lineno, target))
                return
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append("%s:%d: no heading for #%s in %s" % (md, lineno, anchor, os.path.relpath(dest, ROOT)))


def check_markdown(md, problems):
        with open(os.path.join(ROOT, md), encoding="utf-8") as f:
                whole = f.read()
        for m in LINK.finditer(whole):  # link text may run over several lines
                check_link(md, whole.count("\n", 0, m.start()) + 1, m.group(1), problems)
        for i, line in enumerate(whole.split("\n"), 1):
                text = LINK.sub(lambda m: m.group(0).split("](")[0], line)  # link targets checked above
                text = re.sub(r"https?://\S+", "", text)
                for m in PATH.finditer(text):
                        if not path_exists(m.group(1)):
                                problems.append("%s:%d: names a path that does not exist: %s" % (md, i, m.group(1)))


def check_outside(path, problems):
        try:
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                        text = f.read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
                return
        for i, line in enumerate(text.split("\n"), 1):
                m = OUTSIDE.search(line)
                if m:
                        problems.append("%s:%d: points outside the repository: %s" % (path, i, m.group(0)))


def main():
        problems = []
        for md in tracked("*.md"):
                check_markdown(md, problems)
        for path in tracked():
                if path != THIS_FILE:
                        check_outside(path, problems)
        for p in problems:
                print(p)
        if problems:
                print("check-doc-links: %d problem(s); see the comment at the top of %s" % (len(problems), THIS_FILE))
                return 1
        return 0


if __name__ == "__main__":
        sys.exit(main())
