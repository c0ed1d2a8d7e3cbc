"""Fixtures for the command-line tests: a Click runner and small data files with known answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from approxdp.cli.app import cli

#: The synthetic table: N rows; sex F/M, age 18..89, income, uid 0..299 (fixed seed).
N_ROWS = 2000

Run = Callable[..., Result]


@pytest.fixture
def run() -> Run:
    """``run(*args)``: invoke the CLI in-process and return Click's Result (stdout, stderr)."""

    def invoke(*args: str, **kwargs: Any) -> Result:
        return CliRunner().invoke(cli, [str(a) for a in args], **kwargs)

    return invoke


@pytest.fixture
def run_json(run: Run) -> Callable[..., dict[str, Any]]:
    """``run_json(*args)``: invoke with ``--json``, check exit status 0 and parse stdout."""

    def invoke(*args: str) -> dict[str, Any]:
        result = run(*args, "--json")
        assert result.exit_code == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    return invoke


def _one_line_error(result: Result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def one_line_error() -> Callable[..., str]:
    """``one_line_error(result, code, *fragments)``: the command failed with exit status
    ``code`` and printed exactly one line ``error: ...`` containing every fragment, no
    traceback; returns that line."""
    return _one_line_error


@pytest.fixture(scope="session")
def people_table() -> pa.Table:
    """The synthetic table (seed 20240601)."""
    rng = np.random.default_rng(20240601)
    return pa.table({
        "age": rng.integers(18, 90, N_ROWS),
        "sex": rng.choice(["F", "M"], N_ROWS),
        "income": rng.normal(50_000, 10_000, N_ROWS),
        "uid": rng.integers(0, 300, N_ROWS),
    })


@pytest.fixture
def people_csv(tmp_path: Path, people_table: pa.Table) -> Path:
    """The synthetic table as CSV."""
    path = tmp_path / "people.csv"
    pacsv.write_csv(people_table, path)
    return path


@pytest.fixture
def people_parquet(tmp_path: Path, people_table: pa.Table) -> Path:
    """The synthetic table as Parquet."""
    path = tmp_path / "people.parquet"
    pq.write_table(people_table, path)
    return path


