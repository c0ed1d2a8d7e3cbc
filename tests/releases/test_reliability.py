"""Releases a new user can trust (issue 15): seeded output is marked non-private wherever it can
be seen; every failure happens before the spend, so a failed release leaves the ledger as it
was; bounds whose noise would overflow are refused; value columns that are not numeric are
named with examples and a way out; a mean's empty cells are flagged."""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import approxdp
from approxdp import PrivateTable, is_secure
from approxdp.accounting import PrivacyAccountant
from approxdp.errors import DataError, InvalidParameterError, NotPrivateError
from approxdp.mechanisms import GaussianMechanism, SimulatedArray, SimulatedFloat

noise_module = importlib.import_module("approxdp.releases.noise")

BIG = (1e300, 0.5)


def _data(n: int = 2000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "user": rng.integers(0, n // 4, n),
        "g": rng.choice(["a", "b", "c"], n),
        "amount": np.round(rng.gamma(2.0, 50.0, n), 2),
    })


# -- 1. seeded output is marked --------------------------------------------------------------
def _assert_marked(r: approxdp.ReleaseResult) -> None:
    assert r.secure is False
    assert isinstance(r.values, SimulatedArray) and not is_secure(r.values)
    for arr in (r.std, r.ci_low, r.ci_high):
        assert not is_secure(arr)
    assert all(isinstance(v, SimulatedFloat) for v in r.as_dict().values())
    assert any("NOT private" in n for n in r.notes)
    assert r.explain().startswith("WARNING: seeded simulation - NOT private")
    assert "NOT private" in str(r)
    assert r.to_arrow().schema.metadata[b"approxdp.secure"] == b"false"


def test_seeded_releases_are_marked_everywhere() -> None:
    # a basic share for the partition selection of the last release (its δ)
    acc = PrivacyAccountant(budget=(5.0, 1e-5), basic_share=(0.0, 1e-6))
    t = PrivateTable(_data(), accountant=acc, seed=3)
    count = t.count(epsilon=0.5, delta=1e-7)
    _assert_marked(count)
    assert not is_secure(count.value) and isinstance(count.value, SimulatedFloat)
    _assert_marked(t.mean("amount", (0, 500), epsilon=0.5, delta=1e-7))
    _assert_marked(t.histogram("g", domain={"g": ["a", "b", "c"]}, epsilon=0.5, delta=1e-7))
    _assert_marked(t.sum("amount", (0, 500), by=["g"], epsilon=0.5, delta=1e-7))  # selection


def test_secure_releases_are_not_marked() -> None:
    t = PrivateTable(_data(), budget=(5.0, 1e-5))
    r = t.count(epsilon=0.5, delta=1e-7)
    assert r.secure is True and is_secure(r.value) and is_secure(r.values)
    assert not any("NOT private" in n for n in r.notes)
    assert "WARNING" not in r.explain()
    assert r.to_arrow().schema.metadata[b"approxdp.secure"] == b"true"


def test_seeded_large_domain_release_is_marked_and_so_is_its_file(tmp_path: Path) -> None:
    t = PrivateTable(_data(), budget=(5.0, 1e-5), seed=3, large_domain_cells=2,
                     output_dir=str(tmp_path))
    r = t.histogram("g", domain={"g": ["a", "b", "c"]}, epsilon=0.5, delta=1e-7)
    assert r.table is not None and r.secure is False
    assert r.table.path is not None and r.table.path.endswith("-seeded-NOT-PRIVATE.parquet")
    assert any("NOT private" in n for n in r.notes)
    assert r.to_arrow().schema.metadata[b"approxdp.secure"] == b"false"


# -- 2, 3. a failed release spends nothing ---------------------------------------------------
Call = Callable[[PrivateTable], Any]


def _ledger_table(tmp_path: Path, data: Any = None, **kwargs: Any) -> PrivateTable:
    acc = PrivacyAccountant(BIG, ledger=tmp_path / "ledger.sqlite")
    return PrivateTable(_data() if data is None else data, accountant=acc, **kwargs)


