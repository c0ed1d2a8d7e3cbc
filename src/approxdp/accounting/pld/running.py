"""A composition kept running: parts added one at a time on a fixed grid, window and tilt.

:func:`~approxdp.accounting.pld.compose.compose` composes a whole history at once: it plans a
window from the composed distribution's Chernoff bounds, then transforms every part. A
training run is asked for (ε, δ) after every epoch while its history grows a phase at a time;
recomposing it all at every ask costs a planning and an FFT per phase each time. Here the
window (its tilt λ, its first grid index and its FFT size) and the Chernoff exponents θ of
its edges are fixed once — planned for a history larger than the present one, with headroom —
and every quantity the composition needs is a *sum over the parts*, kept as it grows:

- the composed spectrum in polar form, Σ_j c_j log y_j (modulus and phase), with the
  per-frequency error terms of :func:`~approxdp.accounting.pld.compose._fft_power` (each a
  sum over parts: the log-bound on |y_j| + e_j, the forward transforms' error share, the
  polar power's relative error), so that an ask is one inverse FFT;
- the exact log moment generating function of the composed discretized loss at the tilt and
  at the three fixed Chernoff points (K(u) = Σ_j c_j log M_j(u)): Chernoff's bound
  e^(K(θ) − θb) on the mass beyond an edge b holds for *any* θ ≥ 0 (Koskela et al. 2021,
  https://arxiv.org/abs/2006.07134, Sec. 4), so a θ planned for another history is still
  certified, only perhaps looser — and the edges above the window are also bounded at
  :data:`_ALIAS_SHARES` of their planned points (the least bound kept): parts heavier than
  those planned for (a phase of lower σ) can void the bound at the planned point only;
- the mass at +∞ (Σ_j c_j log(1 − p∞_j)) and the support's extent.

As in ``_fft_power``, a frequency whose bound on the composed |Y| (with the forward
transforms' errors) has fallen below e^_DROP is no longer followed (|Y| there only shrinks
as parts are added, to the parts' mass bounds): the round-off bound adds, for each dropped
frequency, e^(its bound when dropped + the mass bounds' logs of the parts added since).

A part whose count grows (the last phase of a run, extended step by step) is added again
with the extra count: y^(c₁) · y^(c₂) = y^(c₁+c₂), and every error term is a sum over what
was added. The result is a :class:`~approxdp.accounting.pld.composed.ComposedPLD` with the
same fields :func:`compose` fills, so the certified bounds read off it are the same code.

The float error terms are those of ``_fft_power`` (float64 path; see there), except that the
sums over parts are charged (8 + 2k)·u instead of 8u of the summed sizes, k the number of
parts added: a sum of k terms in floating point errs by at most (k − 1)·u of the sum of their
magnitudes (Higham 2002, *Accuracy and Stability of Numerical Algorithms*, Sec. 4.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import fft as sfft

from approxdp.accounting.pld.compose import (
    _DROP,
    MAX_WINDOW,
    ComposedPLD,
    DiscretePLD,
    WindowTooLargeError,
    _rebound,
)
from approxdp.accounting.pld.spectrum import fold_rolled, polar_terms, rolled
from approxdp.accounting.pld.window import (
    Window,
    exact_planning,
    plan_window,
    planning_supports,
    support_of,
)

__all__ = ["RunningComposition", "plan_running"]

FloatArray = npt.NDArray[np.float64]
_U = float(np.finfo(np.float64).eps) / 2
#: The least positive float: an absolute floor on each frequency's error bound, for the
#: products of bounds that underflow to 0 (see :meth:`RunningComposition.composed`).
_TINY = math.ulp(0.0)
#: shares of the planned θ_a at which K is also kept: a part heavier than those planned for
#: (a phase of lower σ) can make the planned point's bound void, a smaller θ's not
_ALIAS_SHARES = (0.5, 0.25)


def _log_mgfs(p: DiscretePLD, us: Sequence[float]) -> list[float]:
    """log Σ_i p_i e^(u·l_i) over the finite masses of a plain measure, at each u of ``us``
    (one pass over the masses for all); +∞ where it overflows (a Chernoff bound at such a
    point is then void: capped at 1 by its reader)."""
    keep = p.pmf > 0.0
    if not bool(keep.any()):
        return [-math.inf] * len(us)
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.log(p.pmf[keep])[None, :] + np.asarray(us, dtype=np.float64)[:, None] * (
            p.losses[keep][None, :])
        top = a.max(axis=1)
        ok = np.isfinite(top)
        top = np.where(ok, top, 0.0)
        out = top + np.log(np.exp(a - top[:, None]).sum(axis=1))
    return [float(v) if good and math.isfinite(v) else math.inf
            for v, good in zip(out, ok, strict=True)]


class RunningComposition:
    """The composition of parts (plain discretized measures on the grid step ``h``, each with
    a count) on a fixed FFT window: ``n`` points from grid index ``a_idx``, tilted by ``lam``,
    its edges bounded at the fixed Chernoff points ``theta_beyond`` (the true mass above the
    top, at u = θ), ``theta_alias`` (the tilted mass above it, at u = λ + θ) and
    ``theta_below`` (the true mass below the bottom, at u = −θ). Parts are added with
    :meth:`add`; :meth:`composed` gives the certified composition of all added so far."""

    def __init__(
        self, *, h: float, lam: float, a_idx: int, n: int, theta_beyond: float,
        theta_alias: float, theta_below: float, lam_target: float | None = None,
    ) -> None:
        if n > MAX_WINDOW:
            raise WindowTooLargeError(
                f"the running window needs {n} points (at most {MAX_WINDOW})", needed=n
            )
        self.h = h
        self.lam = lam
        self.a_idx = a_idx
        self.n = n
        self.lam_target = lam_target
        self._thetas = (theta_beyond, theta_alias, theta_below)
        m = n // 2 + 1
        self._keep = np.arange(m)  # the frequencies still followed (see _add_spectrum)
        self._dropped = 0
        self._drop_excess = -math.inf  # max over dropped f of log_env_f − _cap then
        self._cap = 0.0  # Σ c log(a bound on max |y| + e_fwd): what a later part can add
        self._log_abs = np.zeros(m)
        self._arg = np.zeros(m)
        self._log_env = np.zeros(m)
        self._err_pow = np.zeros(m)
        self._sizes = np.zeros(m)
        self._fwd = np.zeros(m)  # Σ c_j e_j / (|y_j| + e_j): the forward errors' share
        self._base = 0
        self._log_mgf = 0.0
        self._k = [0.0, 0.0, 0.0]  # K at θ_b, λ + θ_a, −θ_l
        self._k_alias = [0.0] * len(_ALIAS_SHARES)  # K at λ + f·θ_a
        self._k_beyond = [0.0] * len(_ALIAS_SHARES)  # K at f·θ_b
        self._log_free = 0.0  # Σ c log(1 − p∞)
        self._certain_infinity = False
        self._empty = False  # a part with no finite loss at all
        self._lo = 0
        self._hi = 0
        self.steps = 0
        self.adds = 0

    def add(self, p: DiscretePLD, count: int) -> None:
        """Compose ``count`` more copies of the plain measure ``p`` (grid step ``h``)."""
        if p.h != self.h or p.tilt != 0.0 or p.log_norm != 0.0:
            raise ValueError("a running composition takes plain measures on its grid")
        c = int(count)
        self.steps += c
        self.adds += 1
        self._lo += c * p.offset
        self._hi += c * (p.offset + p.pmf.size - 1)
        if p.infinity_mass >= 1.0:
            self._certain_infinity = True
        else:
            self._log_free += c * math.log1p(-p.infinity_mass)
        if not bool((p.pmf > 0.0).any()):
            self._empty = True
            return
        th_b, th_a, th_l = self._thetas
        shares = len(_ALIAS_SHARES)
        ks = _log_mgfs(p, [th_b, self.lam + th_a, -th_l,
                           *(self.lam + f * th_a for f in _ALIAS_SHARES),
                           *(f * th_b for f in _ALIAS_SHARES)])
        for i in range(3):
            self._k[i] += c * ks[i]
        for i in range(shares):
            self._k_alias[i] += c * ks[3 + i]
            self._k_beyond[i] += c * ks[3 + shares + i]
        self._add_spectrum(p, c)

    def _add_spectrum(self, p: DiscretePLD, c: int) -> None:
        """The part's tilted spectrum in polar form, with its error terms (as ``_fft_power``
        forms them for one part, float64)."""
        n, u = self.n, _U
        log2n = math.log2(n)
        losses = (p.offset + np.arange(p.pmf.size, dtype=np.float64)) * p.h
        with np.errstate(divide="ignore"):
            lt = np.log(np.maximum(p.pmf, 0.0))
        lt += self.lam * losses
        top = float(lt.max())
        norm = top + math.log(float(np.exp(lt - top).sum()))
        tilted = np.exp(lt - norm)
        del lt, losses
        self._log_mgf += c * norm
        mass = float(tilted.sum())
        shift = round(float((tilted * np.arange(tilted.size)).sum()) / mass)
        folds = -(-p.pmf.size // n)
        folded = fold_rolled(tilted, n, shift, np.float64)
        del tilted
        self._base += c * (p.offset + shift)
        spec = sfft.rfft(folded)
        e_fwd = (4.0 * log2n + folds) * u * float(np.sum(np.abs(folded)))
        # |y| + e_fwd ≤ mass + e_fwd at every frequency (as _fft_power's cap)
        self._cap += c * math.log(mass * (1.0 + 1e-9) * (1.0 + 1.001 * (4.0 * log2n + folds) * u))
        if self._keep.size < spec.size:
            spec = spec[self._keep]
        re = spec.real
        im = spec.imag
        re_m1 = spec.real - 1.0
        y2 = re * re + im * im
        la, ph, err_c, size_c = polar_terms(re, im, re_m1, y2, c, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            env = np.log(np.sqrt(y2) + e_fwd)
        self._log_abs += c * la
        self._arg += c * ph
        self._log_env += c * env
        self._err_pow += err_c
        self._sizes += size_c
        self._fwd += c * e_fwd * np.exp(-env)
        # as _fft_power: a frequency whose bound e^log_env on the composed |Y| (with the
        # forward errors) fell below e^_DROP is no longer followed: its |Y| is then at most
        # e^(log_env + the caps of the parts added since), added to the round-off bound
        alive = self._log_env >= _DROP
        if 8 * int(np.count_nonzero(alive)) < 7 * alive.size:
            gone = ~alive
            self._drop_excess = max(self._drop_excess,
                                    float(self._log_env[gone].max()) - self._cap)
            self._dropped += int(np.count_nonzero(gone))
            self._keep = self._keep[alive]
            for name in ("_log_abs", "_arg", "_log_env", "_err_pow", "_sizes", "_fwd"):
                setattr(self, name, getattr(self, name)[alive])

    def composed(self) -> ComposedPLD:
        """The certified composition of every part added (none added: no loss at all)."""
        h, n = self.h, self.n
        infinity = 1.0 if self._certain_infinity else -math.expm1(self._log_free)
        if self._empty or self.adds == 0:
            return ComposedPLD(
                h=h, offset=0, tilted=np.zeros(1), lam=0.0,
                log_mgf=-math.inf if self._empty else 0.0, infinity_mass=infinity,
                roundoff=0.0, log_beyond=-math.inf, log_alias_up=-math.inf,
                log_alias_low=-math.inf, log_below=-math.inf, steps=self.steps,
            )
        u = _U
        log2n = math.log2(n)
        abs_k = np.exp(self._log_abs)
        # Σ_j c_j e_j Π_i (|y_i| + e_i)^c_i / (|y_j| + e_j); the floor covers its underflow
        with np.errstate(over="ignore", under="ignore"):
            err = np.exp(self._log_env) * self._fwd * (1.0 + 8.0 * u) + self.steps * _TINY
            rel = np.expm1(self._err_pow + (8.0 + 2.0 * self.adds) * u * (1.0 + self._sizes))
        err += np.where(abs_k > 0.0, abs_k * (rel + 8.0 * u), 0.0)
        m = n // 2 + 1
        spec = np.zeros(m, dtype=np.complex128)
        spec[self._keep] = abs_k * (np.cos(self._arg) + 1j * np.sin(self._arg))
        comp = sfft.irfft(spec, n=n)
        weight = np.full(m, 2.0)
        weight[0] = 1.0
        if n % 2 == 0:
            weight[-1] = 1.0
        weight = weight[self._keep]
        # the dropped frequencies' |Y| (the least positive float at the least, as _fft_power)
        with np.errstate(over="ignore", under="ignore"):
            dropped = max(math.exp(min(self._drop_excess + self._cap, 709.0)), _TINY)
        roundoff = 1.001 * (
            float((weight * err).sum()) / n
            + 4.0 * log2n * u * float((weight * abs_k).sum()) / n
            + u * float(np.max(np.abs(comp)))
            + 2.0 * self._dropped * dropped / n
        )
        top = (self.a_idx + n) * h
        th_b, th_a, th_l = self._thetas
        k_b, k_a, k_l = self._k
        if self.a_idx + n > self._hi:
            log_beyond = log_alias_up = -math.inf
        else:
            log_beyond = min(0.0, k_b - th_b * top)
            log_alias_up = k_a - th_a * top
            planned = th_a  # (each share is of the planned θ, whichever share won before)
            for f, k_f, k_g in zip(_ALIAS_SHARES, self._k_alias, self._k_beyond, strict=True):
                if k_f - f * planned * top < log_alias_up:
                    log_alias_up, th_a = k_f - f * planned * top, f * planned
                log_beyond = min(log_beyond, k_g - f * th_b * top)
        if self.a_idx <= self._lo:
            log_below = log_alias_low = -math.inf
        else:
            log_below = min(0.0, k_l + th_l * self.a_idx * h)
            log_alias_low = log_below - self.lam * n * h
        return ComposedPLD(
            h=h, offset=self.a_idx, tilted=rolled(comp, self.a_idx - self._base),
            lam=self.lam, log_mgf=self._log_mgf, infinity_mass=infinity, roundoff=roundoff,
            log_beyond=log_beyond, log_alias_up=log_alias_up, log_alias_low=log_alias_low,
            log_below=log_below, steps=self.steps, lam_target=self.lam_target,
            alias_theta=th_a,
        )


def plan_running(
    parts: Sequence[tuple[DiscretePLD, int]], *, tail: float, tilt_at: float | None,
    below: float | None, exact: bool = False, window: Window | None = None,
    lam_shift: float = 0.0, merged: bool = False, lam: float | None = None,
) -> RunningComposition:
    """An empty running composition whose window is planned as :func:`compose` plans one for
    ``parts`` (e.g. a history with headroom: the parts with their counts scaled up), or on a
    given ``window`` with its tilt moved by ``lam_shift`` (the Q-measure of a rounded loss on
    its P-measure's window); ``exact``: planned on the exact supports (the lower bound's).
    Nothing is added: the parts only size the window and its Chernoff points."""
    h = parts[0][0].h
    supports = [(support_of(p), c) for p, c in parts]
    lo = sum(c * p.offset for p, c in parts)
    hi = sum(c * (p.offset + p.pmf.size - 1) for p, c in parts)
    if window is None:
        if exact:
            with exact_planning():
                window = plan_window(supports, h=h, tilt_at=tilt_at, log_tail=math.log(tail),
                                     support=(lo, hi), below=below, delta_scale=1e4 * tail,
                                     lam=lam)
        else:
            window = plan_window(supports, h=h, tilt_at=tilt_at, log_tail=math.log(tail),
                                 support=(lo, hi), below=below, delta_scale=1e4 * tail,
                                 lam=lam)
        n = int(sfft.next_fast_len(window.n, real=True))
    else:
        n = window.n
    if n > MAX_WINDOW:
        raise WindowTooLargeError(f"the running window needs {n} points", needed=n)
    # the θ's only choose where the Chernoff bounds are read (the composition sums K(θ)
    # exactly over its parts): ``merged``, found on the merged supports a schedule is
    # planned on (cheaper; else on the exact ones, as compose() finds them)
    sup = planning_supports(supports) if merged else supports
    win = _rebound(sup, Window(window.lam, window.a_idx, n, window.beyond, window.alias,
                               window.below), lam_shift, h)
    return RunningComposition(
        h=h, lam=window.lam + lam_shift, a_idx=window.a_idx, n=n, theta_beyond=win.beyond[0],
        theta_alias=win.alias[0], theta_below=win.below[0], lam_target=tilt_at,
    )
