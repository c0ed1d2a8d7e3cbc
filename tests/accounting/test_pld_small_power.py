"""The power of a few steps by complex multiplication in extended precision
(:mod:`approxdp.accounting.pld.small_power`, ``_fft_power(extended=True)`` with every count
≤ SMALL_POWER): its per-frequency bound against 60-digit products, and the composed masses
within the reported round-off of an exact integer convolution — a bound ~100 times below the
float64 polar power's."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from approxdp.accounting.pld import fft_power
from approxdp.accounting.pld.compose import DiscretePLD, _fft_power
from approxdp.accounting.pld.small_power import SMALL_POWER, _power, product_spectrum
from pld_exact import integer_power

_V = float(np.finfo(np.longdouble).eps) / 2


def _mp(x: np.longdouble) -> mp.mpf:
    """The long double x exactly."""
    num, den = np.longdouble(x).as_integer_ratio()
    return mp.mpf(num) / den


def _mpc(z: np.clongdouble) -> mp.mpc:
    return mp.mpc(_mp(z.real), _mp(z.imag))


def _spectrum(rng: np.random.Generator, size: int) -> np.ndarray:
    """Complex long doubles with moduli from 1e-40 to 1 and any phase, a few exactly 0 or 1."""
    mod = 10.0 ** rng.uniform(-40.0, 0.0, size)
    mod[:3] = [1.0, 0.0, 1.0 - 1e-12]
    phase = rng.uniform(-math.pi, math.pi, size)
    y = (mod * np.cos(phase)).astype(np.longdouble) + 1j * (mod * np.sin(phase)).astype(
        np.longdouble)
    # digits below float64's, so that the long double products round
    return np.asarray(y * (1 + np.longdouble(2.0**-60) * rng.uniform(-1, 1, size)),
                      dtype=np.clongdouble)


@pytest.mark.parametrize("counts", [[2], [1], [3, 7], [SMALL_POWER], [2, 5, 64]])
def test_the_bound_holds_against_60_digit_products(counts: list[int]) -> None:
    """With exact spectra (e = 0): |computed − ∏ y^c| ≤ the bound at every frequency, and the
    bound is within ~(Σ c)·v of the product's size (the power's error is relative)."""
    rng = np.random.default_rng(sum(counts))
    ys = [_spectrum(rng, 40) for _ in counts]
    z, err = product_spectrum([(y, 0.0, c) for y, c in zip(ys, counts, strict=True)], _V)
    with mp.workdps(60):
        for f in range(z.size):
            exact = mp.mpf(1)
            for y, c in zip(ys, counts, strict=True):
                exact *= _mpc(y[f]) ** c
            miss = abs(_mpc(z[f]) - exact)
            assert miss <= err[f], (f, miss, err[f])
            assert err[f] <= 8.0 * sum(counts) * _V * float(abs(exact)) + 1e-300


@pytest.mark.parametrize("counts", [[2], [3, 4], [SMALL_POWER]])
def test_the_bound_holds_for_perturbed_transforms(counts: list[int]) -> None:
    """With forward errors e_j: any true spectrum Y_j within e_j of the computed y_j (here on
    the circle |Y − y| = e, the worst case, at random angles) has ∏ Y_j^c within the bound."""
    rng = np.random.default_rng(len(counts) + 11)
    ys = [_spectrum(rng, 30) for _ in counts]
    es = [1e-18, 3e-19, 5e-20][: len(counts)]
    _, err = product_spectrum([(y, e, c) for y, e, c in zip(ys, es, counts, strict=True)], _V)
    z, _ = product_spectrum([(y, 0.0, c) for y, c in zip(ys, counts, strict=True)], _V)
    with mp.workdps(60):
        for f in range(z.size):
            for _ in range(4):
                true = mp.mpf(1)
                for y, e, c in zip(ys, es, counts, strict=True):
                    turn = rng.uniform(0.0, 2.0 * math.pi)
                    true *= (_mpc(y[f]) + e * mp.expj(turn)) ** c
                assert abs(_mpc(z[f]) - true) <= err[f]


def test_binary_powers_are_the_products() -> None:
    y = _spectrum(np.random.default_rng(3), 20)
    for c in (1, 2, 5, 8, 13, 64):
        slow = y.copy()
        for _ in range(c - 1):
            slow = slow * y
        assert np.allclose(_power(y, c), slow, rtol=1e-16, atol=0.0)


def _near_atom(big: int) -> list[int]:
    """Integer weights of a tiny-q step: an atom of weight ``big`` beside a small bump (the
    shape whose composed masses sit at ~1 near loss 0 under the tilt)."""
    return [3, 7, 12, big, 40, 33, 21, 9, 4, 2, 1]


@pytest.mark.parametrize(("counts", "lam"), [([2], 0.0), ([2], 40.0), ([3, 2], 5.0),
                                            ([17], 0.0)])
def test_extended_few_steps_within_the_round_off_of_the_exact_convolution(
    counts: list[int], lam: float
) -> None:
    """Near-atom measures composed by ``_fft_power(extended=True)`` (the multiplication route):
    every entry within the reported round-off of the exact tilted masses, and that round-off
    ≤ 2u (the final cast to float64 dominates) — 30 to 100 times below the float64 route's on
    the same parts (which is also checked against the truth)."""
    h = 0.01
    raws = [_near_atom(10**6 + 17 * i) for i in range(len(counts))]
    parts = [(DiscretePLD(h=h, offset=-5 + i, pmf=np.array(r, float), infinity_mass=0.0), c)
             for i, (r, c) in enumerate(zip(raws, counts, strict=True))]
    # exact tilted masses: weights r_i e^(λ l_i), normalized, convolved in Fractions (the
    # tilt factors are floats: the exact tilted measure of those float weights)
    exact: list[Fraction] = [Fraction(1)]
    lo = 0
    for (p, c), r in zip(parts, raws, strict=True):
        w = [Fraction(float(np.longdouble(x) * np.exp(np.longdouble(lam) * np.longdouble(
            (p.offset + i) * h)))) for i, x in enumerate(r)]
        tot = sum(w)
        ints = [x / tot for x in w]
        exact = list(np.convolve(np.array(exact, dtype=object),
                                 integer_power(ints, c)))  # type: ignore[arg-type]
        lo += c * p.offset
    n = 256
    truth = np.zeros(n)
    truth[: len(exact)] = [float(x) for x in exact]
    comp, roundoff, _ = _fft_power(parts, lam, lo, n, extended=True)
    # (the long double tilting differs from the exact one by a relative few v per entry)
    tol = roundoff + 64 * _V * np.abs(truth)
    assert np.all(np.abs(comp - truth) <= tol)
    assert roundoff <= 2.0 * 2.0**-53 * max(1.0, float(truth.max()))
    comp64, roundoff64, _ = _fft_power(parts, lam, lo, n)
    assert np.all(np.abs(comp64 - truth) <= roundoff64 + 64 * _V * np.abs(truth))
    assert roundoff64 >= 30.0 * roundoff


def test_larger_counts_keep_the_polar_power(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count above SMALL_POWER goes the polar way even when extended (the route for 10^10+
    steps), bit for bit as before."""
    parts = [(DiscretePLD(h=0.01, offset=0, pmf=np.array(_near_atom(1000), float),
                          infinity_mass=0.0), SMALL_POWER + 1)]
    calls: list[int] = []
    monkeypatch.setattr(fft_power, "_small_fft_power", lambda *a: calls.append(1))
    comp, roundoff, _ = _fft_power(parts, 0.0, 0, 1024, extended=True)
    assert not calls and roundoff > 0.0 and comp.size == 1024