FAILURES: list[tuple[str, Call, type[Exception], str]] = [
    ("mean with bounds 0..1e308 (noise overflows)",
     lambda t: t.mean("amount", (0, 1e308), epsilon=0.5, delta=1e-7),
     InvalidParameterError, "overflow"),
    ("sum with bounds ±1e308, replace-one",
     lambda t: t.sum("amount", (-1e308, 1e308), epsilon=0.5, delta=1e-7),
     InvalidParameterError, "overflow"),
    ("epsilon=1e300 (the secure lattice has no certificate)",
     lambda t: t.count(epsilon=1e300, delta=1e-6), NotPrivateError, "smaller epsilon"),
    ("epsilon=5000", lambda t: t.count(epsilon=5000, delta=1e-6), NotPrivateError,
     "nothing was spent"),
    ("text value column", lambda t: t.sum("g", (0, 1), epsilon=0.5, delta=1e-7), DataError,
     r"column 'g' must be numeric, but it holds text"),
    ("data outside the domain",
     lambda t: t.histogram("g", domain={"g": ["a"]}, epsilon=0.5, delta=1e-7), DataError,
     "outside the declared domain"),
    ("missing column", lambda t: t.mean("amt", (0, 1), epsilon=0.5, delta=1e-7), DataError,
     "did you mean 'amount'"),
]


@pytest.mark.parametrize(("what", "call", "error", "needle"), FAILURES,
                         ids=[f[0] for f in FAILURES])
def test_failures_after_planning_leave_the_ledger_unchanged(
    tmp_path: Path, what: str, call: Call, error: type[Exception], needle: str
) -> None:
    t = _ledger_table(tmp_path)
    t.count(epsilon=0.1, delta=1e-8)
    before = (t.accountant.history(), t.accountant.remaining())
    with pytest.raises(error, match=needle):
        call(t)
    assert (t.accountant.history(), t.accountant.remaining()) == before


def test_the_seeded_path_records_a_finite_cost_at_huge_epsilon(tmp_path: Path) -> None:
    """ε = 1e300 with a seed (no lattice): the spend is finite and the status sensible (the
    ledger showed spent ε = ∞, remaining −∞)."""
    t = _ledger_table(tmp_path, seed=1, allow_seeded_ledger=True)
    t.count(epsilon=1e300, delta=1e-6)
    assert [r.seeded for r in t.accountant.history()] == [True]  # type: ignore[attr-defined]
    status = t.accountant.remaining()
    assert 0 < status.spent_epsilon <= 1e300 and status.remaining_epsilon >= 0
    assert math.isfinite(status.spent_epsilon)


def test_a_sum_that_overflows_is_refused_before_the_spend(tmp_path: Path) -> None:
    """1.1·10⁶ rows at 1.7e302: the noise fits, the clamped sum (1.9e308) does not."""
    data = pa.table({"x": np.full(1_100_000, 1.7e302)})
    t = _ledger_table(tmp_path, data)
    with pytest.raises(DataError, match=r"sum of 'x' clamped to \[0.0, 1.7e\+302\] overflows"):
        t.sum("x", (0, 1.7e302), epsilon=20, delta=1e-6)
    assert t.accountant.history() == ()


@pytest.mark.parametrize("large", [False, True])
def test_values_beyond_the_secure_lattice_are_refused_before_the_spend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """The lattice index limit (2^52) lowered to 8: a count of 2000 no longer fits. The check
    runs before the spend (it ran inside the noise, after it)."""
    monkeypatch.setattr(noise_module, "MAX_INDEX", 8.0)
    t = _ledger_table(tmp_path, large_domain_cells=2 if large else 10**6)
    with pytest.raises(DataError, match="too large for the secure lattice"):
        t.histogram("g", domain={"g": ["a", "b", "c"]}, epsilon=0.5, delta=1e-7)
    assert t.accountant.history() == ()


