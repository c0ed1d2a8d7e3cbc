"""Batched compositions (compose.compose_rows, fft_power._fft_powers): several measures on
one window through one 2-d r2c per part and one 2-d c2r give, row for row, the floats of
composing each alone (pocketfft transforms each row with its 1-d plan; every other step is
per row), and the lower bound composes its P- and Q-measures in one such batch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.pld import compose as compose_module
from approxdp.accounting.pld.compose import ComposedPLD, compose, compose_rows, fft_size
from approxdp.accounting.pld.fft_power import _fft_power, _fft_powers
from approxdp.accounting.pld.grid import discretize
from approxdp.accounting.pld.passes import clear_caches
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.rounded import discretize_rounded
from approxdp.accounting.pld.window import Window


def _part(sigma: float, q: float, h: float, count: int) -> tuple[object, int]:
    return discretize(SubsampledLoss(GaussianLoss(1.0 / sigma), q, "remove"), h,
                      tail=1e-20), count


def _same(a: ComposedPLD, b: ComposedPLD) -> None:
    assert np.array_equal(a.tilted, b.tilted)
    for name in ("h", "offset", "size", "lam", "log_mgf", "infinity_mass", "roundoff",
                 "log_beyond", "log_alias_up", "log_alias_low", "log_below", "steps",
                 "lam_target", "alias_theta"):
        assert getattr(a, name) == getattr(b, name), name


@pytest.mark.parametrize("extended", [False, True])
@pytest.mark.parametrize("two_parts", [False, True])
def test_batched_rows_are_the_rows_alone_bit_for_bit(extended: bool, two_parts: bool) -> None:
    h = 2.0**-9
    rows = []
    for sigma, lam, shift in ((1.1, 3.0, 0), (1.1, 4.0, 7), (0.9, 2.5, -11)):
        parts = [_part(sigma, 256 / 60000, h, 14063)]
        if two_parts:
            parts.append(_part(1.3, 0.01, h, 500))
        a_idx = int(sum(c * p.offset for p, c in parts)) - 10000 + shift  # type: ignore[attr-defined]
        rows.append((parts, lam, a_idx))
    n = 32768
    batch = _fft_powers(rows, n, extended)  # type: ignore[arg-type]
    assert len(batch) == 3
    for (parts, lam, a_idx), got in zip(rows, batch, strict=True):
        want = _fft_power(parts, lam, a_idx, n, extended)  # type: ignore[arg-type]
        assert np.array_equal(got[0], want[0])
        assert got[1:] == want[1:]


def test_compose_rows_is_compose_row_by_row() -> None:
    """The lower bound's use: a rounded loss's P-measure on a given window, its Q-measure on
    the window P ends on (tilted 1 above), and a third row of another FFT length (its own
    batch) — each as compose makes it alone."""
    h = 2.0**-23
    src = SubsampledLoss(GaussianLoss(0.2), 1e-5, "remove")
    p_meas, q_meas = discretize_rounded(src, h, tail=1e-14).as_measures()
    p_parts, q_parts = [(p_meas, 1000)], [(q_meas, 1000)]
    lo = 1000 * p_meas.offset + 40
    win0 = Window(2527.0, lo, 7000)
    win = Window(2527.0, lo, fft_size(win0.n))
    other = Window(2527.0, lo - 100, 9000)
    got = compose_rows([(p_parts, win0, 0.0, 4.1e-5), (q_parts, win, 1.0, None),
                        (p_parts, other, 0.0, None)], tail=1e-9)
    want = [compose(p_parts, tail=1e-9, tilt_at=4.1e-5, window=win0),
            compose(q_parts, tail=1e-9, window=Window(2527.0, lo, got[0].size), lam_shift=1.0),
            compose(p_parts, tail=1e-9, window=other)]
    assert got[0].size == got[1].size != got[2].size
    for a, b in zip(got, want, strict=True):
        _same(a, b)


def test_the_lower_bound_composes_p_and_q_in_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon

    batches: list[int] = []
    real = compose_module._fft_powers

    def spy(rows, n, extended=False):  # type: ignore[no-untyped-def]
        batches.append(len(rows))
        return real(rows, n, extended)

    monkeypatch.setattr(compose_module, "_fft_powers", spy)
    clear_caches()
    g = dpsgd_epsilon(noise_multiplier=5, sample_rate=1e-5, steps=1000, delta=1e-5)
    assert g.bracket is not None
    lo, hi = (float(x) for x in g.bracket)
    assert 2 in batches  # P and Q of the rounded loss: one batch of two rows
    assert 0.0 < lo <= hi and (hi - lo) / lo < 1e-3
    assert math.isclose(hi, 4.141324718176522e-05, rel_tol=1e-12)
