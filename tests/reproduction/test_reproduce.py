"""``approxdp reproduce --quick`` end to end: every file, and the report's numbers are the
library's (the command object is invoked through Click's test runner, as the CLI group will)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from approxdp import NotPrivateWarning, calibrate_gaussian, classical_failure_threshold
from approxdp.cli.figures import reproduce_command
from approxdp.errors import ApproxDPError, InvalidParameterError, ParameterTypeError
from approxdp.experiments import TABLE_I
from approxdp.experiments.table1 import method_label
from approxdp.reproduction import FIGURE_FILES, reproduce

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    out = tmp_path_factory.mktemp("reproduction") / "out"
    result = CliRunner().invoke(reproduce_command, ["--quick", "--out", str(out)])
    return result, out


def test_command_succeeds_with_progress(run: tuple[Result, Path]) -> None:
    result, _ = run
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "reproduce" in result.output and "12/12" in result.output  # the progress bar
    assert f"wrote {len(FIGURE_FILES) + 2} files" in result.output


def test_every_file_is_written(run: tuple[Result, Path]) -> None:
    _, out = run
    for name in FIGURE_FILES:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 2000, name
    for name in ("report.md", "report.html"):
        assert (out / name).stat().st_size > 5000


def test_report_table1_is_the_library_calibration(run: tuple[Result, Path]) -> None:
    _, out = run
    md = (out / "report.md").read_text(encoding="utf-8")
    section = md.split("## Table I recomputed", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(TABLE_I)
    for cells, use in zip(rows, TABLE_I, strict=True):
        paper, method, eps, delta, pub_sigma, sigma, _, _, dp, pub_least, least, _ = cells
        assert (paper, method) == (use.paper, method_label(use.method))
        assert (float(eps), float(delta)) == (use.epsilon, use.delta)
        assert float(pub_sigma) == use.published_sigma and float(pub_least) == use.published_least
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            classical = calibrate_gaussian(use.epsilon, use.delta, method=use.method,
                                           allow_non_private=True)
        assert sigma == f"{classical:.6f}"
        assert least == f"{calibrate_gaussian(use.epsilon, use.delta):.6f}"
        assert dp == "**no**"
    assert "swapped" in section and "naive float" in section


def test_report_thresholds_are_the_library_values(run: tuple[Result, Path]) -> None:
    _, out = run
    md = (out / "report.md").read_text(encoding="utf-8")
    section = md.split("## G(delta)", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| 1e-05 |"))
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    assert cells[1] == f"{classical_failure_threshold(1e-5):.6g}"
    assert cells[2] == "8.43"
    assert cells[4] == f"{classical_failure_threshold(1e-5, 'dwork-2006'):.6g}"


def test_html_has_the_same_content(run: tuple[Result, Path]) -> None:
    _, out = run
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<table>") == len(re.findall(r"^\|---", md, flags=re.M))
    for src in re.findall(r'<img [^>]*src="([^"]+)"', page):
        assert (out / src).exists()
    assert set(re.findall(r'<img [^>]*src="([^"]+)"', page)) == set(FIGURE_FILES)


def test_reproduce_bad_out_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(InvalidParameterError, match="out_dir"):
        reproduce(blocker, quick=True)
    result = CliRunner().invoke(reproduce_command, ["--quick", "--out", str(blocker)])
    assert isinstance(result.exception, ApproxDPError)
    with pytest.raises(ParameterTypeError, match="progress"):
        reproduce(tmp_path, quick=True, progress="bar")  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="quick"):
        reproduce(tmp_path, quick="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="seed"):
        reproduce(tmp_path, quick=True, seed=-1)
    missing = CliRunner().invoke(reproduce_command, ["--quick"])
    assert missing.exit_code == 2 and "--out" in missing.output
