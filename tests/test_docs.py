"""The manual runs: every code block of docs/ and README.md, and the site builds with --strict.

Each ``python`` and ``bash`` block of a page is a test of its own (``page.md:LINE``), run in
page order in one namespace per page (as a reader runs them, one block building on the one
before) and in a working directory of its own per page holding the data of
``tests/_docs.py`` (``clips/``, ``videos/``...). Running one block alone runs the blocks
before it on its page first. ``bash`` blocks run in bash with ``-euo pipefail``.

A ``python`` block's results are checked as it runs: a line that shows one ends in
``# -> RESULT`` (``tests/_results.py``), and ``test_every_shown_result_is_checked`` fails on
a result shown without the arrow. docs/contributing.md states the rules.

A block that cannot run here is marked just before it with ``<!-- skip: next "why" -->``;
its test is skipped with that reason (``pytest -ra`` lists them). A block in any other
language is text (``text``, ``json``, ``yaml``), and a fence without a language fails
``test_every_block_runs_or_says_why``: nothing is skipped silently.

Hub blocks run against the local Hub stand-in (``tests/hub_server.py``), with
``HF_TOKEN`` set to its token.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import unittest
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import _results
import pytest
from _docs import build_docs_workspace, copy_workspace
from sybil import Document, Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
RUN_LANGUAGES = ("python", "bash")
TEXT_LANGUAGES = ("text", "json", "yaml")


def _run_bash(example: Example) -> None:
    bin_dir = str(Path(sys.executable).parent)  # where `hf-lvf` is installed
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", example.parsed],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if done.returncode:
        raise AssertionError(
            f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )


SYBIL = Sybil(
    parsers=[
        CodeBlockParser(language="python", evaluator=_results.evaluate),
        CodeBlockParser(language="bash", evaluator=_run_bash),
        SkipParser(),
    ],
)


def _is_block(example: Example) -> bool:
    return not isinstance(example.parsed, tuple)  # skip directives parse to (action, reason)


def _cases() -> list:
    cases = []
    for page in PAGES:
        rel = page.relative_to(REPO).as_posix()
        for index, example in enumerate(SYBIL.parse(page)):
            if _is_block(example):
                cases.append(pytest.param(rel, index, id=f"{rel}:{example.line}"))
    return cases


@dataclass
class _PageRun:
    """One page's blocks, run in order once each, in one namespace and working directory."""

    document: Document
    workdir: Path
    examples: list[Example]
    outcomes: list[BaseException | None] = field(default_factory=list)

    def run_through(self, index: int) -> BaseException | None:
        while len(self.outcomes) <= index:
            example = self.examples[len(self.outcomes)]
            try:
                example.evaluate()
            except (Exception, unittest.SkipTest) as err:
                self.outcomes.append(err)
            else:
                self.outcomes.append(None)
        return self.outcomes[index]


@pytest.fixture(scope="session")
def docs_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_docs_workspace(tmp_path_factory.mktemp("docs-workspace"))


_RUNS: dict[str, _PageRun] = {}


@pytest.fixture
def page_run(request, docs_workspace, tmp_path_factory, hub_server, monkeypatch):
    rel = request.node.callspec.params["rel"]
    if rel == "docs/guides/ray.md":
        request.getfixturevalue("ray_cluster")  # the session's one local Ray
    if rel not in _RUNS:
        hub_server.reset()
        document = SYBIL.parse(REPO / rel)
        workdir = copy_workspace(docs_workspace, tmp_path_factory.mktemp("page") / "work")
        _RUNS[rel] = _PageRun(document, workdir, list(document))
    run = _RUNS[rel]
    monkeypatch.chdir(run.workdir)
    monkeypatch.setenv("HF_TOKEN", hub_server.token)
    return run


