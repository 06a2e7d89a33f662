"""A ready cffi (ABI mode) binding of odebug's public C API.

>>> from odebug.ffi import ffi, lib
>>> cfg = ffi.new("struct odb_config *")
>>> lib.odb_config_init(cfg)
>>> out = ffi.new("odb_kernel **")
>>> lib.odb_kernel_create(cfg, out, ffi.NULL, 0)
0
>>> lib.odb_kernel_destroy(out[0])

``ffi`` is a :class:`cffi.FFI` whose declarations are derived, at import time,
from the installed public header ``odebug/odebug.h`` (``odebug.get_include()``)
by :func:`cdef_from_header`, so they cannot drift from the C API; ``lib`` is
``ffi.dlopen(odebug.get_library())``.  The header's integer macros
(``ODB_GFP_KERNEL``, ``ODB_SLAB_POISON``, ...) and enums are constants of
``lib``.  Strings the library allocates (``odb_dmesg``, ``odb_param_get``, ...)
are released with ``lib.odb_free``.

This is the C library without the Python binding: no GIL handling, no Python
exceptions (functions return ``ODB_E*`` codes; ``lib.odb_strerror(k)`` says
why), and C callbacks are cffi callbacks (see the header for which lock each
runs under).
"""
from __future__ import annotations

import ast
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

import cffi  # type: ignore[import-untyped]

from . import get_include, get_library

__all__ = ["ffi", "lib", "cdef_from_header", "header_path"]


def header_path() -> str:
    """The public header the binding is derived from."""
    return os.path.join(get_include(), "odebug", "odebug.h")


_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\])*")', re.S)
_NUMBER = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_CAST = re.compile(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?"
                   r"(?:odb_addr_t|u?int(?:8|16|32|64)_t|size_t|char|short|int|long(?:\s+long)?)"
                   r"\s*\)")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def _strip_comments(text: str) -> str:
    # keep string literals, replace each comment by a space (a newline stays a newline)
    def repl(m: "re.Match[str]") -> str:
        if m.group(1):
            return m.group(1)
        return "\n" * m.group(0).count("\n") or " "
    return _COMMENT.sub(repl, text)


def _strip_attributes(text: str) -> str:
    """Remove ``__attribute__((...))`` (balanced parentheses)."""
    out, i = [], 0
    while True:
        j = text.find("__attribute__", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.index("(", j)
        depth = 0
        while True:
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


_OPS: Dict[type, Callable[[int, int], int]] = {
        ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b,
        ast.BitXor: lambda a, b: a ^ b, ast.LShift: lambda a, b: a << b,
        ast.RShift: lambda a, b: a >> b, ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _int_value(expr: str, ints: Dict[str, int]) -> Optional[int]:
    """The value of a C integer constant expression of literals and known
    macros (suffixes and integer casts allowed), or None."""
    s = _CAST.sub("", expr)
    s = _NUMBER.sub(lambda m: str(int(m.group(1), 0)), s)
    s = s.replace("||", " or ").replace("&&", " and ").replace("!", " not ")
    s = s.replace(" not =", "!=")
    try:
        tree = ast.parse(s.strip(), mode="eval")
    except SyntaxError:
        return None

    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return int(n.value)
        if isinstance(n, ast.Name) and n.id in ints:
            return ints[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd, ast.Invert)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v if isinstance(n.op, ast.UAdd) else ~v
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return int(not ev(n.operand))
        if isinstance(n, ast.BoolOp):
            vals = [ev(v) for v in n.values]
            return int(all(vals) if isinstance(n.op, ast.And) else any(vals))
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            a, b = ev(n.left), ev(n.comparators[0])
            return int({ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.Gt: a > b,
                        ast.LtE: a <= b, ast.GtE: a >= b}[type(n.ops[0])])
        raise ValueError(ast.dump(n))
    try:
        return ev(tree)
    except (ValueError, KeyError):
        return None


def cdef_from_header(text: str, predefined: Optional[Dict[str, str]] = None) -> str:
    """cffi ``cdef`` source from a C header: a small preprocessor.

    Comments and ``__attribute__`` go; ``#include`` is dropped (cffi knows the
    standard types); ``#if/#ifdef/#ifndef/#elif/#else/#endif`` are evaluated
    (``__cplusplus`` and ``ODB_BUILDING`` undefined, unless in ``predefined``);
    object-like macros are expanded in declarations, those with an integer
    value become ``#define NAME <value>`` (a constant of ``lib``); function-like
    macros are not supported (the header has none) and raise ValueError."""
    text = _strip_comments(text).replace("\\\n", " ")
    macros: Dict[str, str] = dict(predefined or {})
    ints: Dict[str, int] = {}
    out: List[str] = []
    stack: List[List[bool]] = []          # [this branch active, some branch taken]

    def active() -> bool:
        return all(frame[0] for frame in stack)

    def cond(expr: str) -> bool:
        expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
        expr = _IDENT.sub(lambda m: str(ints.get(m.group(0), 0)), expr)
        v = _int_value(expr, ints)
        if v is None:
            raise ValueError(f"#if {expr!r}: not an integer expression")
        return bool(v)

    def expand(line: str) -> str:
        for _ in range(8):
            new = _IDENT.sub(lambda m: macros.get(m.group(0), m.group(0)), line)
            if new == line:
                break
            line = new
        return line

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            m = re.match(r"#\s*(\w+)\s*(.*)", line)
            d, rest = (m.group(1), m.group(2).strip()) if m else ("", "")
            if d in ("ifdef", "ifndef"):
                on = (rest.split()[0] in macros) == (d == "ifdef")
                stack.append([on, on])
            elif d == "if":
                on = active() and cond(rest)
                stack.append([on, on])
            elif d == "elif":
                on = not stack[-1][1] and cond(rest)
                stack[-1] = [on, stack[-1][1] or on]
            elif d == "else":
                stack[-1] = [not stack[-1][1], True]
            elif d == "endif":
                stack.pop()
            elif not active():
                continue
            elif d == "define":
                dm = re.match(r"(\w+)(\()?\s*(.*)", rest)
                if dm is None:
                    raise ValueError(f"#define {rest!r}: no macro name")
                if dm.group(2):
                    raise ValueError(f"function-like macro {dm.group(1)} is not supported")
                name, value = dm.group(1), dm.group(3).strip()
                macros[name] = value
                v = _int_value(expand(value), ints) if value else None
                if v is not None:
                    ints[name] = v
                    macros[name] = str(v)
                    out.append(f"#define {name} {v}")
            elif d == "undef":
                macros.pop(rest, None)
                ints.pop(rest, None)
            elif d in ("include", "pragma", "error", "warning", "line", ""):
                continue
            continue
        if active() and line:
            out.append(expand(raw))
    if stack:
        raise ValueError("unterminated #if in the header")
    return _strip_attributes("\n".join(out)) + "\n"


def _make() -> Tuple[Any, Any, str]:
    with open(header_path()) as f:
        source = cdef_from_header(f.read())
    ffi_ = cffi.FFI()
    ffi_.cdef(source)
    return ffi_, ffi_.dlopen(get_library()), source


ffi, lib, cdef_source = _make()
