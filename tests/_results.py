"""``# ->``: the results a python block of docs/ or README.md shows, checked when it runs.

A line that shows a result ends in ``# -> RESULT``::

    w[0]["video"].shape              # -> (16, 64, 64, 3)
    print(video.shape, video.dtype)  # -> (16, 64, 64, 3) uint8

``RESULT`` is what Python's prompt would show for the line's expression: what it prints,
then the ``repr`` of its value unless that is ``None``. The comparison is exact (trailing
spaces aside), except that ``...`` stands for any text (a temporary path, a digest).

- A result that does not fit beside its expression goes on the comment line after it
  (``# -> RESULT`` alone on its line); several lines of output are several such lines,
  in order.
- A long line of output may wrap: a comment line right after a result line whose text
  starts with two spaces or more (``#     {...}]``) continues it, the line break standing
  for one space.
- ``# ->`` must end an expression statement (not an assignment), also inside a loop, a
  ``with`` or a ``try``; each time the line runs, it must show the result, and a block in
  which one never ran fails.

:func:`evaluate` runs a block this way (in place of sybil's ``PythonEvaluator``);
:func:`unchecked_results` finds the lines that show a result without ``# ->``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field

SHOW = "__docs_show_result__"
_RESULT = re.compile(r"#\s*-> ?(?P<text>.*)$")
_CONTINUED = re.compile(r"#(?P<text> {2,}\S.*)$")


@dataclass
class _Result:
    """The result shown for the expression that ends on ``line``."""

    line: int
    comment_lines: list[int] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)  # one item per line of output
    ran: bool = False


def _comments(source: str) -> list[tuple[int, str, int | None]]:
    """(line, text, line of the last code before it) of every comment; the last is the
    comment's own line for a comment after code on that line."""
    found, last_code = [], None
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string, last_code))
        elif token.type not in skip:
            last_code = token.end[0]
    return found


def parse_results(source: str) -> dict[int, _Result]:
    """The ``# ->`` results of ``source``, by the line their expression ends on.

    Raises:
        ValueError: a ``# ->`` line that follows no code.
    """
    results: dict[int, _Result] = {}
    previous: _Result | None = None  # the result of the comment line just before
    for line, text, last_code in _comments(source):
        match = _RESULT.match(text)
        if match:
            if last_code is None:
                raise ValueError(f"line {line}: '# ->' with no expression before it")
            result = results.setdefault(last_code, _Result(last_code))
            result.comment_lines.append(line)
            result.expected.append((match["text"] or "").rstrip())
            previous = result
            continue
        continued = _CONTINUED.match(text)
        if previous and continued and previous.comment_lines[-1] == line - 1:
            previous.comment_lines.append(line)
            previous.expected[-1] += " " + continued["text"].strip()
            continue
        previous = None
    return results


def _matches(expected: str, got: str) -> bool:
    if "..." not in expected:
        return expected == got
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, got, re.DOTALL) is not None