@pytest.mark.parametrize(("rel", "index"), _cases())
def test_block(rel: str, index: int, page_run: _PageRun) -> None:
    __tracebackhide__ = True
    for before in range(index):
        outcome = page_run.run_through(before)
        if outcome is not None and not isinstance(outcome, unittest.SkipTest):
            pytest.fail(
                f"an earlier block of {rel} (line {page_run.examples[before].line}) failed",
                pytrace=False,
            )
    outcome = page_run.run_through(index)
    if isinstance(outcome, unittest.SkipTest):
        pytest.skip(f"{rel}:{page_run.examples[index].line}: {outcome}")
    if outcome is not None:
        raise outcome


# ---------------------------------------------------------------------------------------------
# nothing is skipped silently

_FENCE = re.compile(r"^(?P<indent>[ \t]*(?:[-*+][ \t]+)?)(?P<fence>`{3,})(?P<info>[^`\n]*)$", re.M)
_SKIP = re.compile(r"<!--\s*skip:\s*(?P<rest>.*?)\s*-->")


def _fences(text: str) -> list[tuple[int, str]]:
    """(line, info string) of every opening fence."""
    found, open_fence = [], None
    for match in _FENCE.finditer(text):
        if open_fence is None:
            open_fence = match.group("fence")
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, match.group("info").strip()))
        elif match.group("fence") >= open_fence and not match.group("info").strip():
            open_fence = None
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_block_runs_or_says_why(page: Path) -> None:
    text = page.read_text()
    fences = _fences(text)
    unknown = [(line, info) for line, info in fences if info not in RUN_LANGUAGES + TEXT_LANGUAGES]
    assert not unknown, f"fences whose language is neither run nor text: {unknown}"
    runnable = [line for line, info in fences if info in RUN_LANGUAGES]
    collected = [ex.line for ex in SYBIL.parse(page) if _is_block(ex)]
    assert collected == runnable, "a python/bash block that sybil does not collect"
    for match in _SKIP.finditer(text):
        assert re.fullmatch(r'next "[^"]{10,}"', match.group("rest")), (
            f"a skip must be 'skip: next \"reason\"', got {match.group(0)!r}"
        )


# ---------------------------------------------------------------------------------------------
# every result a page shows is checked (tests/_results.py: `expression  # -> result`)


def _blocks(page: Path) -> list[tuple[Example, bool]]:
    """(block, whether it runs) of every python and bash block of ``page``."""
    blocks, skip_next = [], False
    for example in SYBIL.parse(page):
        if not _is_block(example):
            skip_next = skip_next or example.parsed[0] == "next"
            continue
        blocks.append((example, not skip_next))
        skip_next = False
    return blocks


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_shown_result_is_checked(page: Path) -> None:
    rel = page.relative_to(REPO).as_posix()
    problems = []
    for example, runs in _blocks(page):
        source = "\n" * (example.line + example.parsed.line_offset) + example.parsed
        if example.region.lexemes["arguments"] == "python":
            found = _results.unchecked_results(source, runs=runs)
        else:  # bash: its output is not compared, so it shows no result to compare
            found = [
                f"line {n}: '# ->' in a bash block, which nothing checks"
                for n, line in enumerate(source.split("\n"), 1)
                if re.search(r"#\s*->", line)
            ]
        problems += [f"{rel} {p}" for p in found]
    assert not problems, "\n".join(problems)


