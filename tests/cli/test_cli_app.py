"""The application shell: one-line errors and exit codes, help, version, entry points, demo."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from typing import Any

import click
import pytest

import approxdp as dp
from approxdp.cli import run_cli
from approxdp.cli.app import CliState, _guarded, cli


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["calibrate", "-e", "abc", "-d", "1e-5"], ["'abc' is not a valid float"]),
        (["calibrate", "-e", "1", "-d", "1"], ["'-d' / '--delta': 1.0 is not in the range 0<x<1"]),
        (["calibrate", "-e", "1", "-d", "1.5"], ["'--delta': 1.5 is not in the range 0<x<1"]),
        (["calibrate", "-e", "1", "-d", "0"], ["'--delta': 0.0 is not in the range 0<x<1"]),
        (["calibrate", "-e", "nan", "-d", "1e-5"], ["'--epsilon': 'nan' is not a number"]),
        (["calibrate", "-e", "-1", "-d", "1e-5"], ["'--epsilon': -1.0 is not in the range"]),
        (["calibrate", "-e", "1", "-d", "1e-5", "-s", "-2"], ["'--sensitivity': -2.0"]),
        (["calibrate", "-e", "1", "-d", "1e-5", "-m", "gauss"], ["'gauss' is not one of"]),
        (["calibrate", "-e", "0", "-d", "1e-5", "--notion", "pdp"], ["notion 'pdp'"]),
        (["calibrate", "-e", "1", "-d", "1e-5", "--notion", "rdp"], ["'rdp' is not one of"]),
        (["calibrate", "-d", "1e-5"], ["Missing option", "--epsilon"]),
        (["calibrate", "-e", "1", "-d", "1e-5", "--frobnicate"], ["No such option"]),
        (["calibrat"], ["No such command 'calibrat'"]),
        (["profile", "--sigma", "0"], ["'--sigma': 0.0 is not in the range 0<x<=inf"]),
        (["profile", "--sigma", "1", "--points", "1"], ["--points must be in [2, 10000]"]),
        (["profile", "--sigma", "1", "--eps-max", "-1"], ["'--eps-max': -1.0"]),
        (["epsilon", "--sigma", "1", "-d", "1"], ["'--delta': 1.0"]),
        (["compose", "-d", "1e-5"], ["Missing argument"]),
        (["compose", "gaussian:1", "-d", "2"], ["'--delta': 2.0 is not in the range 0<x<1"]),
        (["compose", "gaussian:-1", "-d", "1e-5"], ["release 'gaussian:-1': sigma must be"]),
        (["demo", "--delta", "2", "--no-releases"], ["'--delta': 2.0"]),
    ],
)
def test_bad_input_is_one_line_with_status_2(
    run: Any, one_line_error: Any, args: list[str], fragments: list[str]
) -> None:
    result = run(*args)
    one_line_error(result, 2, *fragments)
    assert result.stdout == ""


def test_usage_errors_point_to_the_help(run: Any, one_line_error: Any) -> None:
    one_line_error(run("calibrate", "-e", "x", "-d", "1"), 2,
                   "(see 'approxdp calibrate --help')")


def test_unexpected_exception_is_one_line_with_status_1(
    run: Any, one_line_error: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("approxdp.cli.calibration_commands.calibration_report", boom)
    line = one_line_error(run("calibrate", "-e", "1", "-d", "1e-5"), 1, "internal error",
                          "RuntimeError: kaboom", "--debug")
    assert line.count("\n") == 0
    # --debug lets the exception through (Click's runner catches it here).
    debug = run("--debug", "calibrate", "-e", "1", "-d", "1e-5")
    assert isinstance(debug.exception, RuntimeError)


def test_debug_shows_library_errors_with_their_type(run: Any) -> None:
    result = run("--debug", "calibrate", "-e", "0", "-d", "1e-5", "--notion", "pdp")
    assert isinstance(result.exception, dp.InvalidParameterError)
    # the flag lives in the invocation's context object: the next invocation is not in debug
    again = run("calibrate", "-e", "1", "-d", "2")
    assert again.exit_code == 2 and not isinstance(again.exception, dp.InvalidParameterError)


def test_warnings_print_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def warn() -> None:
        warnings.warn("multi\nline warning", UserWarning, stacklevel=1)

    assert _guarded(warn, CliState()) == 0
    assert capsys.readouterr().err == "warning: multi line warning\n"


def test_library_errors_map_to_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    def exceeded() -> None:
        raise dp.BudgetExceededError("no more")

    def bad() -> None:
        raise dp.DataError("column 'x' not found")

    def abort() -> None:
        raise click.Abort()

    assert _guarded(exceeded, CliState()) == 3
    assert _guarded(bad, CliState()) == 2
    assert _guarded(abort, CliState()) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: privacy budget exceeded, nothing was spent: no more",
                   "error: column 'x' not found", "error: aborted"]


def test_no_arguments_shows_help(run: Any) -> None:
    result = run()
    assert result.exit_code == 0
    assert "Usage: approxdp" in result.stdout
    for command in ("calibrate", "profile", "epsilon", "compose", "release", "ledger", "demo"):
        assert command in result.stdout


def test_version_and_help(run: Any) -> None:
    assert run("--version").stdout.strip() == f"approxdp, version {dp.__version__}"
    for command in ("calibrate", "profile", "epsilon", "compose", "release", "ledger", "demo"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "--json" in result.stdout


def test_run_cli_returns_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["calibrate", "-e", "1", "-d", "1e-5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["command"] == "calibrate"
    assert run_cli(["calibrate", "-e", "1", "-d", "5"]) == 2
    assert capsys.readouterr().err.startswith(
        "error: Invalid value for '-d' / '--delta': 5.0 is not in the range 0<x<1")


def test_group_is_a_click_group() -> None:
    assert isinstance(cli, click.Group)
    assert set(cli.commands) == {"calibrate", "profile", "epsilon", "compose", "dpsgd", "release",
                                 "plan", "ledger", "demo", "plot", "reproduce", "serve"}


def test_figure_commands_follow_the_group_conventions(run: Any, tmp_path: Any) -> None:
    assert run("reproduce", "--help").exit_code == 0
    result = run("plot", "no-such-plot", "--out", str(tmp_path / "x.png"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown plot 'no-such-plot'")
    assert len(result.stderr.strip().splitlines()) == 1


def test_python_dash_m_works_in_a_subprocess() -> None:
    help_run = subprocess.run([sys.executable, "-m", "approxdp", "--help"],
                              capture_output=True, text=True, timeout=120)
    assert help_run.returncode == 0, help_run.stderr
    assert "Usage: approxdp" in help_run.stdout
    bad = subprocess.run([sys.executable, "-m", "approxdp", "calibrate", "-e", "1", "-d", "2"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "error: Invalid value for '-d' / '--delta': 2.0 is not in the range 0<x<1. (see "
        "'approxdp calibrate --help')"]


def test_demo_calibration_only(run_json: Any) -> None:
    data = run_json("demo", "--no-releases", "--epsilon", "2", "--delta", "1e-7",
                    "--sensitivity", "3")
    assert set(data) == {"command", "schema_version", "epsilon", "delta", "sensitivity", "seed",
                         "calibration", "releases", "paper_histogram", "comparisons"}
    assert data["releases"] is None and data["paper_histogram"] is None
    assert data["calibration"]["reference_sigma"] == dp.calibrate_gaussian(2, 1e-7, 3)


@pytest.fixture(scope="module")
def demo_runs() -> tuple[Any, Any]:
    """The demo once as JSON and once as tables, with the same seed (a few seconds each)."""
    from click.testing import CliRunner

    as_json = CliRunner().invoke(cli, ["demo", "--seed", "7", "--json"])
    as_table = CliRunner().invoke(cli, ["demo", "--seed", "7"])
    return as_json, as_table


def test_demo_json(demo_runs: tuple[Any, Any]) -> None:
    result, _ = demo_runs
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["seed"] == 7
    labels = [r["label"] for r in data["releases"]]
    assert labels == ["complete records", "mean age", "income", "sex × race"]
    records = data["releases"][0]["cells"][0]
    # 45,222 complete records (Zhao et al. §VI); seeded, 6 std: false-failure rate about 2e-9.
    assert abs(records["value"] - 45_222) < 6 * records["std"]
    paper = data["paper_histogram"]
    assert paper["threshold"] is not None and len(paper["cells"]) > 10
    assert len(paper["key_columns"]) == 9
    methods = {c["method"]: c for c in data["comparisons"]}
    assert methods["optimal"]["private"] is True
    assert all(c["sigma"] >= methods["optimal"]["sigma"] for c in methods.values())
    # --seed: every release says it is a simulation, NOT private
    assert all(r["secure"] is False for r in [*data["releases"], paper])


def test_demo_tables(demo_runs: tuple[Any, Any]) -> None:
    _, result = demo_runs
    assert result.exit_code == 0, result.stderr
    for text in ("Gaussian noise for (1, 1e-06)-DP", "Private releases on UCI Adult",
                 "complete records", "The paper's histogram", "Noise each calibration needs",
                 "a seeded simulation, NOT private"):
        assert text in result.stdout


def test_progress_bar_draws_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from approxdp.cli import output

    buffer = io.StringIO()
    monkeypatch.setattr(output, "stderr_console",
                        lambda: Console(file=buffer, force_terminal=True, width=80))
    with output.progress("Crunching", total=2) as advance:
        advance(1)
        advance(1)
    assert "Crunching" in buffer.getvalue()
    quiet = io.StringIO()
    monkeypatch.setattr(output, "stderr_console", lambda: Console(file=quiet, width=80))
    with output.progress("Crunching") as advance:
        advance(1)
    assert quiet.getvalue() == ""
