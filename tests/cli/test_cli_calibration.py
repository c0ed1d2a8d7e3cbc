"""``calibrate``, ``profile`` and ``epsilon``: tables, JSON shapes, agreement with the library."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import approxdp as dp

CALIBRATE_KEYS = {
    "command", "schema_version", "epsilon", "delta", "sensitivity", "notion",
    "reference_method", "reference_sigma", "methods",
}
METHOD_KEYS = {
    "method", "target_notion", "closed_form", "source", "defined", "reason", "sigma",
    "ratio_to_optimal", "true_delta", "log_true_delta", "private", "fails_above_epsilon",
}


def test_calibrate_table_lists_every_method_and_marks_failures(run: Any) -> None:
    result = run("calibrate", "-e", "10", "-d", "1e-5")
    assert result.exit_code == 0, result.stderr
    for name in dp.CALIBRATION_METHODS:
        assert name in result.stdout
    assert "NO" in result.stdout  # the classical formulas are not (10, 1e-5)-DP
    assert "fails DP above ε = 8.42" in result.stdout
    assert result.stderr == ""


def test_calibrate_json_shape_and_values(run_json: Any) -> None:
    data = run_json("calibrate", "-e", "1", "-d", "1e-5", "-s", "2")
    assert set(data) == CALIBRATE_KEYS
    assert data["command"] == "calibrate" and data["schema_version"] == 2
    assert data["reference_method"] == "optimal"
    assert data["reference_sigma"] == dp.calibrate_gaussian(1.0, 1e-5, 2.0)
    assert [row["method"] for row in data["methods"]] == list(dp.CALIBRATION_METHODS)
    for row in data["methods"]:
        assert set(row) == METHOD_KEYS
        assert row["defined"]
        assert row["sigma"] == dp.calibrate_gaussian(1.0, 1e-5, 2.0, method=row["method"])
        assert row["true_delta"] == pytest.approx(dp.gaussian_delta(1.0, row["sigma"], 2.0),
                                                  rel=1e-9)
        assert row["private"] is True  # every method is private at ε = 1


def test_calibrate_verdict_is_exactly_sigma_versus_the_optimum(run_json: Any) -> None:
    # δ(ε; σ) falls as σ grows, so a σ is (ε, δ)-DP iff it is at least the optimal σ.
    data = run_json("calibrate", "-e", "10", "-d", "1e-5")
    verdicts = {row["method"]: row["private"] for row in data["methods"]}
    assert verdicts["dwork-roth-2014"] is False and verdicts["dwork-2006"] is False
    assert verdicts["optimal"] is True
    for row in data["methods"]:
        if abs(row["ratio_to_optimal"] - 1) > 1e-9:
            assert row["private"] == (row["ratio_to_optimal"] > 1), row
    dr = next(r for r in data["methods"] if r["method"] == "dwork-roth-2014")
    assert dr["fails_above_epsilon"] == pytest.approx(dp.classical_failure_threshold(1e-5))
    assert dr["true_delta"] > 1e-5


def test_calibrate_method_filter_and_pdp_notion(run_json: Any) -> None:
    data = run_json("calibrate", "-e", "10", "-d", "1e-5", "--notion", "pdp",
                    "-m", "optimal", "-m", "zhao-m3")
    assert data["reference_method"] == "pdp-optimal"
    assert data["reference_sigma"] == dp.calibrate_gaussian(10, 1e-5, method="pdp-optimal")
    rows = {r["method"]: r for r in data["methods"]}
    assert list(rows) == ["optimal", "zhao-m3"]
    assert rows["optimal"]["private"] is False  # the DP optimum is not (10, 1e-5)-pDP
    assert rows["zhao-m3"]["private"] is True  # Mechanism 3 targets pDP (Zhao et al. Thm 8)
    assert rows["zhao-m3"]["true_delta"] == pytest.approx(
        dp.gaussian_pdp_delta(10, rows["zhao-m3"]["sigma"]), rel=1e-9)


def test_calibrate_marks_methods_undefined_outside_their_domain(run_json: Any) -> None:
    data = run_json("calibrate", "-e", "1", "-d", "0.6")
    m2 = next(r for r in data["methods"] if r["method"] == "zhao-m2")
    assert m2["defined"] is False and m2["sigma"] is None and "0.5" in m2["reason"]
    zero = run_json("calibrate", "-e", "0", "-d", "1e-5")
    defined = [r["method"] for r in zero["methods"] if r["defined"]]
    assert defined == ["optimal"]  # ε = 0 only has the exact optimum (Zhao et al. Thm 3)


def test_calibrate_zero_sensitivity_needs_no_noise(run_json: Any) -> None:
    data = run_json("calibrate", "-e", "1", "-d", "1e-5", "-s", "0", "-m", "optimal")
    row = data["methods"][0]
    assert row["sigma"] == 0.0 and row["private"] is True and row["true_delta"] == 0.0


def test_profile_matches_the_exact_profile(run_json: Any) -> None:
    data = run_json("profile", "--sigma", "4", "--points", "6")
    assert set(data) == {"command", "schema_version", "sigma", "sensitivity", "notion", "points"}
    points = data["points"]
    assert len(points) == 6 and points[0]["epsilon"] == 0.0
    for p in points:
        assert set(p) == {"epsilon", "delta", "log_delta"}
        assert p["delta"] == pytest.approx(dp.gaussian_delta(p["epsilon"], 4.0), rel=1e-12)
    # The default grid runs to where δ(ε) has fallen to 1e-10.
    assert points[-1]["delta"] <= 1e-10
    assert points[-1]["delta"] == pytest.approx(1e-10, rel=1e-6)


def test_profile_keeps_digits_below_float_underflow(run_json: Any) -> None:
    data = run_json("profile", "--sigma", "0.05", "-e", "1000", "--notion", "pdp")
    (point,) = data["points"]
    assert point["delta"] == 0.0  # exp underflows ...
    assert point["log_delta"] == pytest.approx(
        dp.gaussian_log_pdp_delta(1000.0, 0.05), rel=1e-12)  # ... the log does not
    assert point["log_delta"] < -700


def test_profile_table(run: Any) -> None:
    result = run("profile", "--sigma", "2", "-e", "0.5", "-e", "1")
    assert result.exit_code == 0
    assert "Privacy profile of Gaussian noise σ = 2" in result.stdout
    assert f"{dp.gaussian_delta(1.0, 2.0):.6g}" in result.stdout


def test_epsilon_inverts_the_profile(run_json: Any) -> None:
    data = run_json("epsilon", "--sigma", "4", "-d", "1e-5", "-d", "1e-8")
    assert [r["delta"] for r in data["results"]] == [1e-5, 1e-8]
    for r in data["results"]:
        assert r["epsilon"] == dp.gaussian_epsilon(4.0, r["delta"])
        assert dp.gaussian_delta(r["epsilon"], 4.0) <= r["delta"]  # private side
    pdp = run_json("epsilon", "--sigma", "4", "-d", "1e-5", "--notion", "pdp")
    assert pdp["results"][0]["epsilon"] == dp.gaussian_epsilon(4.0, 1e-5, notion="pdp")


def test_epsilon_table(run: Any) -> None:
    result = run("epsilon", "--sigma", "4", "-d", "1e-5")
    assert result.exit_code == 0
    assert f"{dp.gaussian_epsilon(4.0, 1e-5):.8g}" in result.stdout


@pytest.mark.parametrize("sigma", [1e-9, 0.1, 0.02])
def test_profile_default_grid_is_informative_for_small_sigma(run_json: Any, run: Any,
                                                             sigma: float) -> None:
    """σ = 1e-9 printed δ = 1 on every row but the last: the grid now runs from where δ falls
    to 1/2 to where it falls to 1e-10, and the table tells its rows apart."""
    points = run_json("profile", "--sigma", str(sigma))["points"]
    deltas = [p["delta"] for p in points]
    assert deltas[0] == pytest.approx(0.5, rel=1e-6)
    assert deltas[-1] == pytest.approx(1e-10, rel=1e-6)
    assert all(a > b for a, b in itertools.pairwise(deltas))  # falls on every row
    assert sum(1e-9 < d < 0.4 for d in deltas) >= 5
    for p in points:
        assert p["log_delta"] == pytest.approx(dp.gaussian_log_delta(p["epsilon"], sigma),
                                               rel=1e-9, abs=1e-9)
    table = run("profile", "--sigma", str(sigma)).stdout
    shown = [line.split("│")[1].strip() for line in table.splitlines() if line.count("│") == 4]
    assert len(shown) == len(points) == len(set(shown))  # every ε printed differently
    assert "below the first row" in table


def test_profile_points_have_an_upper_limit(run: Any, one_line_error: Any) -> None:
    one_line_error(run("profile", "--sigma", "1", "--points", "100000000"), 2,
                   "--points must be in [2, 10000]")
    one_line_error(run("profile", "--sigma", "1", "--points", "1"), 2, "--points")