def test_results_are_compared_character_for_character() -> None:
    shape = "(16, 64, 64, 3)"
    block = "import numpy as np\nx = np.zeros((16, 64, 64, 3), np.uint8)\n"
    assert _results.run(block + f"x.shape  # -> {shape}\n", {}) == []
    edits = {shape[:i] + c + shape[i + 1 :] for i in range(len(shape)) for c in "0 x,)"}
    edits |= {shape[:i] + shape[i + 1 :] for i in range(len(shape))}  # one deleted
    edits |= {shape[:i] + "1" + shape[i:] for i in range(len(shape))}  # one inserted
    edits.discard(shape)
    for edit in sorted(edits):
        wrong = _results.run(block + f"x.shape  # -> {edit}\n", {})
        assert len(wrong) == 1 and "the page shows" in wrong[0], edit
    # What print writes, in the same way; the result on the line after, and on several.
    assert _results.run(block + "print(x.shape, x.dtype)  # -> (16, 64, 64, 3) uint8\n", {}) == []
    assert _results.run(block + "print(x.shape, x.dtype)  # -> (16, 64, 64, 3) uint16\n", {})
    assert _results.run(block + "x.dtype\n# -> dtype('uint8')\n", {}) == []
    assert _results.run(block + "x.dtype  #->dtype('int8')\n", {})  # an arrow without spaces
    assert _results.run(block + "x.dtype\n# -> dtype('int8')\n", {})
    two = "print('a'); print('b\\nc')\n# -> b\n# -> c\n"
    assert _results.run(two, {}) == []
    assert _results.run(two.replace("# -> b", "# -> c"), {})
    # A wrapped line of output; `...` standing for any text.
    wrapped = "list(range(12))\n# -> [0, 1, 2, 3, 4, 5,\n#     6, 7, 8, 9, 10, 11]\n"
    assert _results.run(wrapped, {}) == []
    assert _results.run(wrapped.replace("10", "1O"), {})
    assert _results.run("'/tmp/a1b2/clips'  # -> '/.../clips'\n", {}) == []
    assert _results.run("'/tmp/a1b2/clips'  # -> '/.../clipz'\n", {})
    # Each time the line runs; a line that never ran fails, and so does a misplaced arrow.
    assert _results.run("for i in (1, 1):\n    i  # -> 1\n", {}) == []
    assert _results.run("for i in (1, 2):\n    i  # -> 1\n", {})
    assert "never ran" in _results.run("if False:\n    1  # -> 1\n", {})[0]
    with pytest.raises(ValueError, match="does not end an expression statement"):
        _results.run("y = 1  # -> 1\n", {})


def test_results_shown_unchecked_are_found() -> None:
    assert _results.unchecked_results("x = (2, 3)\nx  # -> (2, 3)\nassert x\n") == []
    found = _results.unchecked_results("x = (2, 3)\nx  # (2, 3)\nlen(x)\nprint(x)\n")
    assert [p.split(":")[0] for p in found] == ["line 2", "line 3", "line 4"]
    found = _results.unchecked_results("w.segment_info(0)  # {'video_idx': 0}\n")
    assert found == ["line 1: a result in a comment without '->': \"# {'video_idx': 0}\""]
    found = _results.unchecked_results("w.feature('video')\n# Array4D(shape=(2, 8, 8, 3))\n")
    assert found == ["line 1: a result in a comment without '->': '# Array4D(shape=(2, 8, 8, 3))'"]
    assert _results.unchecked_results("w.close()  # frees its memory\nw.take([0])\n") == []
    assert _results.unchecked_results("x  # -> 1\n", runs=False)  # nothing would check it


def test_a_page_whose_result_is_changed_by_one_character_fails(
    docs_workspace, tmp_path, monkeypatch
) -> None:
    page = tmp_path / "index.md"
    text = (REPO / "docs" / "index.md").read_text()
    shown = "# -> (16, 64, 64, 3) uint8"
    assert text.count(shown) == 1
    page.write_text(text.replace(shown, shown.replace("64, 3)", "64, 4)")))
    monkeypatch.chdir(copy_workspace(docs_workspace, tmp_path / "work"))
    (block,) = [example for example, _ in _blocks(page)]
    with pytest.raises(AssertionError) as failed:
        block.evaluate()
    line = text[: text.index(shown)].count("\n") + 1
    assert str(failed.value) == (
        f"{page}:{line}: the page shows\n    (16, 64, 64, 4) uint8\n"
        "the block gives\n    (16, 64, 64, 3) uint8"
    )


