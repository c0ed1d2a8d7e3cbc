"""Releases over large declared domains: noised where the data lives (releases/dense.py).

The threshold is lowered (``large_domain_cells``) so that small grids take the large-domain
path; statistical checks use fixed seeds. Their false-failure rates: the mean/variance bounds
of ``_standardised_ok`` are 5 and 6 standard errors (below 1e-6 each); the secure-noise test
draws from the OS and fails with probability below 1e-6.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivacyAccountant
from approxdp.engines import CellMapRequest, CellMapResult, Engine
from approxdp.engines.duckdb import DuckDBEngine
from approxdp.errors import BudgetExceededError, DataError
from approxdp.releases.dense import CellNoise
from approxdp.releases.session import PrivateTable

A_VALUES = list(range(60))
B_VALUES = ["x", "y", "z", "w", None]  # 'w' and None: empty cells
DOMAIN = {"a": A_VALUES, "b": B_VALUES}


def _data(n: int = 6000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "user": rng.integers(0, n // 5, n),
        "a": rng.integers(0, 60, n),
        "b": rng.choice(["x", "y", "z"], n),
        "v": rng.uniform(-2, 12, n),
    })


def _truth(data: pa.Table) -> dict[tuple[Any, Any], int]:
    out: dict[tuple[Any, Any], int] = {}
    for a, b in zip(data["a"].to_pylist(), data["b"].to_pylist(), strict=True):
        out[(a, b)] = out.get((a, b), 0) + 1
    return out


def _standardised_ok(z: np.ndarray) -> None:
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n), z.mean()
    assert abs(z.var() - 1) < 6 * math.sqrt(2 / n), z.var()


class _Spy:
    """An engine wrapper that records calls (to prove when map_cells runs)."""

    def __init__(self, inner: Engine) -> None:
        self.inner, self.name, self.calls = inner, inner.name, []  # type: list[str]

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.inner, name)


def test_large_histogram_is_unbiased_with_reported_sigma_seeded() -> None:
    data = _data()
    t = PrivateTable(data, budget=(50.0, 0.5), seed=3, large_domain_cells=100)
    r = t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert r.table is not None and r.n_cells == 300 and r.values.size == 0
    cells = r.to_arrow().to_pylist()
    assert len(cells) == 300 and {(c["a"], c["b"]) for c in cells} == {
        (a, b) for a in A_VALUES for b in B_VALUES
    }
    truth = _truth(data)
    z = np.array([(c["value"] - truth.get((c["a"], c["b"]), 0)) / c["std"] for c in cells])
    _standardised_ok(z)
    assert all(c["std"] == pytest.approx(r.sigma) for c in cells)
    assert all(c["ci_low"] < c["value"] < c["ci_high"] for c in cells)
    assert r.diagnostics.rows == {"read": 6000, "used": 6000, "dropped": 0}
    assert "seeded simulation" in r.explain() and "300 value(s)" in r.explain()
    assert len(t.accountant.history()) == 1
    with pytest.raises(ValueError, match="to_arrow"):
        r.as_dict()


def test_large_histogram_secure_noise_on_the_lattice() -> None:
    data = _data()
    t = PrivateTable(data, budget=(50.0, 0.5), large_domain_cells=100)
    r = t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert r.mechanism == "gaussian" and "seeded" not in r.explain()
    truth = _truth(data)
    cells = r.to_arrow().to_pylist()
    noise = np.array([c["value"] - truth.get((c["a"], c["b"]), 0) for c in cells])
    _standardised_ok(noise / r.sigma)
    # the secure release lands on the lattice gZ of the driver's calibration for 300 cells
    from approxdp.mechanisms import GaussianMechanism

    mech = GaussianMechanism(1.0, 1e-6, r.effective_sensitivity)
    g = mech.secure_noise(300).lattice.g
    np.testing.assert_array_equal(np.mod(noise, g), 0.0)


def test_large_mean_and_sum_by_cell(tmp_path: Path) -> None:
    data = _data()
    t = PrivateTable(data, budget=(500.0, 0.5), seed=5, large_domain_cells=100,
                     output_dir=str(tmp_path))
    m, s = t.release(
        [
            _mean_q(),
            _sum_q(),
        ],
        epsilon=50.0,
        delta=1e-6,
    )
    assert m.table is not None and m.table.path is not None
    assert Path(m.table.path).parent == tmp_path
    mean_cells = m.to_arrow()
    assert set(mean_cells.column_names) == {"a", "b", "value", "std", "ci_low", "ci_high",
                                            "sum_centred", "count"}
    vals = np.asarray(mean_cells["value"])
    assert np.all((vals >= 0) & (vals <= 10))
    sum_cells = {(c["a"], c["b"]): c["value"] for c in s.to_arrow().to_pylist()}
    clamped = np.clip(np.asarray(data["v"]), 0, 10)
    want: dict[tuple[Any, Any], float] = {}
    for a, b, v in zip(data["a"].to_pylist(), data["b"].to_pylist(), clamped, strict=True):
        want[(a, b)] = want.get((a, b), 0.0) + float(v)
    z = np.array([(sum_cells[k] - want.get(k, 0.0)) / (s.sigma * 10) for k in sum_cells])
    _standardised_ok(z)


def _mean_q() -> Any:
    from approxdp.releases.specs import Mean

    return Mean("v", (0, 10), ("a", "b"), DOMAIN)


def _sum_q() -> Any:
    from approxdp.releases.specs import Sum

    return Sum("v", (0, 10), ("a", "b"), DOMAIN)


def test_refused_spend_draws_no_noise() -> None:
    spy = _Spy(DuckDBEngine())
    t = PrivateTable(_data(), budget=(0.5, 1e-7), engine=spy, large_domain_cells=100)  # type: ignore[arg-type]
    with pytest.raises(BudgetExceededError):
        t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert "map_cells" not in spy.calls
    assert t.accountant.history() == ()


def test_data_outside_a_large_domain_raises_before_spending() -> None:
    t = PrivateTable(_data(), budget=(5.0, 1e-5), large_domain_cells=100)
    dom = {"a": A_VALUES[:50], "b": B_VALUES}
    with pytest.raises(DataError, match="outside the declared domain"):
        t.histogram(["a", "b"], domain=dom, epsilon=1.0, delta=1e-6)
    assert t.accountant.history() == ()
    r = t.histogram(["a", "b"], domain=dom, outside_domain="drop", epsilon=1.0, delta=1e-6)
    assert r.n_cells == 250 and r.diagnostics.rows["dropped"] > 0


def test_bounded_large_histogram_reports_rows() -> None:
    data = _data()
    t = PrivateTable(data, budget=(5.0, 1e-5), seed=2, large_domain_cells=100,
                     privacy_unit="user", max_partitions=2, max_rows_per_partition=1)
    r = t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert r.sensitivity.l2 == pytest.approx(math.sqrt(2))
    assert 0 < r.diagnostics.rows["used"] < 6000
    assert r.to_arrow().num_rows == 300


def test_cell_noise_is_a_function_of_seed_and_cell_only() -> None:
    noise = CellNoise(("m0",), (1.0,), 2.0, None, 17, 1.96, 0.95)
    cells = np.arange(10_000, dtype=np.int64)
    full = noise(pa.RecordBatch.from_arrays([pa.array(cells), pa.array(np.zeros(10_000))],
                                            names=["__cell", "m0"]))
    perm = np.random.default_rng(0).permutation(10_000)[:3000]
    part = noise(pa.RecordBatch.from_arrays([pa.array(cells[perm]), pa.array(np.zeros(3000))],
                                            names=["__cell", "m0"]))
    np.testing.assert_array_equal(np.asarray(part["value"]), np.asarray(full["value"])[perm])
    assert noise.outputs == ("value", "std", "ci_low", "ci_high")


def test_map_cells_result_type() -> None:
    e = DuckDBEngine()
    t = e.load(_data(100))
    from approxdp.engines import AggregateRequest, Aggregation

    noise = CellNoise(("n",), (1.0,), 0.0, None, 1, 1.96, 0.95)
    res = e.map_cells(t, CellMapRequest(
        AggregateRequest(("b",), (Aggregation("n", "count"),)), (("b", ("x", "y", "z")),),
        noise, noise.outputs,
    ))
    assert isinstance(res, CellMapResult) and res.rows_used == 100
    assert sum(res.to_arrow()["value"].to_pylist()) == 100  # σ = 0: exact


def _agg_b() -> Any:
    from approxdp.engines import AggregateRequest, Aggregation

    return AggregateRequest(("b",), (Aggregation("n", "count"),))


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"grid": (("a", (1, 2)),)}, "InvalidParameterError", "by columns"),
        ({"grid": (("b", ()),)}, "InvalidParameterError", "at least one value"),
        ({"outputs": ("b",)}, "InvalidParameterError", "outputs"),
        ({"outputs": ()}, "InvalidParameterError", "outputs"),
        ({"function": 3}, "ParameterTypeError", "callable"),
    ],
)
def test_bad_cell_map_requests(kwargs: dict[str, Any], error: str, needle: str) -> None:
    import approxdp.errors as errors

    args: dict[str, Any] = {"aggregate": _agg_b(), "grid": (("b", ("x",)),),
                            "function": CellNoise(("n",), (1.0,), 0.0, None, 1, 1.96, 0.95),
                            "outputs": ("value",)}
    args.update(kwargs)
    with pytest.raises(getattr(errors, error), match=needle):
        CellMapRequest(**args)


def test_a_cell_function_must_return_its_outputs() -> None:
    from approxdp.errors import InvalidParameterError

    e = DuckDBEngine()
    noise = CellNoise(("n",), (1.0,), 0.0, None, 1, 1.96, 0.95)
    req = CellMapRequest(_agg_b(), (("b", ("x", "y")),), noise, ("value", "other"))
    with pytest.raises(InvalidParameterError, match="cell function returned"):
        e.map_cells(e.load(_data(50)), req)


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "1e6"])
def test_large_domain_cells_is_validated(bad: Any) -> None:
    from approxdp.errors import InvalidParameterError, ParameterTypeError

    with pytest.raises((InvalidParameterError, ParameterTypeError), match="large_domain_cells"):
        PrivateTable(_data(10), budget=(1.0, 1e-6), large_domain_cells=bad)


def test_a_large_domain_aggregates_before_the_spend() -> None:
    """The engine's calls and the spend in order: the aggregation (aggregate_cells) comes
    before the spend, and after it only map_cells (the noise) runs, on that aggregate."""
    spy = _Spy(DuckDBEngine())
    acc = PrivacyAccountant((5.0, 1e-5))
    spend = acc.spend

    def recorded_spend(*args: Any, **kwargs: Any) -> Any:
        spy.calls.append("spend")
        return spend(*args, **kwargs)

    acc.spend = recorded_spend  # type: ignore[method-assign]
    t = PrivateTable(_data(), accountant=acc, engine=spy,  # type: ignore[arg-type]
                     large_domain_cells=100)
    spy.calls.clear()
    r = t.histogram(["a", "b"], domain=DOMAIN, epsilon=1.0, delta=1e-6)
    assert r.n_cells == 300
    spent = spy.calls.index("spend")
    assert "aggregate_cells" in spy.calls[:spent]
    assert spy.calls[spent + 1:] == ["map_cells"]
