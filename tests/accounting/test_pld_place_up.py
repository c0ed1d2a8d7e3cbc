"""split._place_up adds each lift at its own point when every point holds mass (the split's
usual case) by one vectorized add: the same floats as the general path (np.add.at at the
next point holding mass), which other measures still take."""

from __future__ import annotations

import numpy as np
import pytest

from approxdp.accounting.pld import split


def _reference(pmf: np.ndarray, lift: np.ndarray) -> float:
    n = pmf.size
    idx = np.where(pmf > 0.0, np.arange(n), n)
    nxt = np.minimum.accumulate(idx[::-1])[::-1]
    inside = nxt < n
    np.add.at(pmf, nxt[inside], lift[inside])
    return float(lift[~inside].sum())


@pytest.mark.parametrize("zeros", [0, 1, 40])
def test_place_up_is_the_general_rule_bit_for_bit(zeros: int) -> None:
    rng = np.random.default_rng(zeros)
    pmf = rng.random(500) * 10.0 ** rng.integers(-300, 0, 500)
    pmf[rng.choice(500, zeros, replace=False)] = 0.0
    if zeros:
        pmf[-1] = 0.0  # some lift has no point above: it goes to +inf
    lift = rng.random(500) * 1e-16
    got, want = pmf.copy(), pmf.copy()
    top = split._place_up(got, lift)
    assert top == _reference(want, lift)
    assert np.array_equal(got, want)
    assert (top > 0.0) == bool(zeros)
