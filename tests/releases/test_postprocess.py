"""Opt-in non-negative counts (:mod:`approxdp.releases.postprocess`): free, never applied
unless asked, consistent when rounding, honest intervals."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivateTable
from approxdp.errors import InvalidParameterError
from approxdp.mechanisms import is_secure
from approxdp.releases.postprocess import non_negative_counts


def _histogram(seed: int = 0) -> tuple[PrivateTable, object]:
    data = pa.table({"g": ["a"] * 3 + ["b"] * 40 + ["c"] * 1})
    t = PrivateTable(data, budget=(1.0, 1e-6), seed=seed)
    return t, t.histogram("g", epsilon=0.5, delta=1e-7, domain={"g": ["a", "b", "c", "d"]})


def test_never_applied_by_default_and_free() -> None:
    t, h = _histogram()
    assert float(np.min(h.values)) < 0  # seed 0: a negative noisy count, released as such
    spent = t.remaining().count
    clamped = h.non_negative()
    assert t.remaining().count == spent
    assert np.all(clamped.values >= 0) and np.all(clamped.ci_low >= 0)
    np.testing.assert_array_equal(np.asarray(clamped.values), np.maximum(h.values, 0))
    assert any("non_negative(how='clamp')" in n for n in clamped.notes)
    assert "non_negative" not in h.explain() and "non_negative" in clamped.explain()
    assert not clamped.secure and not is_secure(clamped.values)  # still marked


def test_round_keeps_the_total_and_whole_numbers() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.normal(3, 4, 12)
        out, lo, hi = non_negative_counts(v, v - 2, v + 2, "round")
        assert np.all(out == np.round(out)) and np.all(out >= 0)
        assert out.sum() == round(np.maximum(v, 0).sum())
        assert np.all(np.abs(out - np.maximum(v, 0)) < 1)
        assert np.all(lo <= hi)


def test_intervals_still_hold_the_true_counts() -> None:
    """200 cell intervals at 95 %: at least 180 hold the true count (a 95 % coverage fails
    this with probability < 0.2 %); clamping and rounding inward never drop a whole count."""
    truth = np.array([3.0, 40.0, 1.0, 0.0])
    held = 0
    for seed in range(50):
        _, h = _histogram(seed)
        r = h.non_negative("round")
        raw = (h.ci_low <= truth) & (truth <= h.ci_high)
        now = (r.ci_low <= truth) & (truth <= r.ci_high)
        assert np.all(now[raw])
        held += int(np.sum(now))
    assert held >= 180


def test_refused_where_values_are_not_counts() -> None:
    t = PrivateTable(pa.table({"x": [1.0, 2.0]}), budget=(1.0, 1e-6), seed=0)
    m = t.mean("x", (0, 5), epsilon=0.5, delta=1e-7)
    with pytest.raises(InvalidParameterError, match="count or histogram"):
        m.non_negative()
    c = t.count(epsilon=0.1, delta=1e-7)
    with pytest.raises(InvalidParameterError, match="how must be one of"):
        c.non_negative("floor")  # type: ignore[arg-type]
