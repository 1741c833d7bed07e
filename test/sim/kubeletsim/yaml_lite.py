"""A small YAML subset loader (Python has no YAML parser in its standard library).

It covers what Kubernetes manifests and the OpenShift CRDs use: block mappings and
sequences (including the compact "key:\\n- item" form), plain, single- and
double-quoted scalars (also spanning lines), literal and folded block scalars with
chomping and indentation indicators, flow collections ({...}, [...], so JSON is
accepted too), comments and multi-document streams ('---' / '...').

Scalars resolve like go-yaml v2, which kubectl and the apiserver use through
sigs.k8s.io/yaml: YAML 1.1 booleans (yes/no/on/off/y/n), ints (also 0x.., 0o..,
leading-0 octal), floats, null/~/empty.  Anchors, aliases, tags other than the
standard !!str/!!int/..., complex keys and directives are rejected with YamlError
rather than guessed at.
"""

import re

__all__ = ["YamlError", "load", "load_all"]


class YamlError(ValueError):
    def __init__(self, msg, line=None):
        if line is not None:
            msg = "line %d: %s" % (line + 1, msg)
        super().__init__(msg)


_BOOL_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_BOOL_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_NULLS = {"", "~", "null", "Null", "NULL"}
_INT_RE = re.compile(r"^[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|0[0-7_]+|0|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$")
_INF_RE = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
_NAN_RE = re.compile(r"^\.(nan|NaN|NAN)$")


def resolve_plain(s):
    """Type a plain (unquoted) scalar the way go-yaml v2 does."""
    if s in _NULLS:
        return None
    if s in _BOOL_TRUE:
        return True
    if s in _BOOL_FALSE:
        return False
    if _INT_RE.match(s):
        t = s.replace("_", "")
        sign = -1 if t.startswith("-") else 1
        t = t.lstrip("+-")
        if t.startswith(("0b", "0x", "0o")):
            return sign * int(t, 0)
        if len(t) > 1 and t.startswith("0"):
            return sign * int(t, 8)
        return sign * int(t)
    if _FLOAT_RE.match(s) and any(c.isdigit() for c in s):
        return float(s.replace("_", ""))
    if _INF_RE.match(s):
        return float("-inf") if s.startswith("-") else float("inf")
    if _NAN_RE.match(s):
        return float("nan")
    return s


def _indent_of(line):
    return len(line) - len(line.lstrip(" "))


def _strip_comment(text):
    """Remove a trailing '# comment' that is outside quotes (text is one line)."""
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                if quote == "'" and i + 1 < len(text) and text[i + 1] == "'":
                    i += 1
                else:
                    quote = None
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"" and (i == 0 or text[i - 1] in " \t[{,:"):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


def _find_colon(text):
    """Index of the mapping ':' in a block line (outside quotes/brackets), or -1."""
    quote = None
    depth = 0
    i = 0
    if text.startswith(("'", '"')):
        # a quoted key: skip to its end
        q = text[0]
        i = 1
        while i < len(text):
            if text[i] == q:
                if q == "'" and i + 1 < len(text) and text[i + 1] == "'":
                    i += 2
                    continue
                break
            if text[i] == "\\" and q == '"':
                i += 1
            i += 1
        i += 1
        rest = text[i:].lstrip(" ")
        if rest.startswith(":") and (len(rest) == 1 or rest[1] in " \t"):
            return i + (len(text[i:]) - len(rest))
        return -1
    if text.startswith(("[", "{")):
        return -1
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
        elif c == "#" and i > 0 and text[i - 1] in " \t":
            return -1
        elif c == ":" and depth == 0 and (i + 1 == len(text) or text[i + 1] in " \t"):
            return i
        i += 1
    return -1


