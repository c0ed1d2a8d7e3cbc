"""End-to-end releases: known answers, noise matching the reported σ, partition selection,
contribution bounding and the Adult demo (input kinds and bad inputs: test_release_inputs.py).

Statistical checks use fixed seeds; with n standardised errors, the bounds |mean| < 5/√n and
|var − 1| < 6√(2/n) fail with probability < 1e-6 each if the noise is as reported.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from approxdp.accounting import PrivacyAccountant
from approxdp.cli.adult_demo import run_adult_demo
from approxdp.data import load_adult
from approxdp.errors import (
    DataError,
    ParameterTypeError,
)
from approxdp.releases.session import PrivateTable
from approxdp.releases.specs import (
    LinearQuery,
)

BIG = (200.0, 0.5)  # budget for statistical tests that spend a lot


def _synthetic(n: int = 20_000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "user": rng.integers(0, n // 10, n),
            "a": rng.integers(0, 40, n),
            "b": rng.choice(["x", "y", "z"], n),
            "v": rng.uniform(-2, 12, n),
        }
    )


def _standardised_ok(z: np.ndarray) -> None:
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n), z.mean()
    assert abs(z.var() - 1) < 6 * math.sqrt(2 / n), z.var()


def test_histogram_over_domain_is_unbiased_with_reported_sigma() -> None:
    data = _synthetic()
    t = PrivateTable(data, budget=BIG, seed=1)
    dom = {"a": list(range(40)), "b": ["x", "y", "z", "w"]}  # 'w' cells are empty
    r = t.histogram(["a", "b"], domain=dom, epsilon=1.0, delta=1e-6)
    assert len(r.keys) == 160 and r.keys[0] == (0, "x")
    truth = data.to_pandas().groupby(["a", "b"]).size().to_dict()
    true = np.array([truth.get(k, 0) for k in r.keys], dtype=float)
    _standardised_ok((r.values - true) / r.std)
    assert r.sensitivity.l2 == 1.0 and r.mechanism == "gaussian"
    cover = np.mean((r.ci_low <= true) & (true <= r.ci_high))
    assert 0.9 < cover <= 1.0


def test_linear_queries_use_l2_sensitivity_and_match_sigma() -> None:
    data = _synthetic()
    qs = [LinearQuery(where={"a": i}) for i in range(40)] + [
        LinearQuery("v", (0, 10), where={"b": ["x", "y"]})
    ]
    t = PrivateTable(data, budget=BIG, seed=2)
    r = t.linear_queries(qs, epsilon=1.0, delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(41))
    df = data.to_pandas()
    true = np.array(
        [(df.a == i).sum() for i in range(40)] + [df.v.clip(0, 10)[df.b.isin(["x", "y"])].sum()]
    )
    z = (r.values - true) / r.std
    _standardised_ok(z[:40])
    assert r.std[40] == pytest.approx(10 * r.std[0])  # sums noised in units of their bound
    # one Gaussian on the 41-vector beats splitting the budget 41 ways
    from approxdp.calibration import calibrate_gaussian

    split = calibrate_gaussian(1.0 / 41, 1e-6 / 41, 1.0)
    assert r.std[0] < split / 3


def test_sum_and_mean_known_answers_over_repeated_releases() -> None:
    data = _synthetic(5000)
    df = data.to_pandas()
    t = PrivateTable(data, budget=BIG, seed=3)
    sums, sstd, means, mci = [], [], [], []
    for _ in range(300):
        s = t.sum("v", (0, 10), epsilon=1.0, delta=1e-6)
        m = t.mean("v", (0, 10), epsilon=1.0, delta=1e-6)
        sums.append(s.value)
        sstd.append(s.std[0])
        means.append(m.value)
        mci.append((m.ci_low[0], m.ci_high[0]))
    true_sum = df.v.clip(0, 10).sum()
    _standardised_ok((np.array(sums) - true_sum) / np.array(sstd))
    true_mean = df.v.clip(0, 10).mean()
    assert abs(np.mean(means) - true_mean) < 0.01
    lo, hi = np.array(mci).T
    assert np.mean((lo <= true_mean) & (true_mean <= hi)) >= 0.95  # conservative interval


def test_grouped_sum_over_domain_and_partition_selection() -> None:
    data = _synthetic()
    df = data.to_pandas()
    # partition selection spends δ no Gaussian dominates: after a first release the ledger (a
    # privacy filter) admits it from a basic share fixed when it was created
    t = PrivateTable(data, accountant=PrivacyAccountant(BIG, basic_share=(1.0, 1e-5)), seed=4)
    r = t.sum("v", (0, 10), by=["b"], domain={"b": ["x", "y", "z"]}, epsilon=1, delta=1e-6)
    true = df.v.clip(0, 10).groupby(df.b).sum()
    np.testing.assert_allclose(r.values, true.loc[["x", "y", "z"]].values, atol=6 * r.std[0])
    h = t.histogram(["a", "b"], epsilon=1.0, delta=1e-6)  # no domain: partition selection
    assert h.threshold is not None and len(h.keys) == 120  # every cell has ~166 rows
    rare = pa.table({"k": ["common"] * 500 + [f"id{i}" for i in range(300)]})
    sel = PrivateTable(rare, budget=BIG, seed=5).histogram("k", epsilon=1.0, delta=1e-6)
    assert sel.keys == [("common",)]  # singletons never clear the threshold at this δ


def test_privacy_unit_bounding_and_report() -> None:
    data = _synthetic()
    t = PrivateTable(
        data, budget=BIG, seed=6, privacy_unit="user", max_partitions=2, max_rows_per_partition=1
    )
    r = t.histogram(["a"], domain={"a": list(range(40))}, epsilon=1.0, delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(2))
    rows = r.diagnostics.rows
    assert rows["used"] <= 2 * 2000 and rows["dropped"] == 20_000 - rows["used"]
    assert "user" in r.explain() and "NOT private" in r.explain()
    assert abs(r.values.sum() - r.diagnostics.rows["used"]) < 8 * r.std[0] * math.sqrt(40)


def test_replace_one_count_is_exact() -> None:
    t = PrivateTable(_synthetic(100), budget=(1.0, 1e-6), neighbouring="replace-one", seed=0)
    r = t.count(epsilon=0.5, delta=1e-7)
    assert r.mechanism == "exact" and r.value == 100 and r.std[0] == 0
    assert t.accountant.history() == ()


def _spent(t: PrivateTable) -> int:
    return len(t.accountant.history())


def test_empty_table_and_bad_sources() -> None:
    empty = pa.table({"v": pa.array([], pa.float64())})
    t = PrivateTable(empty, budget=(1.0, 1e-6))
    with pytest.raises(DataError, match="empty"):
        t.count(epsilon=1, delta=1e-6)
    assert _spent(t) == 0
    with pytest.raises(DataError, match="not found"):
        PrivateTable("/nonexistent/file.parquet", budget=(1.0, 1e-6))
    with pytest.raises(ParameterTypeError, match="data must be"):
        PrivateTable([1, 2, 3], budget=(1.0, 1e-6))
    with pytest.raises(ParameterTypeError, match="budget"):
        PrivateTable(empty)


def test_nan_and_null_are_skipped_by_sum_and_mean() -> None:
    data = pa.table({"v": pa.array([1.0, None, float("nan"), 3.0, float("inf")])})
    t = PrivateTable(data, budget=BIG, seed=0)
    s = t.sum("v", (0, 4), epsilon=50, delta=0.1)
    assert s.value == pytest.approx(8.0, abs=6 * s.std[0])  # 1 + 3 + clamp(inf); NULL/NaN skip
    m = t.mean("v", (0, 4), epsilon=50, delta=0.1)
    assert m.extra["count"][0] == pytest.approx(3, abs=6 * m.std[0] / 4 + 1)
    assert m.ci_low[0] <= 8 / 3 <= m.ci_high[0]
    drop = t.histogram("v", domain={"v": [1.0, 3.0]}, outside_domain="drop", epsilon=50, delta=0.1)
    np.testing.assert_allclose(drop.values, [1, 1], atol=6 * drop.std[0])


def test_adult_paper_histogram_and_demo() -> None:
    demo = run_adult_demo(epsilon=1.0, delta=1e-6, seed=0)
    h = demo.paper_histogram
    assert h.sensitivity.l2 == 1.0 and h.columns[-1] == "income"
    assert 0 < len(h.keys) < 11_300
    count = demo.releases[0]
    assert abs(count.value - 45_222) < 6 * count.std[0]
    mean_age = demo.releases[1]
    true_age = float(np.mean(load_adult()["age"].to_numpy()))
    assert mean_age.ci_low[0] <= true_age <= mean_age.ci_high[0]
    text = str(demo)
    for needle in ("mean age", "paper histogram", "dwork-roth-2014", "optimal", "sex × race"):
        assert needle in text
    verdicts = {c.method: c.private for c in demo.comparisons}
    assert verdicts["optimal"]


def test_secure_release_reports_the_lattice_noise_not_the_float_sigma() -> None:
    """Secure noise is N_Z(0, s²) on gZ after rounding: its scale s·g is a little above σ, and
    the interval must hold the discrete tail plus the rounding (SecureGaussianNoise.half_width)."""
    from scipy import special

    from approxdp.mechanisms import GaussianMechanism
    from approxdp.releases._intervals import noise_spread

    data = _synthetic()
    dom = {"a": list(range(40)), "b": ["x", "y", "z", "w"]}
    secure = PrivateTable(data, budget=BIG).histogram(["a", "b"], domain=dom, epsilon=1.0,
                                                       delta=1e-6)
    mech = GaussianMechanism(1.0, 1e-6, 1.0)
    noise = mech.secure_noise(160)
    assert secure.sigma == mech.sigma  # the calibrated σ, as accounted
    np.testing.assert_allclose(secure.std, noise.sigma, rtol=1e-12)
    assert (secure.std > mech.sigma).all()
    half = (secure.ci_high - secure.ci_low) / 2
    assert (half >= noise.half_width(0.05) * (1 - 1e-12)).all()
    # the simulation (float noise) keeps the exact float interval
    sim = PrivateTable(data, budget=BIG, seed=2).histogram(["a", "b"], domain=dom,
                                                            epsilon=1.0, delta=1e-6)
    z = -float(special.ndtri(0.025))
    np.testing.assert_allclose((sim.ci_high - sim.ci_low) / 2, z * mech.sigma, rtol=1e-12)
    np.testing.assert_allclose(sim.std, mech.sigma, rtol=1e-12)
    # the interval scale covers both levels the mean's box uses, and is 1× σ for float noise
    std, ci = noise_spread(mech.sigma, noise, 0.95)
    zb = -float(special.ndtri(0.0125))
    assert std == noise.sigma and z * ci >= noise.half_width(0.05)
    assert zb * ci >= noise.half_width(0.025)
    assert noise_spread(mech.sigma, None, 0.95) == (mech.sigma, mech.sigma)