def test_docstring_examples_give_what_they_show() -> None:
    """The API reference shows the docstrings' ``>>>`` examples: each that runs without a root
    (the others are ``+SKIP``) gives what it shows."""
    import doctest
    import importlib

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for path in sorted((REPO / "hf_lvf").rglob("*.py")):
        if ">>>" not in path.read_text() or path.name == "__main__.py":
            continue
        parts = path.relative_to(REPO).with_suffix("").parts
        module = importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        for test in finder.find(module):
            runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, "".join(report)
    assert attempted >= 30  # cover_size, crop_box, plan_windows, ReadAheadBudget...


# ---------------------------------------------------------------------------------------------
# every load_dataset("hf_lvf", ...) example imports hf_lvf, which registers the builder: pasted
# alone into a script without it, datasets says it cannot find a dataset named "hf_lvf"

_LOADS_HF_LVF = re.compile(r"""load_dataset\(\s*(?:#.*\n)?\s*(?:\.\.\.\s*)?["']hf_lvf["']""")
_IMPORTS_HF_LVF = re.compile(r"^\s*(?:>>> )?(?:import [^\n#]*\bhf_lvf\b|from hf_lvf\b)", re.M)


def _docstring_examples() -> dict[str, str]:
    """The ``>>>`` examples of every docstring of hf_lvf, by ``module:line``."""
    examples = {}
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for path in sorted((REPO / "hf_lvf").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            doc = ast.get_docstring(node) if isinstance(node, documented) else None
            lines = [line.strip() for line in (doc or "").split("\n")]
            code = [line for line in lines if line.startswith((">>> ", "... "))]
            if code:
                examples[f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 1)}"] = "\n".join(code)
    return examples


def test_every_load_dataset_example_imports_hf_lvf(tmp_path) -> None:
    from hf_lvf import build_card
    from hf_lvf.write.synthetic import write_synthetic_root

    examples = {}
    for page in PAGES:
        for example, _ in _blocks(page):
            if example.region.lexemes["arguments"] == "python":
                examples[f"{page.relative_to(REPO)}:{example.line}"] = str(example.parsed)
    for folder in ("examples", "dataset_scripts"):
        for path in sorted((REPO / folder).glob("*.py")):
            examples[str(path.relative_to(REPO))] = path.read_text()
    examples.update(_docstring_examples())
    root = write_synthetic_root(tmp_path / "clips", num_videos=2, num_frames=8)
    card = str(build_card(root, repo_id="org/clips"))
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", card, re.S)):
        examples[f"the dataset card's python block {i}"] = block
    loading = {where: code for where, code in examples.items() if _LOADS_HF_LVF.search(code)}
    # The check looks where the examples are: pages, scripts, docstrings and the card.
    places = {where.split(":")[0] for where in loading}
    assert {"README.md", "docs/guides/datasets.md", "examples/train_classifier.py"} <= places
    assert {"hf_lvf/hf/feature.py", "hf_lvf/training/loader.py"} <= places
    assert sum(where.startswith("the dataset card") for where in loading) == 2
    assert [where for where, code in loading.items() if not _IMPORTS_HF_LVF.search(code)] == []
    # ...and can fail: the README's example as it was.
    assert not _IMPORTS_HF_LVF.search('from datasets import load_dataset\nload_dataset("hf_lvf")')


# ---------------------------------------------------------------------------------------------
# the site: a strict build, every name documented, every internal link followed


def _docs_hooks():
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import hooks
    finally:
        sys.path.remove(str(REPO / "docs"))
    return hooks


def test_api_reference_documents_every_public_name() -> None:
    hooks = _docs_hooks()
    page = (REPO / "docs" / hooks.API_PAGE).read_text()
    assert hooks.undocumented_names(page) == []
    # The check can fail: a page missing one name, and a name without a docstring.
    assert hooks.undocumented_names(page.replace("::: hf_lvf.ClipSampler\n", "")) == [
        "no '::: hf_lvf.ClipSampler'"
    ]


