"""The lower bound's P-tails stay below the truth whatever the window.

Mass aliased down from above a window's top is read at its landing loss and untilted there
by e^(−λl), not at its true loss: in untilted units its bound is not a probability and may
exceed 1. A cap at 1 (as before) let a window whose top sits inside the tilted bulk certify
a P-tail of 4.86 where the truth is 0.0024, and a "lower bound" ε = 1.027 above the true
0.673 (found by the session-7 review). The reference here is the brute-force convolution of
the same rounded measures, so it checks the composition's certificate alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld import composed
from approxdp.accounting.pld.compose import compose
from approxdp.accounting.pld.composed import rounded_tails
from approxdp.accounting.pld.discretized import _step_tail, rounded_all
from approxdp.accounting.pld.plan import _plan
from approxdp.accounting.pld.window import Window


def _suffix_at(offset: int, pmf: np.ndarray, idx: np.ndarray) -> np.ndarray:
    tails = np.concatenate((np.cumsum(pmf[::-1])[::-1], [0.0]))
    return tails[np.clip(idx - offset, 0, pmf.size)]


@pytest.mark.parametrize("lam", [3.130659290511211, 1.5, 0.67, -0.5])
def test_lower_tails_below_brute_force_on_any_window(lam: float) -> None:
    sigma, q, delta, h = 0.5, 0.01, 1e-3, 2.0**-8
    acc = TrainingAccountant()
    acc.step(noise_multiplier=sigma, sample_rate=q, steps=2)
    parts = _plan(acc.events()).remove
    tail = 1e-4 * delta
    rounded = rounded_all(parts, h, _step_tail(parts, tail), False)
    p_parts = [(r.as_measures()[0], c) for r, (_, c) in zip(rounded, parts, strict=True)]
    q_parts = [(r.as_measures()[1], c) for r, (_, c) in zip(rounded, parts, strict=True)]
    pc = compose(p_parts, tail=tail, tilt_at=0.67, window=Window(lam, -6, 2250))
    qc = compose(q_parts, tail=tail, window=Window(pc.lam, pc.offset, pc.size), lam_shift=1.0)
    a, b, log_b = rounded_tails(pc, qc)

    def brute(measures: list) -> tuple[int, np.ndarray]:
        pmf, offset = np.array([1.0]), 0
        for m, count in measures:
            for _ in range(count):
                pmf = np.convolve(pmf, m.pmf)
                offset += m.offset
        return offset, pmf

    grid = pc.offset + np.arange(pc.size)
    grid = grid[grid >= 0]
    p_true = _suffix_at(*brute(p_parts), grid)
    q_true = _suffix_at(*brute(q_parts), grid)
    n = a.size // 2
    assert n == grid.size
    assert np.all(a[:n] <= p_true * (1 + 1e-12) + 1e-300)
    assert np.all(b[:n] >= q_true * (1 - 1e-12))
    assert np.all(np.exp(log_b[:n]) >= q_true * (1 - 1e-12))
    both = np.concatenate((p_true, p_true)), np.concatenate((q_true, q_true))
    exact = composed.test_epsilon(*both, delta)
    assert composed.test_epsilon(a, b, delta) <= exact
    assert composed.test_epsilon(a, b, delta, log_b) <= exact
