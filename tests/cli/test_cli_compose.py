"""``compose``: every rule is a valid bound, the exact Gaussian row is the library's Lemma 15."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

import approxdp as dp
from approxdp.accounting.composition.optimal import OPTIMAL_MAX_STEPS

RULE_KEYS = {"rule", "epsilon", "delta", "kind", "description", "per_release_delta",
             "ratio_to_best", "filter"}


def test_gaussian_releases_compose_exactly(run_json: Any) -> None:
    data = run_json("compose", "100xgaussian:20", "-d", "1e-5")
    assert set(data) == {"command", "schema_version", "delta", "releases", "count", "rules"}
    assert data["count"] == 100
    assert data["releases"] == [{"kind": "gaussian", "sigma": 20.0, "sensitivity": 1.0,
                                 "count": 100}]
    rows = {r["rule"]: r for r in data["rules"]}
    assert list(rows) == ["exact-gaussian", "optimal", "advanced", "basic"]
    for row in rows.values():
        assert set(row) == RULE_KEYS
        assert row["delta"] <= 1e-5 * (1 + 1e-12)
    exact = rows["exact-gaussian"]
    assert exact["kind"] == "exact"
    assert exact["epsilon"] == dp.compose_gaussian([20.0] * 100).epsilon(1e-5)
    assert "σ* = 2" in exact["description"]  # 100 releases of σ = 20 act as one of σ = 2
    # Every other rule certifies a valid (ε_r, δ_r ≤ δ) guarantee, so it cannot beat the truth.
    for rule in ("optimal", "advanced", "basic"):
        assert rows[rule]["epsilon"] > exact["epsilon"]
        assert rows[rule]["ratio_to_best"] == pytest.approx(
            rows[rule]["epsilon"] / exact["epsilon"])
    assert exact["ratio_to_best"] == 1.0


def test_basic_rule_sums_pure_steps(run_json: Any) -> None:
    data = run_json("compose", "dp:0.5", "dp:0.25:1e-6", "-d", "1e-5", "-r", "basic")
    (row,) = data["rules"]
    assert row["rule"] == "basic"
    assert (row["epsilon"], row["delta"]) == (0.75, 1e-6)


def test_advanced_and_optimal_rules_match_the_library(run_json: Any) -> None:
    data = run_json("compose", "10xdp:0.1", "-d", "1e-5", "-r", "advanced", "-r", "optimal")
    rows = {r["rule"]: r for r in data["rules"]}
    assert rows["advanced"]["epsilon"] == dp.advanced_composition(0.1, 0.0, 10, 1e-5).epsilon
    assert rows["optimal"]["epsilon"] == dp.optimal_composition(0.1, 0.0, 10, 1e-5).epsilon
    assert rows["optimal"]["kind"] == "upper bound"


def test_laplace_release_is_pure_dp(run_json: Any) -> None:
    laplace = run_json("compose", "3xlaplace:10:2", "-d", "1e-5", "-r", "basic")
    pure = run_json("compose", "3xdp:0.2", "-d", "1e-5", "-r", "basic")
    assert laplace["rules"][0]["epsilon"] == pure["rules"][0]["epsilon"] == pytest.approx(0.6)


def test_mixed_releases_use_the_accountant(run_json: Any) -> None:
    data = run_json("compose", "10xgaussian:4", "dp:0.5:1e-7", "-d", "1e-5",
                    "-r", "exact-gaussian")
    (row,) = data["rules"]
    accountant = dp.PrivacyAccountant(budget=(1.0, 1e-5), adaptivity="fixed")  # as declared
    events = [dp.GaussianEvent(sigma=4.0)] * 10 + [dp.EpsilonDeltaEvent(0.5, 1e-7)]
    expected = accountant.plan(events).status_after.spent_epsilon
    assert row["kind"] == "upper bound"
    # the same history (as counts here, one by one there): equal to float rounding
    assert row["epsilon"] == pytest.approx(expected, rel=1e-9)


def test_no_gaussian_means_no_exact_row_and_infeasible_delta_is_infinite(
    run_json: Any, run: Any
) -> None:
    data = run_json("compose", "2xdp:1:1e-3", "-d", "1e-5")
    rows = {r["rule"]: r for r in data["rules"]}
    assert rows["exact-gaussian"]["epsilon"] is None
    for rule in ("optimal", "advanced", "basic"):
        assert rows[rule]["epsilon"] is None  # JSON writes ∞ as null ...
        assert "no ε reaches" in rows[rule]["description"]
    table = run("compose", "2xdp:1:1e-3", "-d", "1e-5")
    assert "∞" in table.stdout  # ... the table shows it


@pytest.mark.parametrize(
    ("token", "fragment"),
    [
        ("gauss:1", "cannot read release 'gauss:1'"),
        ("gaussian:x", "not a number"),
        ("gaussian:1:2:3", "cannot read release"),
        ("0xgaussian:1", "cannot read release"),
        ("gaussian:-1", "sigma"),
        ("dp:1:1.5", "delta"),
    ],
)
def test_bad_release_tokens(run: Any, one_line_error: Any, token: str, fragment: str) -> None:
    one_line_error(run("compose", token, "-d", "1e-5"), 2, fragment)


def test_repeated_releases_cost_nothing_per_repeat(run_json: Any) -> None:
    """10⁹ Gaussian releases: exact, advanced and basic in O(1) (it hung before, and 10⁶ took
    12 s); optimal (O(k)) says it was not computed above its documented limit."""
    start = time.perf_counter()
    data = run_json("compose", "1000000000xgaussian:1", "-d", "1e-5")
    mixed = run_json("compose", "1000000000xgaussian:1000", "1000000000xdp:0.0001",
                     "-d", "1e-5")
    assert time.perf_counter() - start < 10.0
    rows = {r["rule"]: r for r in data["rules"]}
    exact = dp.compose_gaussian(1.0, counts=10**9)
    assert rows["exact-gaussian"]["epsilon"] == exact.epsilon(1e-5)
    assert rows["exact-gaussian"]["kind"] == "exact"
    assert rows["optimal"]["epsilon"] is None and rows["optimal"]["kind"] == "n/a"
    assert f"{OPTIMAL_MAX_STEPS:,}" in rows["optimal"]["description"]
    for rule in ("advanced", "basic"):
        assert rows["exact-gaussian"]["epsilon"] < rows[rule]["epsilon"] < math.inf
    assert rows["basic"]["delta"] <= 1e-5
    mixed_rows = {r["rule"]: r for r in mixed["rules"]}
    assert 0 < mixed_rows["exact-gaussian"]["epsilon"] < mixed_rows["basic"]["epsilon"]
    assert "optimal is limited" in mixed_rows["exact-gaussian"]["description"]


def test_repeated_counts_give_the_same_answer_as_listing_them(run_json: Any) -> None:
    short = run_json("compose", "3xgaussian:4", "2xdp:0.1:1e-8", "-d", "1e-5")
    long = run_json("compose", *["gaussian:4"] * 3, *["dp:0.1:1e-8"] * 2, "-d", "1e-5")
    for a, b in zip(short["rules"], long["rules"], strict=True):
        assert a["epsilon"] == pytest.approx(b["epsilon"], rel=1e-12)


def test_large_optimal_compositions_search_the_grid(run_json: Any) -> None:
    """Above 10⁴ steps the optimal rule searches the δ₀ grid in a few points; every point it
    reports is a valid bound, at least the exact answer."""
    data = run_json("compose", "100000xgaussian:30", "-d", "1e-5")
    rows = {r["rule"]: r for r in data["rules"]}
    assert rows["exact-gaussian"]["epsilon"] < rows["optimal"]["epsilon"]
    assert rows["optimal"]["epsilon"] < rows["advanced"]["epsilon"]
