"""The per-part arithmetic of the FFT composition, shared by the one-shot composition
(:func:`approxdp.accounting.pld.compose._fft_power`) and the running one
(:class:`approxdp.accounting.pld.running.RunningComposition`): a tilted part folded onto the
circular window at its rolled position, the polar form of its spectrum with the error terms
of the power y^c (the error model is stated in ``_fft_power``'s docstring), and the first
part's frequencies that can survive the drop of negligible ones (:func:`survivors`).

Koskela, Jälkö, Prediger, Honkela 2021 (https://arxiv.org/abs/2006.07134, Sec. 4) for the FFT
composition of privacy-loss distributions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.quiet import quiet

__all__ = ["fold_rolled", "polar_terms", "rolled", "survivors"]

FloatArray = npt.NDArray[np.float64]


def fold_rolled(tilted: Any, n: int, shift: int, dt: Any) -> Any:
    """The part ``tilted`` (entry j at index j) aliased onto n points and rolled by ``shift``:
    entry i is Σ tilted[j] over j ≡ i + shift (mod n), in ``dt``. A part no longer than the
    window is placed at its rolled position directly (no sums: the same values as padding,
    folding and ``np.roll``); a longer one is folded row by row in the order of its rows, as
    ``reshape(folds, n).sum(axis=0)`` adds them, then rolled."""
    size = tilted.size
    k = shift % n
    if size <= n:
        out = np.zeros(n, dtype=dt)
        if k < size:
            out[: size - k] = tilted[k:]
        head = min(k, size)  # entries j < k land at the top, from n − k on
        out[n - k: n - k + head] = tilted[:head]
        return out
    folds = -(-size // n)
    padded = np.zeros(folds * n, dtype=dt)
    padded[:size] = tilted
    return rolled(padded.reshape(folds, n).sum(axis=0), k)


def rolled(x: Any, k: int) -> Any:
    """``np.roll(x, -k)`` of a 1-d array (entry i is x[(i + k) mod n]), by two slices."""
    k %= x.size
    return np.concatenate((x[k:], x[:k])) if k else x.copy()


def polar_terms(
    re: FloatArray, im: FloatArray, re_m1: FloatArray, y2: FloatArray, c: int, u: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """For spectrum values y = re + i·im (re_m1 = Re y − 1 formed before any cast,
    y2 = re² + im²) raised to the power c: (log|y|, arg y, the power's error term
    c(|Δℓ| + |Δarg|), its size term c(|ℓ| + |arg|)), the last two 0 where log|y| is not
    finite. log|y| = ½ log1p(|y|² − 1) with |y|² − 1 = (Re y − 1)(Re y + 1) + (Im y)² where
    |y|² ≥ ½ (relative errors), ½ log|y|² below; the bounds |Δℓ| ≤ 8uA/|y|² + 4u|ℓ|
    (A = |Re y − 1|·|Re y + 1| + (Im y)²), resp. 4u(|ℓ| + 1), and |Δarg| ≤ 8u|arg y|."""
    big = re_m1 * (re_m1 + 2.0)
    s2 = big + im * im  # |y|² − 1, with relative error where |y| is near 1
    near = y2 >= 0.5
    with quiet():
        la = np.where(near, 0.5 * np.log1p(np.where(near, s2, 0.0)), 0.5 * np.log(y2))
        ph = np.arctan2(im, re)
        d_la = np.where(near, 8.0 * u * (np.abs(big) + im * im) / np.maximum(y2, 0.5),
                        4.0 * u) + 4.0 * u * np.abs(la)
    finite = np.isfinite(la)
    err = np.where(finite, c * (d_la + 8.0 * u * np.abs(ph)), 0.0)
    size = np.where(finite, c * (np.abs(la) + np.abs(ph)), 0.0)
    return la, ph, err, size


def survivors(
    spec: Any, e_fwd: float, c: int, cap_after: float, drop: float
) -> npt.NDArray[np.intp] | None:
    """The first part's frequencies that may survive ``_fft_power``'s drop (its ``_DROP`` is
    ``drop``), where they are fewer than 7/8 of all (so that the drop surely happens); None:
    all of them.

    After the first part the drop keeps f where c·log(|y_f| + e_fwd) + cap_after ≥ drop
    (the envelope's running sum starts at 0). Those have |y_f|² ≥ L with √L =
    e^((drop − cap_after − margin)/c) − e_fwd, the margin (1 + 1e-13·c nats) far above the
    float error of c·log(√(|y|²) + e_fwd) (a few u·c nats), and L taken 1e-9 lower still:
    the same frequencies survive, their values computed as before; only the others'
    envelopes (a logarithm and a square root per frequency) are not formed."""
    if c <= 0:
        return None
    power = (drop - cap_after - (1.0 + 1e-13 * c)) / c
    if not power < 700.0:  # (NaN, or no bound worth taking)
        return None
    root = math.exp(power) - e_fwd
    if not 0.0 < root < math.inf:
        return None
    re = np.asarray(spec.real, dtype=np.float64)
    im = np.asarray(spec.imag, dtype=np.float64)
    few = (re * re + im * im >= root * root * (1.0 - 1e-9)).nonzero()[0]
    return few if 8 * few.size < 7 * spec.size else None