def test_load_dataset_options_cover_the_config() -> None:
    import dataclasses

    import datasets

    import hf_lvf

    table = _docs_hooks().load_dataset_options()
    inherited = {f.name for f in dataclasses.fields(datasets.BuilderConfig)}
    own = [f.name for f in dataclasses.fields(hf_lvf.HfLvfConfig) if f.name not in inherited]
    assert sorted(re.findall(r"^\| `(\w+)` \|", table, re.M)) == sorted(own)
    assert "| `window_length` | `int` | `1` | frames per window (>= 1). The default, 1, is" in table


def test_cli_reference_has_every_command_and_option() -> None:
    from hf_lvf.cli.args import build_parser

    text = _docs_hooks().cli_reference()
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert list(commands) == [
        "info",
        "show",
        "convert",
        "merge",
        "add-proxy",
        "card",
        "push",
        "demo",
    ]
    for name, command in commands.items():
        assert f"## hf-lvf {name} {{#hf-lvf-{name}}}" in text
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in text, (name, option)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "a" and values.get("href"):
            self.links.append(values["href"])


def test_site_builds_strict_and_internal_links_resolve(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    pages = {p.resolve(): _Links() for p in site.rglob("*.html")}
    for path, parsed in pages.items():
        parsed.feed(path.read_text())
    base = urlsplit(re.search(r"^site_url: (\S+)", (REPO / "mkdocs.yml").read_text(), re.M)[1]).path
    broken = []
    for path, parsed in pages.items():
        for href in parsed.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue
            if parts.path.startswith(base):
                # 404.html links from the site's root (site_url's path), being served from any URL
                target = (site / unquote(parts.path[len(base) :])).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)}: {href}")
            elif target.suffix == ".html" and parts.fragment not in {"", *pages[target].ids}:
                broken.append(f"{path.relative_to(site)}: {href} (no such anchor)")
    assert not broken, broken


# Sites of other projects that the docs link to; hf_lvf has no site or repository of its
# own on the web, so a link to one (a docs site, a source URL) fails here.
_LINKED_SITES = {
    "127.0.0.1",
    "docs.ray.io",
    "jcristharif.com",
    "lancedb.github.io",
    "pypi.org",
    "pytorch.org",
    "sybil.readthedocs.io",
}


def test_links_point_only_at_sites_that_exist():
    files = [REPO / "README.md", REPO / "pyproject.toml", REPO / "mkdocs.yml"]
    files += [p for d in ("docs", "cards") for p in (REPO / d).rglob("*") if p.is_file()]
    wrong = []
    for path in files:
        for url in re.findall(r"https?://[^\s)>\"'`\]]+", path.read_text(errors="replace")):
            host = urlsplit(url).hostname or ""
            if host not in _LINKED_SITES or "hf-lvf" in url or "hf_lvf" in url:
                wrong.append(f"{path.relative_to(REPO)}: {url}")
    assert not wrong, wrong


def test_each_window_option_is_documented_once_in_window_params() -> None:
    """The window options have one text, in ``WindowParams``: the classes that take them
    as keyword arguments point there instead of saying it again (and drifting)."""
    import dataclasses

    import griffe

    import hf_lvf
    from hf_lvf.hf.shards import ClipConfig

    options = {f.name for f in dataclasses.fields(hf_lvf.WindowParams)}
    texts = _docs_hooks()._arg_descriptions(hf_lvf.WindowParams)
    assert options <= set(texts), options - set(texts)
    for cls in (hf_lvf.VideoWindows, hf_lvf.HfLvfConfig, hf_lvf.WindowVideo, ClipConfig):
        sections = griffe.Docstring(cls.__doc__, parser="google").parse(
            warn_unknown_params=False, warn_missing_types=False
        )
        for section in sections:
            if section.kind is not griffe.DocstringSectionKind.parameters:
                continue
            for param in section.value:
                names = {n.strip() for n in param.name.split(",")}
                if names & options:
                    assert "WindowParams" in param.description, (cls.__name__, param.name)