@pytest.mark.parametrize(
    ("target", "calls"),
    [
        ("compare_methods", ("count", "mean", "large")),
        ("secure_noise", ("count", "mean", "large")),
        ("mechanism", ("count", "mean", "large")),
        ("aggregate", ("count", "mean")),
        ("aggregate_cells", ("large",)),  # a large domain aggregates before the spend too
        ("count_rows", ("large",)),  # small releases count their rows in the aggregation
        ("count_outside", ("large",)),
    ],
)
def test_every_step_before_the_noise_fails_without_spending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, calls: tuple[str, ...]
) -> None:
    """Each step between the plan and the noise made to fail: nothing is recorded."""

    class InjectedError(RuntimeError):
        pass

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise InjectedError(target)

    t = _ledger_table(tmp_path, large_domain_cells=2)
    if target == "compare_methods":
        monkeypatch.setattr(noise_module, "compare_methods", boom)
    elif target == "secure_noise":
        monkeypatch.setattr(GaussianMechanism, "secure_noise", boom)
    elif target == "mechanism":  # built from the allocated sigma
        monkeypatch.setattr(GaussianMechanism, "from_sigma", boom)
    else:
        monkeypatch.setattr(t.engine, target, boom)
    run: dict[str, Callable[[], Any]] = {
        "count": lambda: t.count(epsilon=0.5, delta=1e-7),
        "mean": lambda: t.mean("amount", (0, 500), epsilon=0.5, delta=1e-7),
        "large": lambda: t.histogram("g", domain={"g": ["a", "b", "c"]}, epsilon=0.5,
                                     delta=1e-7),
    }
    for name in calls:
        with pytest.raises(InjectedError):
            run[name]()
    assert t.accountant.history() == ()