def _shown(thunk: Callable[[], object]) -> str:
    """Run ``thunk``: what it prints, then its value, as the prompt shows them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = thunk()
    text = out.getvalue()
    if value is not None:
        text += repr(value) + "\n"
    return text


class _Instrument(ast.NodeTransformer):
    """The expression statement that shows each result (the last one ending on its line)
    becomes ``SHOW(line, lambda: expression)``."""

    def __init__(self, tree: ast.AST, results: dict[int, _Result]) -> None:
        last = {n.end_lineno: n for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        self.nodes = {id(node): line for line, node in last.items() if line in results}
        self.found = set(self.nodes.values())

    def visit_Expr(self, node: ast.Expr) -> ast.Expr:
        line = self.nodes.get(id(node))
        if line is not None:
            no_args = ast.arguments(
                posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
            )
            thunk = ast.Lambda(args=no_args, body=node.value)
            call = ast.Call(ast.Name(SHOW, ast.Load()), [ast.Constant(line), thunk], [])
            node.value = ast.copy_location(call, node.value)
            ast.fix_missing_locations(node)
        return node


def run(source: str, namespace: dict, filename: str = "<docs>") -> list[str]:
    """Run ``source`` in ``namespace`` and return what its ``# ->`` results got wrong
    (empty if all are right). Line numbers are those of ``source``.

    Raises:
        ValueError: a ``# ->`` that ends no expression statement.
        Exception: whatever the block raises (with the results it got wrong as a note).
    """
    results = parse_results(source)
    tree = ast.parse(source, filename)
    instrument = _Instrument(tree, results)
    tree = instrument.visit(tree)
    lost = sorted(set(results) - instrument.found)
    if lost:
        lines = ", ".join(str(results[line].comment_lines[0]) for line in lost)
        raise ValueError(
            f"{filename}: '# ->' on line {lines} does not end an expression statement "
            "(show a value as `expression  # -> result`, not after an assignment)"
        )
    wrong: list[str] = []

    def show(line: int, thunk: Callable[[], object]) -> None:
        __tracebackhide__ = True
        result = results[line]
        result.ran = True
        text = _shown(thunk)
        sys.stdout.write(text)
        got = "\n".join(part.rstrip() for part in text.rstrip("\n").split("\n"))
        expected = "\n".join(result.expected)
        if not _matches(expected, got):
            wrong.append(
                f"{filename}:{result.comment_lines[0]}: the page shows\n"
                + _indent(expected)
                + "\nthe block gives\n"
                + _indent(got)
            )

    namespace[SHOW] = show
    try:
        exec(compile(tree, filename, "exec", dont_inherit=True), namespace)
    except BaseException as err:
        if wrong and hasattr(err, "add_note"):
            err.add_note("and results it got wrong before:\n" + "\n".join(wrong))
        raise
    finally:
        namespace.pop(SHOW, None)
        namespace.pop("__builtins__", None)
    wrong += [
        f"{filename}:{r.comment_lines[0]}: this result's line never ran"
        for r in results.values()
        if not r.ran
    ]
    return wrong


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in (text.split("\n") if text else ["(nothing)"]))


def evaluate(example) -> None:
    """A sybil evaluator: run a python block, with its ``# ->`` results checked."""
    __tracebackhide__ = True
    # Padded so that line numbers, in tracebacks and in messages, are the page's.
    source = "\n" * (example.line + example.parsed.line_offset) + example.parsed
    wrong = run(source, example.namespace, str(example.path))
    if wrong:
        raise AssertionError("\n".join(wrong))


# ---------------------------------------------------------------------------------------------
# lines that show a result and are not checked

# Builtins called only for what they return (or print): a statement of one shows a result.
_SHOWING_BUILTINS = {
    "print", "len", "sorted", "list", "tuple", "dict", "set", "repr", "str", "int", "float",
    "bool", "sum", "min", "max", "any", "all", "type", "isinstance", "round", "abs",
}  # fmt: skip
# The start of a comment that reads as a value: a repr (`(`, `[`, `{`, a quote, `array(`,
# `Array4D(`...), a number, True/False/None.
_VALUE_LIKE = re.compile(
    r"#\s*(?:[(\[{'\"]|-?\d|(?:True|False|None)\b|[A-Z]\w*\(|array\(|dtype\(|torch\.)"
)


def _shows_a_value(node: ast.Expr) -> bool:
    value = node.value
    if isinstance(value, ast.Constant):  # a docstring, or `...` standing for a loop's body
        return False
    if isinstance(value, ast.Call):
        return isinstance(value.func, ast.Name) and value.func.id in _SHOWING_BUILTINS
    return True  # a name, an attribute, a subscript, a tuple, a comparison...


def unchecked_results(source: str, *, runs: bool = True) -> list[str]:
    """What in ``source`` shows a result that no ``# ->`` checks: an expression statement
    that is only there for its value (``x.shape``, ``len(x)``, ``print(x)``), a comment
    after an expression that reads as a value (``# (2, 3)``), or, in a block that does not
    run (``runs=False``), any ``# ->`` at all. Line numbers are those of ``source``."""
    results = parse_results(source)
    problems = []
    if not runs:
        problems += [
            f"line {r.comment_lines[0]}: '# ->' in a block that does not run, so nothing "
            "checks it (state the result in words, or assert it)"
            for r in results.values()
        ]
    trailing = {line: text for line, text, code in _comments(source) if code == line}
    alone = {line: text for line, text, code in _comments(source) if code != line}
    tree = ast.parse(source)
    # An expression in a try's body is there to raise (`saved[0]` under `except LayoutError`).
    raising = {id(s) for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Expr) or id(node) in raising:
            continue
        line = node.end_lineno
        if _shows_a_value(node) and line not in results:
            problems.append(
                f"line {line}: an expression whose value is shown to nobody: check it with "
                "`# -> result`, assert it, or drop it"
                if runs
                else f"line {line}: an expression whose value this block (which does not "
                "run) shows unchecked: state it in words, or assert it"
            )
            continue
        for text in filter(None, (trailing.get(line), alone.get(line + 1))):
            if not _RESULT.match(text) and _VALUE_LIKE.match(text):
                problems.append(f"line {line}: a result in a comment without '->': {text!r}")
                break
    return problems
