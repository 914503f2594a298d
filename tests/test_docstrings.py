"""Docstrings do not promise errors the code cannot raise: each exception a public function's
(or class's, or method's) "Raises" section names must be raisable by it.

Every public definition of every module is checked (the public homes' names among them).
The check is static and conservative: it can miss a stale entry, never refuse a true one. An
exception is raisable by a function when the function, or an hf_lvf function it calls or
passes on (a ``functools.partial``, a callback), makes it or a subclass of it: ``raise X``,
``X(...)`` (an error built by a helper and raised later counts), or ``except X`` re-raised.
Calls are followed by name to every hf_lvf function of that name (``obj.read()`` reaches
every ``read``). A name that is neither an hf_lvf error nor a builtin exception is allowed
only from ``OUTSIDE``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from collections import defaultdict
from functools import cache
from pathlib import Path

import griffe
import pytest

import hf_lvf
from hf_lvf import errors

PACKAGE = Path(hf_lvf.__file__).parent
# Exceptions of other libraries (and of the file system) that reach callers through hf_lvf's
# calls: a docstring may name them without an hf_lvf ``raise``.
OUTSIDE = {"BrokenProcessPool", "OSError"}


@cache
def _ancestors(name: str) -> frozenset[str] | None:
    """The names of exception class ``name`` and of its bases, or None if ``name`` is no
    exception: an hf_lvf error, a builtin, or a class a module of hf_lvf defines for itself
    (``_BadClip``..., its bases read from the source)."""
    cls = getattr(errors, name, None) or getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return frozenset(c.__name__ for c in cls.__mro__)
    node = _index()[1].get(name)
    if node is None:
        return None
    bases = [_ancestors(b) for b in (_called_name(b) for b in node.bases) if b and b != name]
    if not bases or any(b is None for b in bases):
        return None
    return frozenset({name}.union(*bases))


def _exception(name: str) -> bool:
    return _ancestors(name) is not None


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


@cache
def _index() -> tuple[dict[str, list[ast.AST]], dict[str, ast.ClassDef]]:
    """Every function and method of hf_lvf by simple name, and every class by name."""
    functions: dict[str, list[ast.AST]] = defaultdict(list)
    classes: dict[str, ast.ClassDef] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[node.name].append(node)
            elif isinstance(node, ast.ClassDef):
                classes[node.name] = node
    return functions, classes


_OWN: dict[int, tuple[set[str], set[str]]] = {}


def _own(node: ast.AST) -> tuple[set[str], set[str]]:
    """(exception names the body makes or re-raises, names it calls or passes on)."""
    if id(node) not in _OWN:
        _OWN[id(node)] = _walk(node)
    return _OWN[id(node)]


def _walk(node: ast.AST) -> tuple[set[str], set[str]]:
    made, called = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in _index()[0]:  # passed on (a partial...)
            called.add(sub.id)
        if isinstance(sub, ast.Call):
            name = _called_name(sub.func)
            if name is None:
                continue
            if _exception(name):
                made.add(name)
            else:
                called.add(name)
        elif isinstance(sub, ast.Raise) and sub.exc is not None:
            name = _called_name(sub.exc)
            if name is not None and _exception(name):
                made.add(name)
        elif isinstance(sub, ast.ExceptHandler) and sub.type is not None:
            kinds = sub.type.elts if isinstance(sub.type, ast.Tuple) else [sub.type]
            reraises = any(isinstance(s, ast.Raise) for s in ast.walk(sub))
            if reraises:
                made |= {n for k in kinds if (n := _called_name(k)) and _exception(n)}
    return made, called


@cache
def _closure(name: str) -> frozenset[str]:
    """Exception names raisable through every hf_lvf function (or class) called ``name``."""
    functions, classes = _index()
    seen, todo, made = set(), [name], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        nodes = list(functions.get(current, ()))
        if current in classes:  # building an instance runs its __init__ / __post_init__...
            nodes += [
                n
                for n in classes[current].body
                if isinstance(n, ast.FunctionDef) and n.name.startswith("__")
            ]
            nodes += [b for b in classes[current].bases if isinstance(b, ast.Name)]
        for node in nodes:
            if isinstance(node, ast.Name):  # a base class: its constructors too
                todo.append(node.id)
                continue
            own, calls = _own(node)
            made |= own
            todo += calls
    return frozenset(made)


def _raisable(names: frozenset[str], documented: str) -> bool:
    if documented in OUTSIDE or not _exception(documented):
        return documented in OUTSIDE
    return any(documented in _ancestors(n) for n in names)


def _raises_entries(doc: str) -> list[str]:
    found = []
    for section in griffe.Docstring(doc, parser="google").parse(
        warn_unknown_params=False, warn_missing_types=False
    ):
        if section.kind is griffe.DocstringSectionKind.raises:
            for entry in section.value:
                text = str(entry.annotation)
                found += [n.strip().rsplit(".", 1)[-1] for n in text.split(",") if n.strip()]
    return found


def _public_definitions() -> list[tuple[str, str, str]]:
    """(where, the name whose calls are followed, docstring) of every public function, class
    (its docstring: its constructor) and public method of every module of hf_lvf: the public
    homes' names, and what contributors read."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef | ast.ClassDef) or node.name.startswith("_"):
                continue
            found.append((f"{where}:{node.name}", node.name, ast.get_docstring(node) or ""))
            if isinstance(node, ast.ClassDef):
                found += [
                    (f"{where}:{node.name}.{m.name}", m.name, ast.get_docstring(m) or "")
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")
                ]
    return found


def stale_raises(doc: str, follow: str) -> list[str]:
    """The names of ``doc``'s Raises section that the function(s) ``follow`` cannot raise."""
    names = _closure(follow)
    return [n for n in _raises_entries(doc) if not _raisable(names, n)]


def test_every_raises_section_names_what_can_be_raised():
    checked, stale = 0, []
    for public, follow, doc in _public_definitions():
        entries = _raises_entries(doc)
        checked += len(entries)
        stale += [f"{public}: {n}" for n in stale_raises(doc, follow)]
    assert not stale, "Raises sections naming what cannot be raised:\n" + "\n".join(stale)
    assert checked >= 150  # the walk found the sections


def test_a_wrong_raises_section_is_found():
    """The check can fail: ``read_layout`` raises ``RootNotFoundError``, never a hub error."""
    doc = inspect.getdoc(hf_lvf.read_layout) or ""
    assert "RootNotFoundError" in doc and stale_raises(doc, "read_layout") == []
    wrong = "Sum.\n\nRaises:\n    WorkerLoadError: a worker could not load.\n"
    assert stale_raises(wrong, "read_layout") == ["WorkerLoadError"]


@pytest.mark.parametrize("name", ["ParameterError", "LVFError", "ValueError"])
def test_a_subclass_raised_satisfies_its_base(name):
    assert _raisable(frozenset({"ParameterError"}), name)
    assert not _raisable(frozenset({"ParameterError"}), "HubError")