# -- 4. overflowing bounds -------------------------------------------------------------------
def test_wide_bounds_give_consistent_std_and_interval() -> None:
    """±1e200: the std was capped at (U − L)/2 by an overflow of its squares, far wider than
    the interval; no warnings either."""
    t = PrivateTable(_data(), budget=(5.0, 1e-5), seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = t.mean("amount", (-1e200, 1e200), epsilon=1.0, delta=1e-7)
    std, half = float(r.std[0]), float(r.ci_high[0] - r.ci_low[0]) / 2
    assert 0 < std < 1e200 / 10  # the delta method, not the cap
    assert 1.9 * std < half < 10 * std  # a conservative box around the value, same scale
    assert r.ci_low[0] <= r.value <= r.ci_high[0]


# -- 8. non-numeric value columns ----------------------------------------------------------
def test_dirty_numeric_column_is_named_with_examples_and_a_cast(tmp_path: Path) -> None:
    rows = _data(3000).to_pylist()
    amounts = [str(r["amount"]) for r in rows]
    amounts[2500] = "oops"
    amounts[10] = "n/a"
    path = tmp_path / "tx.csv"
    pacsv.write_csv(pa.table({"g": [r["g"] for r in rows], "amount": amounts}), path)
    t = PrivateTable(str(path), budget=(5.0, 1e-5))
    with pytest.raises(DataError) as info:
        t.mean("amount", (0, 500), epsilon=0.5, delta=1e-7)
    message = str(info.value)
    assert "mean(amount): column 'amount' must be numeric" in message
    assert "2 value(s) are not numbers, e.g. ['n/a', 'oops']" in message
    assert "casts={'amount': 'double'}" in message
    assert "m0" not in message and t.accountant.history() == ()
    cast = PrivateTable(str(path), budget=(5.0, 1e-5), casts={"amount": "double"}, seed=1)
    assert cast.cast_report == {"amount": (2, ("n/a", "oops"))}
    r = cast.mean("amount", (0, 500), epsilon=0.5, delta=1e-7)
    assert r.diagnostics.casts == {"amount": (2, ("n/a", "oops"))}  # exact: for the holder
    assert not any("not numbers" in n for n in r.notes)  # never among what is released
    assert r.diagnostics.rows["read"] == 3000


def test_bad_value_deep_in_a_csv_is_found_before_anything_runs(tmp_path: Path) -> None:
    """60,000 clean rows, then one bad value: DuckDB sniffed the type from a sample and failed
    mid-query with a raw "Conversion Error: CSV Error on Line: 60002"."""
    n = 60_001
    amounts = np.round(np.random.default_rng(0).uniform(0, 100, n), 2).astype(str).tolist()
    amounts[-1] = "oops"
    path = tmp_path / "deep.csv"  # plain, unquoted, as a user's export would be
    path.write_text("amount\n" + "\n".join(amounts) + "\n", encoding="utf-8")
    t = PrivateTable(str(path), budget=(5.0, 1e-5))
    with pytest.raises(DataError, match=r"1 value\(s\) are not numbers, e.g. \['oops'\]"):
        t.sum("amount", (0, 100), epsilon=0.5, delta=1e-7)


def test_cast_errors_drop_or_refuse_before_anything_is_spent(tmp_path: Path) -> None:
    """Issue 24 §3: a text column with a few values that are not numbers is cast, and the
    user chooses what becomes of those values: dropped (missing, the default) or the table
    refused. The refusal names the column and neither how many values nor which ones."""
    path = tmp_path / "tx.csv"
    pacsv.write_csv(pa.table({"amount": ["1.5", "oops", "7", "secret-value", "3"]}), path)
    accountant = PrivacyAccountant(budget=(5.0, 1e-5))
    with pytest.raises(DataError, match=r"column 'amount' has values that are not numbers") as e:
        PrivateTable(str(path), accountant=accountant, casts={"amount": "double"},
                     cast_errors="error")
    assert "2" not in str(e.value) and "oops" not in str(e.value)
    assert "cast_errors='drop'" in str(e.value) and accountant.history() == ()
    clean = tmp_path / "clean.csv"
    pacsv.write_csv(pa.table({"amount": ["1.5", "7", "3"]}), clean)
    ok = PrivateTable(str(clean), budget=(5.0, 1e-5), casts={"amount": "double"},
                      cast_errors="error", seed=1)
    assert ok.cast_report == {"amount": (0, ())}
    assert 0 <= ok.mean("amount", (0, 10), epsilon=1.0, delta=1e-6).value <= 10
    dropped = PrivateTable(str(path), budget=(5.0, 1e-5), casts={"amount": "double"}, seed=1)
    assert dropped.cast_report["amount"][0] == 2
    with pytest.raises(InvalidParameterError, match=r"cast_errors must be one of \['drop', "
                                                    r"'error'\], got cast_errors='coerce'"):
        PrivateTable(str(path), budget=(5.0, 1e-5), casts={"amount": "double"},
                     cast_errors="coerce")  # type: ignore[arg-type]


def test_header_only_csv_says_the_table_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("id,amount,g\n", encoding="utf-8")
    t = PrivateTable(str(path), budget=(5.0, 1e-5))
    for call in (lambda: t.mean("amount", (0, 1), epsilon=0.5, delta=1e-7),
                 lambda: t.count(epsilon=0.5, delta=1e-7)):
        with pytest.raises(DataError, match="the table is empty"):
            call()


def test_bad_casts_are_typed_errors() -> None:
    with pytest.raises(InvalidParameterError, match=r"casts\['amount'\] must be one of"):
        PrivateTable(_data(), budget=(1.0, 1e-6), casts={"amount": "int"})
    with pytest.raises(TypeError, match="casts must map"):
        PrivateTable(_data(), budget=(1.0, 1e-6), casts=["amount"])  # type: ignore[arg-type]
    with pytest.raises(DataError, match="'amt' not found"):
        PrivateTable(_data(), budget=(1.0, 1e-6), casts={"amt": "double"})


# -- 11. a mean's empty cells ----------------------------------------------------------------
def test_mean_cells_without_information_are_flagged() -> None:
    data = pa.table({"g": ["a"] * 500 + ["b"], "x": np.linspace(0, 200, 501)})
    t = PrivateTable(data, budget=(5.0, 1e-5), seed=5)
    r = t.mean("x", (0, 200), by=["g"], domain={"g": ["a", "b", "c"]}, epsilon=1.0,
               delta=1e-7)
    assert r.informative is not None
    flags = dict(zip([k[0] for k in r.keys], r.informative.tolist(), strict=True))
    assert flags["a"] is True and flags["c"] is False  # 500 rows; none
    for key, ok in zip(r.keys, r.informative, strict=True):
        i = r.keys.index(key)
        assert ok == (r.ci_low[i] > 0 or r.ci_high[i] < 200)
    assert "carry no information" in r.explain()
    count = t.count(epsilon=0.5, delta=1e-7)
    assert count.informative is None


def test_parquet_written_from_a_seeded_release_says_so(tmp_path: Path) -> None:
    t = PrivateTable(_data(), budget=(5.0, 1e-5), seed=3)
    r = t.histogram("g", domain={"g": ["a", "b", "c"]}, epsilon=0.5, delta=1e-7)
    pq.write_table(r.to_arrow(), tmp_path / "h.parquet")
    assert pq.read_schema(tmp_path / "h.parquet").metadata[b"approxdp.secure"] == b"false"
