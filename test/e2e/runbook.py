"""Runs the runbooks of docs/runbooks/ word for word (Python 3 stdlib).

Every ```sh block of a runbook is a step. A block whose first line is
`ssh core@<host>` runs the rest of its lines on that master, through
hack/node-shell.sh (the demo's ssh); any other block runs on the admin's
machine with KUBECONFIG set. Placeholders `<name>` are filled from the
scenario's hosts; a block naming one the scenario gives a list of hosts for
(`<other-host>`, `<each-master>`) runs once per host.
Nothing in a block is rewritten but the placeholders: a runbook that no
longer matches the product fails here."""
import os
import re
import subprocess
import time

from e2e import ROOT, log

NODE_SHELL = os.path.join(ROOT, "hack", "node-shell.sh")
FENCE = re.compile(r"^\s*```sh\s*$")
END = re.compile(r"^\s*```\s*$")
SSH = re.compile(r"^ssh core@(<[a-z-]+>|[A-Za-z0-9.-]+)$")


def blocks(path):
    """The ```sh blocks of a Markdown file, each as a list of lines (indentation removed)."""
    out, cur, indent = [], None, 0
    for line in open(path).read().splitlines():
        if cur is None:
            if FENCE.match(line):
                cur, indent = [], len(line) - len(line.lstrip())
        elif END.match(line):
            out.append(cur)
            cur = None
        else:
            cur.append(line[indent:] if line[:indent].strip() == "" else line.strip())
    assert cur is None, "%s: unterminated code block" % path
    return out


# kubectl's words for a request it never sent (no connection, no TLS session).
NOT_SENT = ("net/http: TLS handshake timeout", "connect: connection refused")


class Runbook:
    def __init__(self, env, name, hosts, node_roots):
        """hosts: placeholder -> host name, or a list of them (<other-host>);
        node_roots: host -> that simulated node's root directory."""
        self.env, self.name = env, name
        self.path = os.path.join(ROOT, "docs", "runbooks", name)
        self.hosts, self.roots = hosts, node_roots
        self.steps = blocks(self.path)
        assert self.steps, "%s has no ```sh block" % self.path

    def _fill(self, text, one=None, each="<other-host>"):
        def sub(m):
            key = m.group(0)
            if key == each and one is not None:
                return one
            v = self.hosts.get(key)
            assert isinstance(v, str), "%s: no value for %s" % (self.name, key)
            return v
        return re.sub(r"<[a-z][a-z-]*>", sub, text)

    def commands(self):
        """(host or None, script) in order, placeholders filled."""
        out = []
        for lines in self.steps:
            m = SSH.match(lines[0].strip())
            host, body = (m.group(1), lines[1:]) if m else (None, lines)
            script = "\n".join(body)
            # A placeholder the scenario gives several hosts for (<other-host>, <each-master>):
            # the block runs once per host.
            each = [k for k, v in self.hosts.items() if isinstance(v, list) and (host == k or k in script)]
            if each:
                for h in self.hosts[each[0]]:
                    out.append((self._fill(host, h, each[0]) if host else None, self._fill(script, h, each[0])))
            else:
                out.append((self._fill(host) if host else None, self._fill(script)))
        return out

    def run(self, first=1, last=None, timeout=1800):
        """Steps first..last (1-based, by default all), each must exit 0. Returns their outputs."""
        outputs = []
        cmds = self.commands()
        last = last or len(cmds)
        for i, (host, script) in enumerate(cmds, 1):
            if i < first or i > last:
                continue
            where = host or "admin"
            log("runbook %s step %d/%d on %s:\n    %s" % (self.name, i, len(cmds), where,
                                                         script.replace("\n", "\n    ")))
            t0 = time.monotonic()
            if host:
                argv = [NODE_SHELL, "--root", self.roots[host], host, "bash", "-eo", "pipefail", "-c", script]
                env = dict(os.environ)
            else:
                argv = ["bash", "-eo", "pipefail", "-c", script]
                env = dict(os.environ, KUBECONFIG=self.env.kubeconfig)
            for attempt in range(1, 4):
                r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
                out = (r.stdout + r.stderr).strip()
                log("  -> exit %d after %.1f s%s" % (r.returncode, time.monotonic() - t0,
                                                       ("\n    " + out[-4000:].replace("\n", "\n    ")) if out else ""))
                # docs/runbooks/README.md: a kubectl that did not reach the API at all (while
                # kube-apiserver rolls out on a loaded machine, its TLS handshake can time out)
                # sent nothing; the admin runs the step again. Anything else is the step's answer.
                if r.returncode == 0 or not any(m in out for m in NOT_SENT) or attempt == 3:
                    break
                log("  the API was not reached: running step %d again (attempt %d of 3)" % (i, attempt + 1))
                time.sleep(2)
            assert r.returncode == 0, "runbook %s step %d on %s failed (exit %d)" % (
                self.name, i, where, r.returncode)
            outputs.append(out)
        return outputs

    def run_until(self, step, shows, what, timeout=90, interval=5):
        """Runs one step again until its output shows what the runbook says it will (`shows`
        takes the output), as an admin watching does; an event, for one, is written beside the
        change it tells of and sent again while the API answers 5xx. Returns the output."""
        t0 = time.monotonic()
        while True:
            out = self.run(step, step)[0]
            if shows(out):
                return out
            if time.monotonic() - t0 > timeout:
                raise AssertionError("the runbook %s's step %d shows no %s after %d s: %s"
                                     % (self.name, step, what, timeout, out))
            time.sleep(interval)
