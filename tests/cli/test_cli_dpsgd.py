"""``dpsgd``: every accountant labelled, several σ and δ, schedules, δ at ε, the noise for a
target, the two run forms, and one-line errors for every bad value."""

from __future__ import annotations

from typing import Any

import pytest

import approxdp as dp
from approxdp.accounting import dpsgd_schedule_delta, dpsgd_schedule_epsilon
from approxdp.reports.dpsgd import dpsgd_report

Q = 256 / 60000


def test_every_accountant_with_its_label(run_json: Any) -> None:
    data = run_json("dpsgd", "-q", str(Q), "-T", "14063", "-d", "1e-5", "-s", "1.1")
    assert data["command"] == "dpsgd" and data["mode"] == "epsilon"
    rows = {r["accountant"]: r for r in data["accountants"]}
    assert list(rows) == list(dp.DPSGD_ACCOUNTANTS)
    assert rows["pld"]["kind"] == "upper bound"
    assert rows["gdp-clt"]["kind"] == "approximation"
    lo, hi = rows["pld"]["bracket"]
    assert lo < 2.3817 < hi == rows["pld"]["epsilon"]
    assert rows["rdp"]["epsilon"] > rows["pld"]["epsilon"]
    assert all(r["seconds"] >= 0 for r in rows.values())
    # the schema-1 keys describe the one (σ, δ); "results" holds every pair
    assert data["delta"] == 1e-5 and data["noise_multiplier"] == 1.1
    assert data["results"] == [{"noise_multiplier": 1.1, "delta": 1e-5,
                                "accountants": data["accountants"]}]
    assert data["phases"] == [] and data["deltas"] == [1e-5]


def test_several_sigmas_and_deltas_in_one_call(run_json: Any) -> None:
    data = run_json("dpsgd", "-q", "0.01", "-T", "300", "-s", "1.0", "-s", "2.0",
                    "-d", "1e-5", "-d", "1e-8", "--accountant", "pld")
    pairs = [(r["noise_multiplier"], r["delta"]) for r in data["results"]]
    assert pairs == [(1.0, 1e-5), (1.0, 1e-8), (2.0, 1e-5), (2.0, 1e-8)]
    eps = {p: r["accountants"][0]["epsilon"] for p, r in zip(pairs, data["results"],
                                                                strict=True)}
    for (sigma, delta), value in eps.items():
        assert value == dp.dpsgd_epsilon(noise_multiplier=sigma, sample_rate=0.01, steps=300,
                                         delta=delta).epsilon
    assert eps[(1.0, 1e-8)] > eps[(1.0, 1e-5)] > eps[(2.0, 1e-5)]


def test_a_schedule_of_phases(run_json: Any, run: Any) -> None:
    args = ["--phase", "1.0", "0.01", "400", "--phase", "0.8", "0.02", "100", "-d", "1e-6"]
    data = run_json("dpsgd", *args)
    assert data["phases"] == [
        {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 400},
        {"noise_multiplier": 0.8, "sample_rate": 0.02, "steps": 100},
    ]
    assert data["steps"] == 500 and data["sample_rate"] is None and data["run"] == "2 phases"
    rows = {r["accountant"]: r for r in data["accountants"]}
    assert list(rows) == list(dp.DPSGD_ACCOUNTANTS)
    schedule = [(1.0, 0.01, 400), (0.8, 0.02, 100)]
    assert rows["pld"]["epsilon"] == dpsgd_schedule_epsilon(schedule, delta=1e-6).epsilon
    assert rows["rdp"]["epsilon"] > rows["pld"]["epsilon"]
    table = run("dpsgd", *args)
    assert table.exit_code == 0 and "Schedule" in table.output and "2 phases" in table.output


def test_delta_at_a_given_epsilon(run_json: Any) -> None:
    data = run_json("dpsgd", "-q", "0.01", "-T", "300", "-s", "1.0", "--at-epsilon", "1.5",
                    "--at-epsilon", "3", "--accountant", "pld", "--accountant", "rdp")
    assert data["mode"] == "delta" and data["epsilons"] == [1.5, 3.0]
    first = {r["accountant"]: r for r in data["results"][0]["accountants"]}
    assert first["pld"]["delta"] == dpsgd_schedule_delta([(1.0, 0.01, 300)], epsilon=1.5).delta
    assert first["pld"]["delta"] < first["rdp"]["delta"]
    lo, hi = first["pld"]["bracket"]
    assert lo <= hi == first["pld"]["delta"]
    assert data["results"][1]["accountants"][0]["delta"] < first["pld"]["delta"]


def test_epochs_form_and_noise_for_a_target(run_json: Any) -> None:
    data = run_json("dpsgd", "--batch-size", "256", "--dataset-size", "60000", "--epochs", "60",
                    "-d", "1e-5", "-e", "3")
    assert data["mode"] == "noise-multiplier"
    assert data["steps"] == 56250 // 4 + 1  # ⌈60 · 60000 / 256⌉ = 14063
    assert data["sample_rate"] == pytest.approx(Q)
    sigma = data["noise_multiplier"]
    assert sigma == dp.calibrate_dpsgd(epsilon=3.0, delta=1e-5, sample_rate=Q, steps=14063)
    assert data["run"] == "256/60000 per step, 60 epochs"