class _Parser:
    def __init__(self, lines):
        self.lines = lines
        self.i = 0

    # -- line helpers -------------------------------------------------------
    def _meaningful(self, j):
        """Index of the next line at or after j that is not blank or a comment."""
        while j < len(self.lines):
            s = self.lines[j].strip()
            if s and not s.startswith("#"):
                return j
            j += 1
        return j

    def peek(self):
        j = self._meaningful(self.i)
        if j >= len(self.lines):
            return None, None
        line = self.lines[j]
        if "\t" in line[: _indent_of(line) + 1] and line.lstrip(" ").startswith("\t"):
            raise YamlError("tab used for indentation", j)
        return j, line

    # -- blocks -------------------------------------------------------------
    def parse_block(self, min_indent):
        j, line = self.peek()
        if line is None or _indent_of(line) < min_indent:
            return None
        ind = _indent_of(line)
        body = line[ind:]
        if body == "-" or body.startswith("- ") or body.startswith("-\t"):
            return self.parse_seq(ind)
        if _find_colon(_strip_comment(body)) >= 0:
            return self.parse_map(ind)
        self.i = j
        return self.parse_scalar_lines(ind - 1)

    def parse_seq(self, ind):
        out = []
        while True:
            j, line = self.peek()
            if line is None or _indent_of(line) != ind:
                break
            body = line[ind:]
            if not (body == "-" or body.startswith("- ") or body.startswith("-\t")):
                break
            rest = body[1:]
            content = rest.lstrip(" \t")
            if not _strip_comment(content):
                self.i = j + 1
                out.append(self.parse_block(ind + 1))
                continue
            # Re-read the item's content as if it started on its own line at its
            # column: this handles "- key: v" mappings and nested "- - x".
            col = ind + 1 + (len(rest) - len(content))
            self.lines[j] = " " * col + content
            self.i = j
            item_j, item_line = self.peek()
            item_body = item_line[col:]
            if item_body == "-" or item_body.startswith("- "):
                out.append(self.parse_seq(col))
            elif _find_colon(_strip_comment(item_body)) >= 0:
                out.append(self.parse_map(col))
            else:
                out.append(self.parse_inline(item_body, j, ind))
        return out

    def parse_map(self, ind):
        out = {}
        while True:
            j, line = self.peek()
            if line is None or _indent_of(line) != ind:
                break
            body = _strip_comment(line[ind:])
            if body.startswith("- ") or body == "-":
                break
            c = _find_colon(body)
            if c < 0:
                raise YamlError("expected 'key: value'", j)
            key = self._key(body[:c].rstrip(), j)
            rest = body[c + 1:].strip()
            if key in out:
                raise YamlError("duplicate key %r" % (key,), j)
            if rest == "":
                self.i = j + 1
                nj, nline = self.peek()
                if nline is not None and _indent_of(nline) > ind:
                    out[key] = self.parse_block(ind + 1)
                elif nline is not None and _indent_of(nline) == ind and (
                        nline[ind:].startswith("- ") or nline[ind:].rstrip() == "-"):
                    out[key] = self.parse_seq(ind)
                else:
                    out[key] = None
            else:
                # re-slice from the raw line so quoted scalars keep their '#'
                raw = line[ind:]
                raw_rest = raw[_find_colon(raw) + 1:].strip()
                out[key] = self.parse_inline(raw_rest, j, ind)
        return out

    def _key(self, text, j):
        if text.startswith(("&", "*", "!", "?", "[", "{")):
            raise YamlError("unsupported key syntax %r" % text, j)
        if text.startswith('"'):
            return _unquote_double(text[1:-1], j)
        if text.startswith("'"):
            return text[1:-1].replace("''", "'")
        v = resolve_plain(text)
        # go-yaml keeps non-string keys as their type, sigs.k8s.io/yaml then turns
        # them into strings for JSON; do the same.
        if v is None:
            return "null" if text else ""
        if isinstance(v, bool):
            return "true" if v else "false"
        return text if isinstance(v, str) else str(v)

    # -- inline values ------------------------------------------------------
    def parse_inline(self, text, j, parent_indent):
        """Parse the value that starts on line j (text = rest of that line)."""
        if text.startswith(("&", "*")):
            raise YamlError("anchors and aliases are not supported", j)
        if text.startswith("!"):
            tag, _, text = text.partition(" ")
            if tag not in ("!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq"):
                raise YamlError("unsupported tag %s" % tag, j)
            if tag == "!!str" and text and text[0] not in "'\"|>":
                self.i = j + 1
                return self._plain_multiline(_strip_comment(text), parent_indent)
            text = text.strip()
        if text.startswith(("|", ">")):
            self.i = j + 1
            return self.parse_block_scalar(_strip_comment(text), parent_indent, j)
        if text.startswith(("'", '"')):
            return self.parse_quoted(j, text)
        if text.startswith(("[", "{")):
            return self.parse_flow(j, text)
        self.i = j + 1
        text = _strip_comment(text)
        s = self._plain_multiline(text, parent_indent)
        return resolve_plain(s) if "\n" not in s and s == text else s

    def _plain_multiline(self, first, parent_indent):
        """A plain scalar may continue on more-indented lines (folded with spaces)."""
        parts = [first]
        while self.i < len(self.lines):
            line = self.lines[self.i]
            s = line.strip()
            if not s:
                # blank line inside a plain scalar = newline, if the scalar continues
                k = self.i
                while k < len(self.lines) and not self.lines[k].strip():
                    k += 1
                if k < len(self.lines) and _indent_of(self.lines[k]) > parent_indent and \
                        not self.lines[k].strip().startswith("#") and \
                        _find_colon(self.lines[k].strip()) < 0:
                    parts.append("\n" * (k - self.i))
                    self.i = k
                    continue
                break
            if _indent_of(line) <= parent_indent or s.startswith("#"):
                break
            if _find_colon(_strip_comment(s)) >= 0 or s.startswith("- "):
                break
            parts.append(_strip_comment(s))
            self.i += 1
        out = ""
        for p in parts:
            if p.startswith("\n"):
                out += p
            elif out and not out.endswith("\n"):
                out += " " + p
            else:
                out += p
        return out

    def parse_quoted(self, j, text):
        q = text[0]
        buf = text[1:]
        k = j
        # gather lines until the closing quote
        while True:
            end = _closing_quote(buf, q)
            if end >= 0:
                break
            k += 1
            if k >= len(self.lines):
                raise YamlError("unterminated quoted scalar", j)
            buf += "\n" + self.lines[k]
        inner, after = buf[:end], buf[end + 1:]
        if _strip_comment(after).strip():
            raise YamlError("unexpected text after quoted scalar: %r" % after.strip(), k)
        self.i = k + 1
        inner = _fold_quoted_lines(inner)
        if q == "'":
            return inner.replace("''", "'")
        return _unquote_double(inner, j)

    def parse_block_scalar(self, header, parent_indent, j):
        m = re.match(r"^([|>])([-+]?)([1-9]?)([-+]?)$", header)
        if not m:
            raise YamlError("bad block scalar header %r" % header, j)
        style = m.group(1)
        chomp = m.group(2) or m.group(4)
        explicit = m.group(3)
        lines = []
        content_indent = None
        if explicit:
            content_indent = max(parent_indent, 0) + int(explicit)
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                lines.append("")
                self.i += 1
                continue
            ind = _indent_of(line)
            if content_indent is None:
                if ind <= parent_indent:
                    break
                content_indent = ind
            if ind < content_indent:
                break
            lines.append(line[content_indent:])
            self.i += 1
        # trailing blank lines belong to chomping, not to the next node
        trailing = 0
        while lines and lines[-1] == "":
            lines.pop()
            trailing += 1
        if style == "|":
            text = "\n".join(lines)
        else:
            text = _fold_block(lines)
        if not lines:
            return "" if chomp != "+" else "\n" * trailing
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" + "\n" * trailing
        return text + "\n"

    def parse_flow(self, j, text):
        buf = text
        k = j
        while True:
            try:
                val, pos = _Flow(buf).parse()
                rest = _strip_comment(buf[pos:]).strip()
                if rest:
                    raise YamlError("unexpected text after flow collection: %r" % rest, k)
                break
            except _NeedMore:
                k += 1
                if k >= len(self.lines):
                    raise YamlError("unterminated flow collection", j)
                buf += "\n" + self.lines[k]
        self.i = k + 1
        return val

    def parse_scalar_lines(self, parent_indent):
        j, line = self.peek()
        return self.parse_inline(line.strip(), j, parent_indent)


