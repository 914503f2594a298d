"""The ``datasets`` internals hf_lvf relies on are all there, and all listed in one module."""

from __future__ import annotations

import ast
from pathlib import Path

import datasets

from hf_lvf.hf import internals as _datasets

PACKAGE = Path(__file__).resolve().parents[1] / "hf_lvf"
GLUE = ("hf/internals.py", "hf/formatters.py", "hf/combining.py")  # the glue, its internals listed


def test_every_internal_is_present():
    problems = _datasets.check_internals()
    assert not problems, (
        f"datasets {datasets.__version__} moved internals hf_lvf relies on; update "
        "hf_lvf/hf/internals.py:\n" + "\n".join(problems)
    )


def test_a_missing_internal_is_named(monkeypatch):
    monkeypatch.setattr(
        _datasets, "INTERNALS", (*_datasets.INTERNALS, ("datasets.load", "_no_such_name", True))
    )
    [problem] = _datasets.check_internals()
    assert "needs datasets.load._no_such_name" in problem
    assert datasets.__version__ in problem


def test_only_the_glue_module_touches_private_datasets_names():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in GLUE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("datasets"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private or any(p.startswith("_") for p in node.module.split(".")):
                    wrong.append(f"{path.name}:{node.lineno} from {node.module} import {private}")
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and "datasets" in ast.unparse(node.value).split(".")[0]
            ):
                wrong.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not wrong, "datasets internals outside hf_lvf/hf/internals.py:\n" + "\n".join(wrong)


def test_the_docstring_lists_every_internal():
    doc = _datasets.__doc__ or ""
    for module, name, _ in _datasets.INTERNALS:
        assert name in doc, f"{module}.{name} is used but not listed in _datasets' docstring"
