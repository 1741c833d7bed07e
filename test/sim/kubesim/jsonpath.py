"""The JSONPath subset used by CRD additionalPrinterColumns.

Supported: `.a.b`, `['a.b']`, `[0]`, `[-1]`, `[*]`, `..` is not, and filters
`[?(@.type=="Ready")]` / `[?(@.x!="y")]` / `[?(@.x)]` with string, number or bool
literals.  Returns every match in document order (the printer takes the first).
"""

import re

_TOKEN = re.compile(r"""
    \.(?P<field>[A-Za-z0-9_$-]+)
  | \[\s*'(?P<sq>[^']*)'\s*\]
  | \[\s*"(?P<dq>[^"]*)"\s*\]
  | \[\s*(?P<idx>-?\d+)\s*\]
  | \[\s*\*\s*\]
  | \[\s*\?\(\s*@(?P<fpath>(\.[A-Za-z0-9_$-]+)+)\s*(?:(?P<op>==|!=)\s*(?P<lit>"[^"]*"|'[^']*'|[^)\s]+))?\s*\)\s*\]
""", re.X)


class JsonPathError(ValueError):
    pass


def compile_path(expr):
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1].strip()
    if expr.startswith("$"):
        expr = expr[1:]
    steps = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise JsonPathError("unsupported JSONPath %r at %d" % (expr, pos))
        g = m.groupdict()
        if g["field"] is not None:
            steps.append(("field", g["field"]))
        elif g["sq"] is not None or g["dq"] is not None:
            steps.append(("field", g["sq"] if g["sq"] is not None else g["dq"]))
        elif g["idx"] is not None:
            steps.append(("index", int(g["idx"])))
        elif g["fpath"] is not None:
            lit = g["lit"]
            if lit is not None:
                if lit[0] in "'\"":
                    lit = lit[1:-1]
                elif lit in ("true", "false"):
                    lit = lit == "true"
                else:
                    try:
                        lit = float(lit) if "." in lit else int(lit)
                    except ValueError:
                        pass
            steps.append(("filter", g["fpath"][1:].split("."), g["op"], lit))
        else:
            steps.append(("all",))
        pos = m.end()
    return steps


def _lookup(obj, path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return False, None
        obj = obj[p]
    return True, obj


def find(obj, steps):
    cur = [obj]
    for step in steps:
        nxt = []
        for v in cur:
            if step[0] == "field":
                if isinstance(v, dict) and step[1] in v:
                    nxt.append(v[step[1]])
            elif step[0] == "index":
                if isinstance(v, list) and -len(v) <= step[1] < len(v):
                    nxt.append(v[step[1]])
            elif step[0] == "all":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, dict):
                    nxt.extend(v.values())
            else:
                _, fpath, op, lit = step
                items = v if isinstance(v, list) else []
                for it in items:
                    ok, val = _lookup(it, fpath)
                    if op is None:
                        if ok:
                            nxt.append(it)
                    elif ok and ((val == lit) == (op == "==")):
                        nxt.append(it)
                    elif not ok and op == "!=":
                        nxt.append(it)
        cur = nxt
    return cur