def test_several_targets(run_json: Any) -> None:
    data = run_json("dpsgd", "-q", "0.01", "-T", "200", "-e", "1", "-e", "4", "-d", "1e-5",
                    "-d", "1e-7")
    got = {(r["epsilon"], r["delta"]): r["noise_multiplier"] for r in data["results"]}
    assert list(got) == [(1.0, 1e-5), (1.0, 1e-7), (4.0, 1e-5), (4.0, 1e-7)]
    assert got[(1.0, 1e-7)] > got[(1.0, 1e-5)] > got[(4.0, 1e-5)]
    assert got[(4.0, 1e-7)] == dp.calibrate_dpsgd(epsilon=4.0, delta=1e-7, sample_rate=0.01,
                                                  steps=200)


def test_table_says_what_each_number_is(run: Any) -> None:
    result = run("dpsgd", "-q", "0.01", "-T", "100", "-d", "1e-5", "-s", "1.0",
                 "--accountant", "pld", "--accountant", "gdp-clt")
    assert result.exit_code == 0, result.output
    assert "approximation" in result.output and "upper bound" in result.output
    assert "rdp" not in result.output


def test_the_library_report_keeps_its_signature() -> None:
    """The browser UI calls dpsgd_report with one σ (or one target) and one δ."""
    data = dpsgd_report(sample_rate=0.01, steps=50, delta=1e-5, sampling="poisson",
                        noise_multiplier=1.5, epsilon=None, accountants=("pld",))
    assert data["mode"] == "epsilon" and data["accountants"][0]["accountant"] == "pld"
    target = dpsgd_report(sample_rate=0.01, steps=50, delta=1e-5, sampling="poisson",
                          noise_multiplier=None, epsilon=2.0)
    assert target["noise_multiplier"] == dp.calibrate_dpsgd(epsilon=2.0, delta=1e-5,
                                                            sample_rate=0.01, steps=50)


def test_huge_noise_is_a_private_answer_or_a_one_line_error(run: Any) -> None:
    """σ = 1e300 protects everything: every accountant says ε = 0, or the command refuses it in
    one line; never an internal error."""
    result = run("dpsgd", "-q", "0.01", "-T", "10", "-d", "1e-5", "-s", "1e300", "--json")
    assert result.exit_code in (0, 2), result.stderr
    if result.exit_code == 2:
        assert len(result.stderr.strip().splitlines()) == 1
    else:
        import json

        rows = json.loads(result.stdout)["accountants"]
        assert all(r["epsilon"] == 0.0 for r in rows), rows


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-q", "0.01", "-d", "1e-5", "-s", "1"], "--sample-rate and --steps"),
        (["-q", "0.01", "-T", "10", "-d", "1e-5"], "exactly one of"),
        (["-q", "0.01", "-T", "10", "-d", "1e-5", "-s", "1", "-e", "1"], "exactly one of"),
        (["-q", "0.01", "-T", "10", "-d", "1e-5", "-s", "1", "--phase", "1", "0.1", "3"],
         "exactly one of"),
        (["-q", "0.01", "-T", "10", "--epochs", "1", "-d", "1e-5", "-s", "1"], "not both"),
        (["--batch-size", "10", "--epochs", "1", "-d", "1e-5", "-s", "1"], "go together"),
        (["--batch-size", "100", "--dataset-size", "10", "--epochs", "1", "-d", "1e-5", "-s",
          "1"], "--batch-size must be"),
        (["-q", "2", "-T", "10", "-d", "1e-5", "-s", "1"], "'-q' / '--sample-rate'"),
        (["-q", "0.1", "-T", "0", "-d", "1e-5", "-s", "1"], "'-T' / '--steps'"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "-1"], "'-s' / '--noise-multiplier'"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "inf"], "inf is not in the range"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "nan"], "'nan' is not a number"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "1,2"], "'1,2' is not a valid float"),
        (["-q", "0.1", "-T", "10", "-d", "nan", "-s", "1"], "'-d' / '--delta'"),
        (["-q", "0.1", "-T", "10", "-d", "1", "-s", "1"], "'-d' / '--delta'"),
        (["-q", "0.1", "-q", "0.2", "-T", "10", "-d", "1e-5", "-s", "1"],
         "--sample-rate was given 2 times"),
        (["-q", "0.1", "-T", "10", "-T", "20", "-d", "1e-5", "-s", "1"],
         "--steps was given 2 times"),
        (["-q", "0.1", "-T", "10", "-d", "1e-5", "-s", "1", "--sampling", "poisson",
          "--sampling", "without-replacement"], "--sampling was given 2 times"),
        (["-q", "0.1", "-T", "10", "-s", "1"], "give -d"),
        (["-q", "0.1", "-T", "10", "-s", "1", "-d", "1e-5", "--at-epsilon", "1"], "not both"),
        (["-q", "0.1", "-T", "10", "-e", "1"], "give it with -d"),
        (["-q", "0.1", "-T", "10", "-e", "1", "-d", "1e-5", "--at-epsilon", "1"],
         "give it with -d"),
        (["--phase", "1", "0.1", "3", "-q", "0.1", "-d", "1e-5"], "--phase gives the whole run"),
        (["--phase", "1", "0.1", "0", "-d", "1e-5"], "'--phase'"),
        (["--phase", "1", "0.1", "-d", "1e-5"], "'--phase'"),
    ],
)
def test_bad_input_is_one_line_exit_2(run: Any, args: list[str], message: str) -> None:
    result = run("dpsgd", *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
