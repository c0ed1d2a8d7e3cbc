"""The per-part arithmetic shared by fft_power._fft_power and running.RunningComposition
(pld/spectrum.py) gives bit for bit what the inline code gave (pad + fold + np.roll, the
polar form's terms), and _fft_power's first-part pre-filter (fft_power._few_left) leaves out
only frequencies the drop removes anyway: the same composition bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import fft as sfft

from approxdp.accounting.pld import fft_power
from approxdp.accounting.pld.compose import _fft_power
from approxdp.accounting.pld.grid import discretize_many
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.spectrum import fold_rolled, polar_terms, rolled, survivors

_U = float(np.finfo(np.float64).eps) / 2


def _old_fold(tilted: np.ndarray, n: int, shift: int, dt: type) -> np.ndarray:
    folds = -(-tilted.size // n)
    padded = np.zeros(folds * n, dtype=dt)
    padded[: tilted.size] = tilted
    return np.roll(padded.reshape(folds, n).sum(axis=0), -(shift % n))


@pytest.mark.parametrize("dt", [np.float64, np.longdouble])
@pytest.mark.parametrize("size", [1, 7, 64, 100, 101, 250, 333])
def test_fold_rolled_is_pad_fold_roll_bit_for_bit(dt: type, size: int) -> None:
    rng = np.random.default_rng(size)
    tilted = rng.random(size).astype(dt) * 10.0 ** rng.integers(-300, 0, size)
    for n in (100, 101, 128):
        for shift in (0, 1, 5, size - 1, size, size + 3, n - 1, n, 3 * n + 7, -4, -n - 9):
            got = fold_rolled(tilted, n, shift, dt)
            want = _old_fold(tilted, n, shift, dt)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want)


def test_rolled_is_np_roll() -> None:
    x = np.random.default_rng(1).random(37)
    for k in (-80, -37, -1, 0, 1, 36, 37, 38, 100):
        assert np.array_equal(rolled(x, k), np.roll(x, -k))


def test_polar_terms_are_the_inline_formulas() -> None:
    """The terms as _fft_power and running.py formed them inline before the refactor."""
    rng = np.random.default_rng(3)
    spec = sfft.rfft(np.concatenate(([0.9], rng.random(500) * 1e-3, [0.0] * 500)))
    spec = np.concatenate((spec, [0.0 + 0.0j, 1e-300 + 0.0j, -0.5 + 1e-9j]))
    re, im, re_m1 = spec.real, spec.imag, spec.real - 1.0
    y2 = re * re + im * im
    c, u = 1000, _U
    big = re_m1 * (re_m1 + 2.0)
    s2 = big + im * im
    near = y2 >= 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.where(near, 0.5 * np.log1p(np.where(near, s2, 0.0)), 0.5 * np.log(y2))
        ph = np.arctan2(im, re)
        d_la = np.where(near, 8.0 * u * (np.abs(big) + im * im) / np.maximum(y2, 0.5),
                        4.0 * u) + 4.0 * u * np.abs(la)
    finite = np.isfinite(la)
    want = (la, ph, np.where(finite, c * (d_la + 8.0 * u * np.abs(ph)), 0.0),
            np.where(finite, c * (np.abs(la) + np.abs(ph)), 0.0))
    got = polar_terms(re, im, re_m1, y2, c, u)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


def _parts(sigma: float, q: float, h: float, count: int) -> list:
    src = SubsampledLoss(GaussianLoss(1 / sigma), q, "remove")
    return [(p, count) for p in discretize_many([src], h, 1e-16, False)]


@pytest.mark.parametrize("extended", [False, True])
@pytest.mark.parametrize(("sigma", "q", "h", "count", "n", "lam"), [
    (5.0, 1e-5, 2.0**-23, 1000, 7200, 2.0),  # #28's shape: ~2 % of the frequencies survive
    (1.1, 256 / 60000, 2.0**-12, 3000, 8192, 1.0),
    (1.0, 0.1, 2.0**-8, 3, 4096, 0.0),  # few steps: most survive, no pre-filter
])
def test_the_first_parts_pre_filter_changes_nothing(
    extended: bool, sigma: float, q: float, h: float, count: int, n: int, lam: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (the polar power's pre-filter: few extended steps otherwise go by multiplication,
    # small_power, which follows every frequency)
    monkeypatch.setattr(fft_power, "SMALL_POWER", 0)
    parts = _parts(sigma, q, h, count)
    if sigma == 1.1:  # a second, different part after the first
        parts += _parts(1.3, 256 / 60000, h, 500)
    a_idx = int(sum(c * p.offset for p, c in parts)) - n // 3
    seen: list[int | None] = []
    few_left = fft_power._few_left

    def spy(*args: object) -> object:
        out = few_left(*args)  # type: ignore[arg-type]
        seen.append(None if out is None else out.size)
        return out

    monkeypatch.setattr(fft_power, "_few_left", spy)
    got = _fft_power(parts, lam, a_idx, n, extended)
    monkeypatch.setattr(fft_power, "_few_left", lambda *args: None)
    want = _fft_power(parts, lam, a_idx, n, extended)
    assert np.array_equal(got[0], want[0])
    assert got[1:] == want[1:]
    if count == 3:
        assert seen == [None]
    else:
        assert seen and seen[0] is not None and 8 * seen[0] < 7 * (n // 2 + 1)


def test_survivors_declines_where_no_bound_is_taken() -> None:
    spec = sfft.rfft(np.concatenate(([1.0], np.zeros(99))))
    assert survivors(spec, 1e-16, 0, 0.0, -760.0) is None  # (no steps)
    assert survivors(spec, 1e-16, 1, float("nan"), -760.0) is None
    assert survivors(spec, 1e-16, 1, -1e9, -760.0) is None  # (e^power would overflow)
    assert survivors(spec, 1.0, 1000, 0.0, -760.0) is None  # (the forward error swamps it)
