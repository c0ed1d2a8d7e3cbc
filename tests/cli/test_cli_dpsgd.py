"""``dpsgd``: every accountant labelled, the noise multiplier for a target, the two run forms."""

from __future__ import annotations

from typing import Any

import pytest

import approxdp as dp


def test_every_accountant_with_its_label(run_json: Any) -> None:
    data = run_json("dpsgd", "-q", str(256 / 60000), "-T", "14063", "-d", "1e-5", "-s", "1.1")
    assert data["command"] == "dpsgd" and data["mode"] == "epsilon"
    rows = {r["accountant"]: r for r in data["accountants"]}
    assert list(rows) == list(dp.DPSGD_ACCOUNTANTS)
    assert rows["pld"]["kind"] == "upper bound"
    assert rows["gdp-clt"]["kind"] == "approximation"
    lo, hi = rows["pld"]["bracket"]
    assert lo < 2.3817 < hi == rows["pld"]["epsilon"]
    assert rows["rdp"]["epsilon"] > rows["pld"]["epsilon"]
    assert all(r["seconds"] >= 0 for r in rows.values())


def test_epochs_form_and_noise_for_a_target(run_json: Any) -> None:
    data = run_json("dpsgd", "--batch-size", "256", "--dataset-size", "60000", "--epochs", "60",
                    "-d", "1e-5", "-e", "3")
    assert data["mode"] == "noise-multiplier"
    assert data["steps"] == 56250 // 4 + 1  # ⌈60 · 60000 / 256⌉ = 14063
    assert data["sample_rate"] == pytest.approx(256 / 60000)
    sigma = data["noise_multiplier"]
    assert sigma == dp.calibrate_dpsgd(epsilon=3.0, delta=1e-5, sample_rate=256 / 60000,
                                       steps=14063)
    assert data["run"] == "256/60000 per step, 60 epochs"


def test_table_says_what_each_number_is(run: Any) -> None:
    result = run("dpsgd", "-q", "0.01", "-T", "100", "-d", "1e-5", "-s", "1.0",
                 "--accountant", "pld", "--accountant", "gdp-clt")
    assert result.exit_code == 0, result.output
    assert "approximation" in result.output and "upper bound" in result.output
    assert "rdp" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-q", "0.01", "-d", "1e-5", "-s", "1"], "--sample-rate and --steps"),
        (["-q", "0.01", "-T", "10", "-d", "1e-5"], "exactly one of"),
        (["-q", "0.01", "-T", "10", "-d", "1e-5", "-s", "1", "-e", "1"], "exactly one of"),
        (["-q", "0.01", "-T", "10", "--epochs", "1", "-d", "1e-5", "-s", "1"], "not both"),
        (["--batch-size", "10", "--epochs", "1", "-d", "1e-5", "-s", "1"], "go together"),
        (["--batch-size", "100", "--dataset-size", "10", "--epochs", "1", "-d", "1e-5", "-s",
          "1"], "--batch-size must be"),
        (["-q", "2", "-T", "10", "-d", "1e-5", "-s", "1"], "sample_rate must be in"),
        (["-q", "0.1", "-T", "0", "-d", "1e-5", "-s", "1"], "steps must be"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "-1"], "noise_multiplier must be"),
    ],
)
def test_bad_input_is_one_line_exit_2(run: Any, args: list[str], message: str) -> None:
    result = run("dpsgd", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
