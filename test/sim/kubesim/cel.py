"""A small CEL interpreter for CRD x-kubernetes-validations rules.

Covers what OpenShift's CRDs use: literals, self/oldSelf, field access, indexing,
has(), optional field access (`x.?f`, `.orValue()`, `.hasValue()`, optional
oldSelf), the boolean/comparison/arithmetic operators, `in`, the ternary, size(),
string functions (startsWith, endsWith, contains, matches), the macros all, exists,
exists_one, filter and map, and the Kubernetes library's isIP, isCIDR, isURL, ip().
evaluate() returns True/False, or None when a rule uses anything else or fails at
run time: such rules are skipped rather than guessed (the README says so).
"""

import ipaddress
import re
import threading
import urllib.parse


class CelError(Exception):
    pass


class Optional:
    __slots__ = ("present", "value")

    def __init__(self, present, value=None):
        self.present, self.value = present, value


_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d+|\d+u?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>\.\?|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]{}])
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
)""", re.X)


def _tokenize(s):
    out, pos = [], 0
    while pos < len(s):
        if s[pos:].strip() == "":
            break
        m = _TOKEN.match(s, pos)
        if not m:
            raise CelError("bad token at %d" % pos)
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    out.append(("end", None))
    return out


class _Parser:
    """Recursive descent into a tuple AST."""

    def __init__(self, text):
        self.t = _tokenize(text)
        self.i = 0

    def peek(self, v=None):
        k, val = self.t[self.i]
        return val if v is None else (val == v and k in ("op", "id"))

    def eat(self, v):
        if not self.peek(v):
            raise CelError("expected %s" % v)
        self.i += 1

    def parse(self):
        e = self.cond()
        if self.t[self.i][0] != "end":
            raise CelError("trailing input")
        return e

    def cond(self):
        c = self.binary(0)
        if self.peek("?"):
            self.i += 1
            a = self.cond()
            self.eat(":")
            b = self.cond()
            return ("?", c, a, b)
        return c

    _LEVELS = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"),
               ("*", "/", "%")]

    def binary(self, level):
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.t[self.i][0] in ("op", "id") and self.t[self.i][1] in self._LEVELS[level]:
            op = self.t[self.i][1]
            self.i += 1
            left = (op, left, self.binary(level + 1))
        return left

    def unary(self):
        if self.peek("!"):
            self.i += 1
            return ("!", self.unary())
        if self.peek("-"):
            self.i += 1
            return ("neg", self.unary())
        return self.member()

    def args(self):
        self.eat("(")
        out = []
        while not self.peek(")"):
            out.append(self.cond())
            if self.peek(","):
                self.i += 1
        self.eat(")")
        return out

    def member(self):
        e = self.primary()
        while True:
            if self.peek("."):
                self.i += 1
                name = self.t[self.i][1]
                self.i += 1
                if self.peek("("):
                    e = ("call", name, e, self.args())
                else:
                    e = ("field", e, name)
            elif self.peek(".?"):
                self.i += 1
                name = self.t[self.i][1]
                self.i += 1
                e = ("optfield", e, name)
            elif self.peek("["):
                self.i += 1
                idx = self.cond()
                self.eat("]")
                e = ("index", e, idx)
            else:
                return e

    def primary(self):
        kind, val = self.t[self.i]
        self.i += 1
        if kind == "num":
            return ("lit", float(val) if "." in val else int(val.rstrip("u")))
        if kind == "str":
            body = val[1:-1]
            return ("lit", re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1),
                                                                               m.group(1)), body))
        if kind == "id":
            if val in ("true", "false"):
                return ("lit", val == "true")
            if val == "null":
                return ("lit", None)
            if self.peek("("):
                return ("call", val, None, self.args())
            return ("var", val)
        if val == "(":
            e = self.cond()
            self.eat(")")
            return e
        if val == "[":
            items = []
            while not self.peek("]"):
                items.append(self.cond())
                if self.peek(","):
                    self.i += 1
            self.eat("]")
            return ("list", items)
        raise CelError("unexpected %r" % val)


_MACROS = {"all", "exists", "exists_one", "filter", "map"}


def _get_field(obj, name):
    if isinstance(obj, Optional):
        if not obj.present:
            raise CelError("optional has no value")
        obj = obj.value
    if isinstance(obj, dict):
        if name not in obj:
            raise CelError("no such key: %s" % name)
        return obj[name]
    raise CelError("field access on non-object")


def _family(s):
    return ipaddress.ip_address(s).version


def _is_ip(s):
    try:
        ipaddress.ip_address(s)
        return "%" not in s
    except ValueError:
        return False


def _is_cidr(s):
    try:
        ipaddress.ip_network(s, strict=False)
        return "/" in s
    except ValueError:
        return False


def _is_url(s):
    u = urllib.parse.urlsplit(s)
    return bool(u.scheme) and (bool(u.netloc) or bool(u.path))


def _eval(e, env):
    op = e[0]
    if op == "lit":
        return e[1]
    if op == "var":
        if e[1] not in env:
            raise CelError("unknown variable %s" % e[1])
        return env[e[1]]
    if op == "list":
        return [_eval(x, env) for x in e[1]]
    if op == "field":
        return _get_field(_eval(e[1], env), e[2])
    if op == "optfield":
        base = _eval(e[1], env)
        if isinstance(base, Optional):
            if not base.present:
                return base
            base = base.value
        if isinstance(base, dict) and e[2] in base:
            return Optional(True, base[e[2]])
        return Optional(False)
    if op == "index":
        base, idx = _eval(e[1], env), _eval(e[2], env)
        try:
            return base[idx]
        except (IndexError, KeyError, TypeError):
            raise CelError("index out of range")
    if op == "?":
        return _eval(e[2], env) if _truth(_eval(e[1], env)) else _eval(e[3], env)
    if op == "!":
        return not _truth(_eval(e[1], env))
    if op == "neg":
        return -_eval(e[1], env)
    if op == "||":
        # CEL's commutative error semantics: true wins over an error
        try:
            if _truth(_eval(e[1], env)):
                return True
        except CelError:
            if _truth(_eval(e[2], env)):
                return True
            raise
        return _truth(_eval(e[2], env))
    if op == "&&":
        try:
            if not _truth(_eval(e[1], env)):
                return False
        except CelError:
            if not _truth(_eval(e[2], env)):
                return False
            raise
        return _truth(_eval(e[2], env))
    if op in ("==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"):
        a, b = _eval(e[1], env), _eval(e[2], env)
        return _binop(op, a, b)
    if op == "call":
        return _call(e, env)
    raise CelError("unsupported expression %s" % op)


def _truth(v):
    if not isinstance(v, bool):
        raise CelError("not a bool")
    return v


def _binop(op, a, b):
    if op == "==":
        return a == b and (isinstance(a, bool) == isinstance(b, bool))
    if op == "!=":
        return not _binop("==", a, b)
    if op == "in":
        if isinstance(b, list):
            return a in b
        if isinstance(b, dict):
            return a in b
        raise CelError("in on non-collection")
    try:
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a // b if isinstance(a, int) and isinstance(b, int) else a / b
        if op == "%":
            return a % b
    except (TypeError, ZeroDivisionError):
        raise CelError("bad operands for %s" % op)
    raise CelError(op)


def _call(e, env):
    _, name, target, args = e
    if target is None and name == "has":
        a = args[0]
        if a[0] != "field":
            raise CelError("has() needs a field selection")
        base = _eval(a[1], env)
        if isinstance(base, Optional):
            base = base.value if base.present else None
        return isinstance(base, dict) and a[2] in base
    if target is not None and name in _MACROS:
        coll = _eval(target, env)
        if isinstance(coll, dict):
            coll = list(coll.keys())
        if not isinstance(coll, list) or args[0][0] != "var":
            raise CelError("bad macro use")
        var = args[0][1]
        body = args[1]
        results = []
        for item in coll:
            inner = dict(env)
            inner[var] = item
            results.append((item, _eval(body, inner)))
        if name == "all":
            return all(_truth(r) for _, r in results)
        if name == "exists":
            return any(_truth(r) for _, r in results)
        if name == "exists_one":
            return sum(1 for _, r in results if _truth(r)) == 1
        if name == "filter":
            return [i for i, r in results if _truth(r)]
        return [r for _, r in results]
    vals = [_eval(a, env) for a in args]
    recv = _eval(target, env) if target is not None else None
    if name == "size":
        x = recv if target is not None else vals[0]
        if isinstance(x, (str, list, dict)):
            return len(x)
        raise CelError("size of unsupported type")
    if name == "hasValue" and isinstance(recv, Optional):
        return recv.present
    if name == "orValue" and isinstance(recv, Optional):
        return recv.value if recv.present else vals[0]
    if name == "value" and isinstance(recv, Optional):
        if not recv.present:
            raise CelError("optional has no value")
        return recv.value
    if name in ("startsWith", "endsWith", "contains", "matches") and isinstance(recv, str):
        a = vals[0]
        if name == "startsWith":
            return recv.startswith(a)
        if name == "endsWith":
            return recv.endswith(a)
        if name == "contains":
            return a in recv
        try:
            return re.search(a, recv) is not None
        except re.error:
            raise CelError("regex not supported")
    if target is None and name in ("isIP", "isCIDR", "isURL") and isinstance(vals[0], str):
        return {"isIP": _is_ip, "isCIDR": _is_cidr, "isURL": _is_url}[name](vals[0])
    if target is None and name == "ip" and isinstance(vals[0], str):
        if not _is_ip(vals[0]):
            raise CelError("not an IP")
        return ("ip", vals[0])
    if name == "family" and isinstance(recv, tuple) and recv[0] == "ip":
        return _family(recv[1])
    raise CelError("unsupported function %s" % name)


_cache = {}
_cache_lock = threading.Lock()


def compile_rule(expr):
    with _cache_lock:
        if expr in _cache:
            return _cache[expr]
    try:
        ast = _Parser(expr).parse()
    except (CelError, IndexError, TypeError):
        ast = None
    with _cache_lock:
        _cache[expr] = ast
    return ast


def evaluate(expr, self_value, old_value, has_old, optional_old):
    """True/False for a rule, None if it cannot be evaluated here."""
    ast = compile_rule(expr)
    if ast is None:
        return None
    env = {"self": self_value}
    if optional_old:
        env["oldSelf"] = Optional(has_old, old_value)
    elif has_old:
        env["oldSelf"] = old_value
    try:
        r = _eval(ast, env)
    except (CelError, TypeError, ValueError, KeyError, IndexError, RecursionError):
        return None
    return r if isinstance(r, bool) else None