def _closing_quote(buf, q):
    i = 0
    while i < len(buf):
        c = buf[i]
        if q == '"' and c == "\\":
            i += 2
            continue
        if c == q:
            if q == "'" and i + 1 < len(buf) and buf[i + 1] == "'":
                i += 2
                continue
            return i
        i += 1
    return -1


def _fold_quoted_lines(s):
    """Line folding inside quoted scalars: a break is a space, blank lines newlines."""
    if "\n" not in s:
        return s
    parts = s.split("\n")
    out = parts[0].rstrip(" \t")
    pending_newlines = 0
    for idx, p in enumerate(parts[1:], 1):
        last = idx == len(parts) - 1
        t = p.strip(" \t") if not last else p.lstrip(" \t")
        if not t and not last:
            pending_newlines += 1
            continue
        if pending_newlines:
            out += "\n" * pending_newlines
        elif out.endswith("\\") and not out.endswith("\\\\"):
            out = out[:-1]  # escaped line break in double quotes joins directly
        else:
            out += " "
        pending_newlines = 0
        out += t
    return out


_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}


def _unquote_double(s, j):
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(s):
            raise YamlError("bad escape at end of string", j)
        e = s[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            try:
                out.append(chr(int(s[i + 2:i + 2 + n], 16)))
            except ValueError:
                raise YamlError("bad \\%s escape" % e, j)
            i += 2 + n
        else:
            raise YamlError("unknown escape \\%s" % e, j)
    return "".join(out)


def _fold_block(lines):
    """Folded ('>') block scalar: a break between two normal lines becomes a space,
    b blank lines between them become b newlines, and breaks next to
    more-indented lines are kept (the rule PyYAML's scanner implements)."""
    out = []
    i = 0
    while i < len(lines) and lines[i] == "":
        out.append("\n")
        i += 1
    prev = None
    blanks = 0
    for line in lines[i:]:
        if line == "":
            blanks += 1
            continue
        if prev is not None:
            if not prev.startswith((" ", "\t")) and not line.startswith((" ", "\t")):
                out.append(" " if blanks == 0 else "\n" * blanks)
            else:
                out.append("\n" + "\n" * blanks)
        out.append(line)
        prev = line
        blanks = 0
    return "".join(out)


class _NeedMore(Exception):
    pass


class _Flow:
    """Flow collections: [a, b], {k: v}, nested, with quoted and plain scalars."""

    def __init__(self, text):
        self.s = text
        self.p = 0

    def parse(self):
        v = self.value()
        return v, self.p

    def ws(self):
        while self.p < len(self.s):
            c = self.s[self.p]
            if c in " \t\n\r":
                self.p += 1
            elif c == "#" and (self.p == 0 or self.s[self.p - 1] in " \t\n"):
                while self.p < len(self.s) and self.s[self.p] != "\n":
                    self.p += 1
            else:
                break

    def value(self):
        self.ws()
        if self.p >= len(self.s):
            raise _NeedMore()
        c = self.s[self.p]
        if c == "[":
            return self.seq()
        if c == "{":
            return self.mapping()
        if c in "'\"":
            return self.quoted()
        return self.plain()

    def seq(self):
        self.p += 1
        out = []
        while True:
            self.ws()
            if self.p >= len(self.s):
                raise _NeedMore()
            if self.s[self.p] == "]":
                self.p += 1
                return out
            out.append(self.value())
            self.ws()
            if self.p >= len(self.s):
                raise _NeedMore()
            if self.s[self.p] == ",":
                self.p += 1
            elif self.s[self.p] != "]":
                raise YamlError("expected ',' or ']' in flow sequence")

    def mapping(self):
        self.p += 1
        out = {}
        while True:
            self.ws()
            if self.p >= len(self.s):
                raise _NeedMore()
            if self.s[self.p] == "}":
                self.p += 1
                return out
            k = self.value()
            self.ws()
            if self.p < len(self.s) and self.s[self.p] == ":":
                self.p += 1
                v = self.value()
            else:
                v = None
            if isinstance(k, bool):
                k = "true" if k else "false"
            elif k is None:
                k = "null"
            elif not isinstance(k, str):
                k = str(k)
            out[k] = v
            self.ws()
            if self.p >= len(self.s):
                raise _NeedMore()
            if self.s[self.p] == ",":
                self.p += 1
            elif self.s[self.p] != "}":
                raise YamlError("expected ',' or '}' in flow mapping")

    def quoted(self):
        q = self.s[self.p]
        end = _closing_quote(self.s[self.p + 1:], q)
        if end < 0:
            raise _NeedMore()
        inner = _fold_quoted_lines(self.s[self.p + 1:self.p + 1 + end])
        self.p += end + 2
        return inner.replace("''", "'") if q == "'" else _unquote_double(inner, None)

    def plain(self):
        start = self.p
        while self.p < len(self.s):
            c = self.s[self.p]
            if c in ",]}\n":
                break
            if c == ":" and (self.p + 1 >= len(self.s) or self.s[self.p + 1] in " ,]}\n"):
                break
            if c == "#" and self.s[self.p - 1] in " \t":
                break
            self.p += 1
        return resolve_plain(self.s[start:self.p].strip())


def _split_documents(text):
    docs = []
    cur = []
    for line in text.splitlines():
        if line.startswith("%"):
            raise YamlError("directives are not supported")
        if line == "---" or line.startswith("--- ") or line.startswith("---\t"):
            docs.append(cur)
            rest = line[3:].strip()
            cur = [rest] if rest and not rest.startswith("#") else []
            continue
        if line == "..." or line.startswith("... "):
            docs.append(cur)
            cur = []
            continue
        cur.append(line.rstrip("\r"))
    docs.append(cur)
    return docs


def _load_lines(lines):
    p = _Parser(lines)
    j, line = p.peek()
    if line is None:
        return None, False
    v = p.parse_block(0)
    j, line = p.peek()
    if line is not None:
        raise YamlError("unexpected content %r" % line.strip(), j)
    return v, True


def load_all(text):
    """All documents of a YAML stream; empty documents are skipped."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    for lines in _split_documents(text):
        v, present = _load_lines(lines)
        if present:
            out.append(v)
    return out


def load(text):
    """The single document of a YAML stream (None if it is empty)."""
    docs = load_all(text)
    if len(docs) > 1:
        raise YamlError("expected one document, found %d" % len(docs))
    return docs[0] if docs else None
