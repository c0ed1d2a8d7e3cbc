"""The FFT composition's kernel: irfft(∏ rfft(tilted p_j)^c_j) with its round-off bound
(:func:`_fft_power`, moved here from :mod:`approxdp.accounting.pld.compose`).

The transforms are NumPy's (the same pocketfft as SciPy's, the same floats, without SciPy's
backend dispatch: ~25 µs a call, ~0.3 ms on a process's first call). One measure at a time,
its arrays freed as it goes: a batch of measures in one 2-d transform was measured slower
(a higher heap peak, which glibc trims after the call: ~115 page faults, ~0.3 ms, on every
later call, against ~40 µs saved by the batched transforms).

Koskela, Jälkö, Prediger, Honkela 2021 (https://arxiv.org/abs/2006.07134, Sec. 4) for the FFT
composition of privacy-loss distributions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.discrete import DiscretePLD
from approxdp.accounting.pld.quiet import quiet
from approxdp.accounting.pld.small_power import SMALL_POWER, product_spectrum
from approxdp.accounting.pld.spectrum import fold_rolled, polar_terms, rolled
from approxdp.accounting.pld.spectrum import survivors as _few_left

__all__ = ["_fft_power"]

FloatArray = npt.NDArray[np.float64]

_U = float(np.finfo(np.float64).eps) / 2  # unit round-off
#: A frequency whose bound on the composed spectrum, e^(Σ c log(|y_j| + e_j)), is below
#: e^_DROP is no longer followed by :func:`_fft_power`: the composed |Y| there is below
#: _BELOW_DROP (the least positive float; e^_DROP is ~1e-330), which the round-off bound adds
#: for it instead. In a sum of many steps |Y| falls fast away from frequency 0, so the polar
#: power (five transcendental functions per frequency and part) is taken on a few per cent
#: of the frequencies after the first parts.
_DROP = -760.0
_BELOW_DROP = math.ulp(0.0)

Parts = Sequence[tuple[DiscretePLD, int]]
#: ndarray.sum / .max / .min without their Python wrappers (the same reductions, any dtype)
_SUM, _MAX, _MIN = np.add.reduce, np.maximum.reduce, np.minimum.reduce


def _fft_power(
    parts: Parts, lam: float, a_idx: int, n: int, extended: bool = False,
) -> tuple[FloatArray, float, float]:
    """irfft(∏ rfft(tilted p_j)^c_j) on n points, placed so that entry m is the tilted mass at
    index a_idx + m; with the per-entry round-off bound and the exact log-MGF at λ.

    Each tilted measure is rolled (exactly) so that its mean sits at index 0: its spectrum
    y is then near 1 with a small phase wherever y^c is not negligible. The power is taken in
    polar form, y^c = e^(c log|y|) e^(i c arg y), in float64, with log|y| = ½ log1p(|y|² − 1)
    and |y|² − 1 = (Re y − 1)(Re y + 1) + (Im y)² formed from Re y − 1 (exact where Re y ≥ ½):
    both logarithms then carry *relative* errors, and the power's error is a few u times
    (1 + Σ c_j (|log|y_j|| + |arg y_j|)) of |y^c| — where |y^c| matters, c|log|y|| ≲ 40
    and, centred, c|arg y| is small — instead of ~u·c·(|log|y|| + π) with an uncentred,
    absolute log. The bound per frequency (u the float64 unit round-off; ℓ = log|y|,
    A = |Re y − 1|·|Re y + 1| + (Im y)²; safety factor 2 on each term):

    - ℓ from log1p (|y|² ≥ ½): |Δℓ| ≤ 8uA/|y|² + 4u|ℓ| (|y|² − 1 is formed with error
      ≤ 5uA, Re y and Im y cast to float64 with relative error u each; log1p adds 1 ulp:
      no constant term, which c would multiply);
      from log (|y|² < ½): |Δℓ| ≤ 4u(|ℓ| + 1);
    - arg y = atan2(Im y, Re y): |Δ arg| ≤ 8u|arg y| (the inputs' relative u errors move it
      by ≤ u|sin 2 arg y| ≤ 2u|arg y|, atan2 itself by ≤ 2 ulp);
    - the products c·ℓ, c·arg (u each), their running sums over the k parts (a k-term float
      sum errs by ≤ (k − 1)u Σ|terms|), and e^x, cos, sin of them: ≤ (8 + 2k)u(1 + Σ c(|ℓ| +
      |arg|)) more; the result is |Y|·(expm1(Σ c(|Δℓ| + |Δarg|) + that) + 8u) off.

    The forward transforms' own error (pocketfft's componentwise bound c·log2(N)·u_f·‖x‖₁,
    and the folding sums) is first order: |Δ ∏ y_j^c_j| ≤ Σ_j c_j e_j ∏_i (|y_i| + e_i)^c_i
    / (|y_j| + e_j). A power c multiplies it by c: where the composition stands for very
    many steps (blocks of blocks), ``extended`` computes the tilting and the forward
    transform (and the inverse one, whose error is c·log2(N)·u_f·Σ|Y|/N per entry) in x87
    extended precision (u_f = 5.4e-20 instead of 1.1e-16; pocketfft supports it); the power
    stays in float64, whose errors above are relative (the transcendental functions on x87
    long doubles cost 40–100 times more: they were 3/4 of a T = 10^12 calibration). Every
    bound evaluated in float64 is scaled by 1.001 (its own rounding is ~u of it).

    An ``extended`` composition whose every count is at most
    :data:`~approxdp.accounting.pld.small_power.SMALL_POWER` takes the power too in extended
    precision, by complex multiplication (:func:`_small_fft_power`)."""
    if extended and max(c for _, c in parts) <= SMALL_POWER:
        return _small_fft_power(parts, lam, a_idx, n)
    dt: Any = np.longdouble if extended else np.float64
    u_in = float(np.finfo(dt).eps) / 2  # the tilting and the forward transform
    u = _U  # the power
    log2n = math.log2(n)
    m = n // 2 + 1
    row = _Row(parts, lam, n, dt, u_in)
    for i, (p, c) in enumerate(parts):
        # aliasing commutes with convolution; entry i: index offset + shift + i (mod n)
        tilted, shift, folds, _ = row.tilts[i]
        folded = fold_rolled(tilted, n, shift, dt)
        row.base += c * (p.offset + shift)
        spec = np.fft.rfft(folded)
        # pocketfft's componentwise bound c·log2(N)·u·‖x‖₁, and the folding sums
        # (‖x‖₁ = Σx: the tilted masses and their folds are ≥ 0)
        e_fwd = (4.0 * log2n + folds) * u_in * float(_SUM(folded))
        del folded
        row.add(i, spec, e_fwd, m, u)
        del spec
    spec_t, err_spec, abs_t = row.spectrum(m, u)
    # the inverse transform in the forward one's precision: in float64 its error (about
    # 64u·Σ|Y|/N per entry) would be the largest term left at T = 10^12
    comp_x = np.fft.irfft(spec_t.astype(np.clongdouble) if extended else spec_t, n=n)
    comp = np.asarray(comp_x, dtype=np.float64)
    del spec_t
    roundoff = 1.001 * (
        _weighted_sum(err_spec, n) / n
        + 4.0 * log2n * u_in * _weighted_sum(abs_t, n) / n
        + u_in * _max_abs(comp_x)
        + (u * _max_abs(comp) if extended else 0.0)  # the cast to float64
        + 2.0 * row.dropped * _BELOW_DROP / n  # |Y| at the frequencies left out (_DROP)
    )
    del comp_x, err_spec, abs_t
    # position k holds the index s ≡ base + k (mod n); put index a_idx + m at position m
    return rolled(comp, a_idx - row.base), roundoff, row.log_mgf


def _small_fft_power(
    parts: Parts, lam: float, a_idx: int, n: int
) -> tuple[FloatArray, float, float]:
    """:func:`_fft_power` in extended precision throughout: the tilting and both transforms
    as there, the power ∏ y_j^c_j by complex multiplication
    (:func:`~approxdp.accounting.pld.small_power.product_spectrum`, with its per-frequency
    error bound). The entries' bound: the spectrum's error through the inverse transform
    (Σ_f w_f err_f / n), the inverse transform's own (c·log2(N)·v·Σ_f w_f|Z_f| / N, as in
    :func:`_fft_power`), and the casts (v·max|x| in extended, u·max|x| to float64)."""
    dt: Any = np.longdouble
    v = float(np.finfo(dt).eps) / 2
    log2n = math.log2(n)
    tilts, log_mgf = _tilts(parts, lam, n, dt, v)
    base = 0
    specs: list[tuple[Any, float, int]] = []
    for (p, c), (tilted, shift, folds, _) in zip(parts, tilts, strict=True):
        folded = fold_rolled(tilted, n, shift, dt)
        base += c * (p.offset + shift)
        e_fwd = (4.0 * log2n + folds) * v * float(_SUM(folded))  # as in _fft_power
        specs.append((np.fft.rfft(folded), e_fwd, c))
        del folded
    spec_t, err_spec = product_spectrum(specs, v)
    del specs
    abs_t = np.asarray(np.abs(spec_t), dtype=np.float64) + _BELOW_DROP  # (a cast's underflow)
    comp_x = np.fft.irfft(spec_t, n=n)
    del spec_t
    comp = np.asarray(comp_x, dtype=np.float64)
    roundoff = 1.001 * (
        _weighted_sum(err_spec, n) / n
        + 4.0 * log2n * v * _weighted_sum(abs_t, n) / n
        + v * _max_abs(comp_x)
        + _U * _max_abs(comp)  # the cast to float64
    )
    return rolled(comp, a_idx - base), roundoff, log_mgf


def _weighted_sum(x: FloatArray, n: int) -> float:
    """Σ w_f x_f over the n/2 + 1 frequencies of a real transform of length n, w = 1 at f = 0
    (and at n/2 for even n), else 2 — the weights in place (×2 is exact: the same products as
    a weight array's, and no array more)."""
    first, last = x[0], x[-1]
    x *= 2.0
    x[0] = first
    if n % 2 == 0:
        x[-1] = last
    return float(_SUM(x))


def _max_abs(x: Any) -> float:
    """max |x| without an array of |x| (the same value)."""
    return float(max(_MAX(x), -_MIN(x)))


def _tilts(parts: Parts, lam: float, n: int, dt: Any, u_in: float) -> tuple[
    list[tuple[Any, int, int, float]], float
]:
    """Each part tilted at λ (its mass bounds its spectrum before it is transformed), the
    shift that rolls its tilted mean to index 0, its folds onto n points, and the log of a
    bound on c·log(|y| + e_fwd); with the exact log-MGF of the sum at λ."""
    log2n = math.log2(n)
    log_mgf = 0.0
    tilts: list[tuple[Any, int, int, float]] = []
    for p, c in parts:
        if lam == p.tilt:  # stored tilted at this λ (a block): a rescaling only
            w: Any = np.maximum(p.pmf, 0.0).astype(dt)
            total = _SUM(w)
            norm = dt(p.log_norm) + np.log(total) if total > 0 else dt(-np.inf)
            tilted = w / total if total > 0 else np.zeros_like(w)
        else:
            losses: Any = (p.offset + np.arange(p.pmf.size, dtype=dt)) * dt(p.h)
            with quiet():
                lt = np.log(np.maximum(p.pmf, 0.0).astype(dt))
            lt += dt(p.log_norm) + (dt(lam) - dt(p.tilt)) * losses
            top = _MAX(lt)
            norm = top + np.log(_SUM(np.exp(lt - top))) if np.isfinite(top) else top
            tilted = np.exp(lt - norm) if np.isfinite(norm) else np.zeros_like(lt)
            del lt, losses
        log_mgf += c * float(norm)
        # the tilted mean's index, rolled to 0 (an exact circular shift of the whole sum)
        weights = np.asarray(tilted, dtype=np.float64)
        mass = float(_SUM(weights))
        shift = round(float(_SUM(weights * np.arange(weights.size))) / mass) if mass > 0 else 0
        folds = -(-p.pmf.size // n)
        # log of a bound on |y| + e_fwd at every frequency: |DFT| ≤ Σ|x| (the float sums'
        # rounding, < 1e-9 of the mass, and the transform's error bound added)
        cap = c * math.log(mass * (1.0 + 1e-9) * (1.0 + 1.001 * (4.0 * log2n + folds) * u_in)
                           ) if mass > 0 else 0.0
        tilts.append((tilted, shift, folds, cap))
        del weights
    return tilts, log_mgf


class _Row:
    """One measure's running state through :func:`_fft_powers`: the frequencies still
    followed, the polar sums over its parts so far, and their error terms."""

    def __init__(self, parts: Parts, lam: float, n: int, dt: Any, u_in: float) -> None:
        self.parts = parts
        self.tilts, self.log_mgf = _tilts(parts, lam, n, dt, u_in)
        # the bound of the parts not yet transformed, after each part (see _DROP)
        caps = [cap for *_, cap in self.tilts]
        self.caps_after = [*list(accumulate(caps[::-1]))[::-1][1:], 0.0]
        # the frequencies still followed (see _DROP; None: all m), and the sums over them,
        # formed on the first part (most often on the first part's few survivors only)
        self.keep: npt.NDArray[np.intp] | None = None
        self.dropped = 0
        self.log_abs: Any = None
        self.arg: Any = None
        self.log_env: Any = None
        self.err_pow: Any = None  # Σ c (|Δℓ| + |Δarg|)
        self.sizes: Any = None  # Σ c (|ℓ| + |arg|)
        self.fwd: list[tuple[FloatArray, float, int, npt.NDArray[np.intp] | None]] = []
        self.base = 0

    def add(self, i: int, spec: Any, e_fwd: float, m: int, u: float) -> None:
        """Part i's spectrum raised to its power c, into the polar sums."""
        c = self.parts[i][1]
        cap_after = self.caps_after[i]
        pre = 0  # frequencies surely dropped after this part, left out before its envelope
        if self.keep is not None:
            spec = spec[self.keep]
        elif i == 0 and (few := _few_left(spec, e_fwd, c, cap_after, _DROP)) is not None:
            spec, self.keep, pre = spec[few], few, m - few.size
        if self.log_abs is None:
            size = m if self.keep is None else self.keep.size
            self.log_abs, self.arg, self.log_env, self.err_pow, self.sizes = (
                np.zeros(size) for _ in range(5))
        re = np.asarray(spec.real, dtype=np.float64)
        im = np.asarray(spec.imag, dtype=np.float64)
        re_m1 = np.asarray(spec.real - 1.0, dtype=np.float64)
        del spec
        y2 = re * re + im * im
        with quiet():
            env = np.log(np.sqrt(y2) + e_fwd)
        self.log_env += c * env
        # the frequencies dropped after this part (see _DROP), left out before the polar
        # power's transcendental functions: in a sum of many steps they are most of them
        alive = self.log_env + cap_after >= _DROP
        live = int(np.count_nonzero(alive))
        if pre or 8 * live < 7 * alive.size:  # a sizeable share: drop it
            self.dropped += pre + alive.size - live
            self.keep = alive.nonzero()[0] if self.keep is None else self.keep[alive]
            re, im, re_m1, y2, env = re[alive], im[alive], re_m1[alive], y2[alive], env[alive]
            self.log_abs, self.arg = self.log_abs[alive], self.arg[alive]
            self.log_env = self.log_env[alive]
            self.err_pow, self.sizes = self.err_pow[alive], self.sizes[alive]
        la, ph, err_c, size_c = polar_terms(re, im, re_m1, y2, c, u)
        self.log_abs += c * la
        self.arg += c * ph
        self.err_pow += err_c
        self.sizes += size_c
        self.fwd.append((env, e_fwd, c, self.keep))

    def spectrum(self, m: int, u: float) -> tuple[Any, FloatArray, FloatArray]:
        """(the composed spectrum on all m frequencies, its per-frequency error bound, its
        modulus), the polar sums turned back into complex numbers."""
        every = np.arange(m if self.keep is None or any(a is None for *_, a in self.fwd) else 0)
        keep = self.keep if self.keep is not None else every
        abs_k = np.exp(self.log_abs)
        err_k = np.zeros(keep.size)
        for env, e_fwd, c, at_or_all in self.fwd:
            at = at_or_all if at_or_all is not None else every
            env_k = env if at.size == keep.size else env[np.searchsorted(at, keep)]
            err_k += c * e_fwd * np.exp(self.log_env - env_k)
        with quiet():
            rel = np.expm1(self.err_pow + (8.0 + 2.0 * len(self.parts)) * u * (1.0 + self.sizes)
                           ) + 8.0 * u
        err_k += np.where(abs_k > 0.0, abs_k * rel, 0.0)
        abs_t = np.zeros(m)
        abs_t[keep] = abs_k
        spec_t = np.zeros(m, dtype=np.complex128)
        spec_t[keep] = abs_k * (np.cos(self.arg) + 1j * np.sin(self.arg))
        err_spec = np.zeros(m)
        err_spec[keep] = err_k
        del self.log_abs, self.arg, self.log_env, self.err_pow, self.sizes, self.fwd
        return spec_t, err_spec, abs_t
