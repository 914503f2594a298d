"""benchmarks/: every script runs in its ``--quick`` mode, as a user runs it, and prints a table.

Each ``benchmarks/bench_*.py`` (found by glob, so a new one is run without being listed here)
runs as ``python benchmarks/bench_X.py --quick`` in a subprocess: a few seconds on a tiny
root it makes itself, with the servers it needs (the Hub stand-in, moto, a local Ray)
started by itself. The test fails when a benchmark cannot start (an import that ``.[dev]``
does not install), crashes, or prints no table. It asserts no speed: a benchmark's numbers
are read by people, in one run, as ratios (docs/benchmarks.md).

Each script is one test, so that xdist's workers share them out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _benchmarks import load_benchmark
from hub_server import CLIENT_ENV_DROPPED, client_environment

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((REPO / "benchmarks").glob("bench_*.py"))
# A run that takes this long has hung: quick runs take seconds (minutes on a loaded machine).
HANG = 900
# A Markdown table's separator row: | --- | :---: | ---: |
SEPARATOR = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of ``text``: for each, its header's cells then each row's, the
    rows being the lines after the separator with as many cells as the header."""
    lines = [line.strip() for line in text.splitlines()]
    found = []
    for k, line in enumerate(lines):
        if k == 0 or not SEPARATOR.match(line) or not lines[k - 1].startswith("|"):
            continue
        header = _cells(lines[k - 1])
        if len(_cells(line)) != len(header):
            continue
        rows = []
        for row in lines[k + 1 :]:
            if not row.startswith("|") or len(_cells(row)) != len(header):
                break
            rows.append(_cells(row))
        found.append([header, *rows])
    return found


def test_tables_reads_markdown_tables_only():
    """The check itself: a header, a separator and rows make a table (a header and separator
    alone, one without rows, which the test below refuses); aligned text is no table."""
    text = "x\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\nafter\n| c |\n| --- |\n"
    assert tables(text) == [[["a", "b"], ["1", "2"], ["3", "4"]], [["c"]]]
    assert tables("reader   windows/s\nplain    10.0\n") == []
    assert tables("| a | b |\n|---|\n| 1 | 2 |\n") == []  # separator of another width


def test_the_benchmarks_are_found():
    """The glob finds the scripts: a moved folder would leave the test below with no cases,
    which pytest skips without failing."""
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_quick_run_prints_a_table(script: Path, tmp_path: Path):
    env = {**os.environ, **client_environment(os.environ["HF_ENDPOINT"], tmp_path / "hf-home")}
    for name in CLIENT_ENV_DROPPED:
        env.pop(name, None)
    env["HF_LVF_CACHE"] = str(tmp_path / "hf_lvf-cache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, str(script), "--quick"]
    if '"--workdir"' in script.read_text():  # what it keeps across runs: in this test's folder
        command += ["--workdir", str(tmp_path / "work")]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG, check=False
    )
    said = f"{' '.join(command)}\nstdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"exit status {done.returncode}: {said}"
    found = tables(done.stdout)
    assert found, f"no table printed: {said}"
    assert all(len(table) > 1 for table in found), f"a table without rows: {said}"


class _FlakyRay:
    """A stand-in for the ``ray`` module whose ``init`` raises the given errors in turn."""

    def __init__(self, *errors: Exception):
        self.errors, self.inits, self.shutdowns = list(errors), 0, 0

    def init(self, **options):
        self.inits += 1
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self):
        self.shutdowns += 1


def test_bench_ray_tries_a_timed_out_start_again():
    """bench_ray.py's start of Ray: Ray's own 30 s for the raylet ran out once in CI under load;
    such a start is tried again (up to 3 times), and any other error is raised at once. The
    tests' own local Ray (conftest.py's ray_cluster) starts through it too."""
    bench = load_benchmark("bench_ray")
    timeout = Exception("The current node timed out during startup. This could happen ...")
    ray = _FlakyRay(timeout)
    bench.start_ray(ray, num_cpus=1)
    assert (ray.inits, ray.shutdowns) == (2, 1)
    ray = _FlakyRay(*[timeout] * bench.RAY_STARTS)
    with pytest.raises(Exception, match="timed out during startup"):
        bench.start_ray(ray, num_cpus=1)
    assert ray.inits == bench.RAY_STARTS
    ray = _FlakyRay(ValueError("bad option"))
    with pytest.raises(ValueError, match="bad option"):
        bench.start_ray(ray, num_cpus=1)
    assert (ray.inits, ray.shutdowns) == (1, 0)
