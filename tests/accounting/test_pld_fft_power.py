"""compose._fft_power follows only the frequencies where the composed spectrum can matter
(issue 22 §2: a schedule composes tens of parts on one window): a frequency whose bound
e^(Σ c log(|y_j| + e_j)) falls below e^_DROP is left out, its |Y| (< the least float) added
to the round-off bound. These tests check that the result is the full computation's, and
within its round-off bound of the exact convolution where parts are many."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import fft as sfft

from approxdp.accounting.pld import compose
from approxdp.accounting.pld.compose import DiscretePLD, _fft_power
from approxdp.accounting.pld.grid import discretize_many
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from pld_exact import integer_power


def _dropped_share(parts: list[tuple[DiscretePLD, int]], n: int) -> float:
    """The share of frequencies whose bound Σ c log|y_j| is below _DROP (computed here
    without the function: the tilt is 0 and the masses are normalized)."""
    total = np.zeros(n // 2 + 1)
    for p, c in parts:
        w = p.pmf / p.pmf.sum()
        padded = np.zeros(n)
        padded[: w.size] = w
        with np.errstate(divide="ignore"):
            total += c * np.log(np.abs(sfft.rfft(padded)))
    return float(np.mean(total < compose._DROP))


def test_many_parts_are_within_the_round_off_bound_of_the_exact_convolution() -> None:
    """Six integer-mass measures (a binomial bump convolved with three random masses), 8–15
    copies each — exact in Python integers: most frequencies are left out, and every entry of
    the window is within the reported round-off of the exact tilted masses."""
    rng = np.random.default_rng(7)
    ks = [int(k) for k in rng.integers(30, 60, 6)]
    rs = [[int(x) for x in rng.integers(1, 10, 3)] for _ in ks]
    counts = [int(c) for c in rng.integers(8, 16, 6)]
    offsets = [int(o) for o in rng.integers(-20, 20, 6)]
    raw = [np.convolve(np.array([math.comb(k, i) for i in range(k + 1)], dtype=object),
                       np.array(r, dtype=object)) for k, r in zip(ks, rs, strict=True)]
    big = sum(c * k for c, k in zip(counts, ks, strict=True))  # binomials compose in closed form
    exact = np.array([math.comb(big, i) for i in range(big + 1)], dtype=object)
    den = 1
    for k, r, c in zip(ks, rs, counts, strict=True):
        exact = np.convolve(exact, integer_power(r, c))
        den *= (2**k * sum(r)) ** c
    n, pad = 4096, 50
    truth = np.zeros(n)
    truth[pad : pad + exact.size] = [float(Fraction(int(v), den)) for v in exact]
    parts = [(DiscretePLD(h=0.01, offset=o, pmf=np.array(a, float), infinity_mass=0.0), c)
             for a, c, o in zip(raw, counts, offsets, strict=True)]
    assert _dropped_share(parts, n) > 0.5  # the left-out path is what is tested
    base = sum(c * o for c, o in zip(counts, offsets, strict=True))
    comp, roundoff, log_mgf = _fft_power(parts, 0.0, base - pad, n)
    assert float(np.max(np.abs(comp - truth))) <= roundoff
    assert roundoff < 1e-14
    assert log_mgf == pytest.approx(
        sum(c * math.log(float(sum(a))) for a, c in zip(raw, counts, strict=True)), rel=1e-13)


@pytest.mark.parametrize("lam", [0.0, 3.0])
def test_leaving_frequencies_out_changes_nothing_on_a_schedule(
    lam: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty subsampled-Gaussian phases on one window: the same masses bit for bit and the
    same round-off bound as when every frequency is followed (_DROP = −∞)."""
    sources = [SubsampledLoss(GaussianLoss(1 / (1.5 - 0.015 * i)), 256 / 60000, "remove")
               for i in range(30)]
    h = 2.0**-11
    parts = [(p, 300) for p in discretize_many(sources, h, 1e-16, False)]
    n = 8192
    a_idx = int(sum(c * p.offset for p, c in parts) + 0.3 * n)
    got, r_got, k_got = _fft_power(parts, lam, a_idx, n)
    monkeypatch.setattr(compose, "_DROP", -math.inf)
    want, r_want, k_want = _fft_power(parts, lam, a_idx, n)
    assert np.array_equal(got, want)
    assert k_got == k_want
    assert r_got == pytest.approx(r_want, rel=1e-12) and r_got >= r_want * (1 - 1e-12)
