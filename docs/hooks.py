"""MkDocs hooks: the reference pages that are generated from the code, so they cannot drift.

- ``<!-- hf_lvf:cli -->`` becomes the reference of every ``hf-lvf`` command, built from the
  argparse parsers of :mod:`hf_lvf.cli.args` (usage, arguments by group, example).
- ``<!-- hf_lvf:load-dataset-options -->`` becomes the table of ``load_dataset("hf_lvf", ...)``
  options: the fields of :class:`hf_lvf.HfLvfConfig` with their types, defaults and the
  descriptions of its docstring (and of ``ClipConfig``'s; the window options' of
  :class:`hf_lvf.WindowParams`'s, where each is documented once).
- ``reference/api.md`` must hold a ``::: hf_lvf.NAME`` for every name in ``hf_lvf.__all__``
  (and a ``::: hf_lvf.MODULE.NAME`` for every name of the public modules beside it:
  ``hf_lvf.errors``, ``hf_lvf.write``, ``hf_lvf.convert``, ``hf_lvf.ray``), and each must
  have a docstring: otherwise the build fails (an error stops even a build
  without ``--strict``).

``tests/test_docs.py`` imports this file to check the same without a build.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_MARK = "<!-- hf_lvf:cli -->"
OPTIONS_MARK = "<!-- hf_lvf:load-dataset-options -->"
API_PAGE = "reference/api.md"


try:  # what stops a build with a one-line message; tests import this file without mkdocs too
    from mkdocs.exceptions import PluginError as _Base
except ImportError:  # pragma: no cover
    _Base = Exception


class DocsError(_Base):
    """The docs do not match the code (an undocumented name, an option without text)."""


# ---------------------------------------------------------------------------------------------
# hooks


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001
    if CLI_MARK in markdown:
        markdown = markdown.replace(CLI_MARK, cli_reference())
    if OPTIONS_MARK in markdown:
        markdown = markdown.replace(OPTIONS_MARK, load_dataset_options())
    if page.file.src_uri == API_PAGE:
        problems = undocumented_names(markdown)
        if problems:
            raise DocsError(f"{API_PAGE}: " + "; ".join(problems))
    return markdown


# ---------------------------------------------------------------------------------------------
# the API reference covers hf_lvf.__all__


def public_homes() -> dict[str, list[str]]:
    """``{module: its __all__}`` for ``hf_lvf`` and each public module beside it
    (``hf_lvf._MODULES``: ``hf_lvf.errors``, ``hf_lvf.write``, ...)."""
    import importlib

    import hf_lvf

    homes = ["hf_lvf", *(f"hf_lvf.{m}" for m in hf_lvf._MODULES)]
    return {home: list(importlib.import_module(home).__all__) for home in homes}


def undocumented_names(api_markdown: str) -> list[str]:
    """What is wrong with the API page: public names (of each module of :func:`public_homes`)
    it has no ``:::`` for, ``:::`` of names outside them, and public names without a
    docstring. A name two homes export (``hf_lvf.LVFError`` is ``hf_lvf.errors.LVFError``)
    is documented once, under either."""
    import importlib

    import griffe

    homes = public_homes()
    documented = re.findall(r"^::: (hf_lvf(?:\.\w+)*)\.(\w+)\s*$", api_markdown, re.MULTILINE)
    problems = [
        f"'::: {home}.{name}' is not in {home}.__all__"
        for home, name in documented
        if name not in homes.get(home, ())
    ]

    def key(home: str, name: str) -> int:
        return id(getattr(importlib.import_module(home), name))

    seen = {key(home, name) for home, name in documented if name in homes.get(home, ())}
    package = griffe.load("hf_lvf", search_paths=[str(ROOT)], resolve_aliases=True)
    done: set[int] = set()
    for home, names in homes.items():
        for name in names:
            if key(home, name) not in seen:
                problems.append(f"no '::: {home}.{name}'")
            if key(home, name) in done:
                continue
            done.add(key(home, name))
            member = package[f"{home}.{name}".split(".", 1)[1]]
            target = member.final_target if member.is_alias else member
            if target.docstring is None or not target.docstring.value.strip():
                problems.append(f"{home}.{name} has no docstring")
    return problems


# ---------------------------------------------------------------------------------------------
# the CLI reference, from the parsers


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _argument_row(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{s}`" for s in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            names += f" `{metavar}`"
    else:
        names = f"`{action.metavar or action.dest}`"
    text = action.help or ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    said = f"({action.default})" in text or "default" in text.lower()
    shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
    if shown and not said:
        text += f" Default: `{action.default}`."
    return f"| {names} | {_cell(text)} |"


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if not actions:
            continue
        lines += ["", f"**{group.title}**", "", "| argument | meaning |", "| --- | --- |"]
        lines += [_argument_row(a) for a in actions]
    return lines


def cli_reference() -> str:
    """Markdown for every ``hf-lvf`` command, from :func:`hf_lvf.cli.args.build_parser`."""
    from hf_lvf.cli.args import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {choice.dest: choice.help for choice in sub._choices_actions}
    lines = [
        "## hf-lvf",
        "",
        _cell(parser.description or ""),
        "",
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    lines += [f"| [`{name}`](#hf-lvf-{name}) | {_cell(summaries[name])} |" for name in sub.choices]
    lines += _arguments(parser)
    for name, command in sub.choices.items():
        lines += [
            "",
            f"## hf-lvf {name} {{#hf-lvf-{name}}}",
            "",
            _cell(summaries[name]).capitalize() + ".",
            "",
            command.description or "",
            "",
            "```text",
            command.format_usage().strip(),
            "```",
        ]
        lines += _arguments(command)
        if command.epilog:
            example = command.epilog.removeprefix("example:").strip()
            lines += ["", "Example:", "", "```text", example, "```"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# the load_dataset options, from HfLvfConfig


def _arg_descriptions(*classes: type) -> dict[str, str]:
    """``{name: text}`` of the Args sections of the Google-style docstrings of ``classes`` and
    their bases; an entry of one name beats an "a, b: see X" entry of several."""
    import griffe

    found: dict[str, str] = {}
    grouped: dict[str, str] = {}  # "a, b: see X" entries: used where no class has its own
    for klass in [k for cls in classes for k in cls.__mro__]:
        doc = klass.__dict__.get("__doc__")
        if not doc or not klass.__module__.startswith("hf_lvf"):
            continue
        for section in griffe.Docstring(doc, parser="google").parse(
            warn_unknown_params=False, warn_missing_types=False
        ):
            if section.kind is griffe.DocstringSectionKind.parameters:
                for param in section.value:
                    names = [name.strip() for name in param.name.split(",")]
                    into = found if len(names) == 1 else grouped
                    for name in names:
                        into.setdefault(name, param.description)
    return {**grouped, **found}


def load_dataset_options() -> str:
    """Markdown table of the options of ``load_dataset("hf_lvf", ...)`` (``HfLvfConfig``'s own
    fields, not those of ``datasets.BuilderConfig``), each with its type, default and text."""
    import datasets

    from hf_lvf import HfLvfConfig, WindowParams

    inherited = {f.name for f in dataclasses.fields(datasets.BuilderConfig)}
    texts = _arg_descriptions(HfLvfConfig, WindowParams)  # the window options: WindowParams's
    rows = ["| option | type | default | meaning |", "| --- | --- | --- | --- |"]
    own = HfLvfConfig.__annotations__  # the window and size options first, then the clip ones
    fields = sorted(dataclasses.fields(HfLvfConfig), key=lambda f: f.name not in own)
    for field in fields:
        if field.name in inherited:
            continue
        if field.name not in texts:
            raise DocsError(f"HfLvfConfig.{field.name} has no text in the Args of a docstring")
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
        cells = (f"`{field.name}`", f"`{_cell(str(kind))}`", f"`{field.default!r}`")
        rows.append("| " + " | ".join(cells) + f" | {_cell(texts[field.name])} |")
    return "\n".join(rows) + "\n"
