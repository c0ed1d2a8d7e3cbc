"""The excess model: how far the certified upper bound on ε sits above the true ε, as a
function of the grid step — what the refinement uses to pick the grid step (uncertified).

The connect-the-dots split (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, "Connect the
Dots: Tighter Discrete Approximations of Privacy Loss Distributions",
https://arxiv.org/abs/2207.04380) adds variance V_j(h) to step j; at the saddle point λ of the
answer (the tilt whose mean is ε: Lugannani, Rice 1980, https://doi.org/10.2307/1426607) that
raises the tilted log-MGF by ≈ Σ_j c_j V_j λ(1 + λ)/2, which moves ε by about that over the
slope −d log δ/dε.

- :class:`ExcessModel`: the model, evaluated at any grid step (:meth:`ExcessModel.at`).
- :func:`excess_model` (after a certified pass) / :func:`prior_model` (before any, from the
  saddle-point estimates of :mod:`approxdp.accounting.pld.estimates`).
- :func:`calibrated`: the model scaled by what two certified passes measured.

None of these is a bound: every number a caller reports comes from a certified pass.
(Moved out of :mod:`approxdp.accounting.pld.estimates`, which still re-exports them.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from approxdp.accounting.pld.compose import ComposedPLD, DiscretePLD
from approxdp.accounting.pld.discretized import (
    SPREADS,
    Parts,
    _stable,
    _step_tail,
    discretized_all,
)
from approxdp.accounting.pld.privacy_loss import LossSource
from approxdp.accounting.pld.quiet import quiet
from approxdp.accounting.pld.window import solve_tilt, support_of

#: ndarray.max / .sum without their Python wrappers (the same reductions)
_MAX, _SUM = np.maximum.reduce, np.add.reduce

__all__ = [
    "ExcessModel",
    "calibrated",
    "excess_model",
    "prior_model",
]


def _logsumexp(x: np.ndarray) -> float:
    """log Σ e^x (−inf for an empty or all −inf x): SciPy's logsumexp without its array-API
    dispatch, which costs ~1 ms a call here."""
    top = float(_MAX(x)) if x.size else -math.inf
    if not math.isfinite(top):
        return top
    return top + math.log(float(_SUM(np.exp(x - top))))


def _tilted_spread(pld: DiscretePLD, lam: float) -> float:
    """The connect-the-dots spread of one step under the λ-tilted measure: Σ_k v_k e^(λ m_k) /
    Σ_i p_i e^(λ l_i), m_k the interval's midpoint."""
    if pld.spread is None or pld.spread.size == 0:
        return 0.0
    losses = pld.losses  # (formed once: a property)
    with quiet():
        lp = pld.log_masses() + lam * losses
        ls = np.log(pld.spread) + lam * (losses[:-1] + 0.5 * pld.h)
    norm = _logsumexp(lp)
    top = float(_MAX(ls))
    if not (math.isfinite(norm) and math.isfinite(top)):
        return 0.0
    return math.exp(top - norm) * float(_SUM(np.exp(ls - top)))


@dataclass(frozen=True, slots=True)
class ExcessModel:
    """≈ how far the certified ε sits above the true ε, as a function of the grid step.

    The split adds variance V_j(h) to step j (mean V_j/2: it keeps E_P[e^(−L)]), which raises
    the tilted log-MGF by ΔK ≈ Σ_j c_j V_j λ(1 + λ)/2 at the saddle point λ of the answer
    (tilted mean = ε); δ(ε) moves by that factor and ε by about ΔK / s, s = −d log δ/dε =
    e^ε E[e^(−S); S > ε]/δ measured on the composed distribution (s ≈ λ for a near-Gaussian
    sum). ``scale`` corrects it by what two grids measured (:func:`calibrated`): where a few
    large losses make δ the model keeps its shape in h but not its constant."""

    parts: tuple[tuple[LossSource, int], ...]
    delta: float
    lam: float
    factor: float
    scale: float = 1.0
    gaussian: bool = False  # the saddle point's slope matched s: the model needs no calibration
    blocks: tuple[float, float] = (0.0, 1.0)  # (regridding spread, at grid step): ∝ h²
    #: (step tail, spread ratio, shift ratio): with many parts (a schedule), ``parts`` holds
    #: only those that make most of the spread, scaled up by what all of them made at the
    #: pass's grid (None: ``parts`` is the whole direction)
    subset: tuple[float, float, float] | None = None
    stable: bool = False  # the direction's discretizations use the stable split

    def at(self, h: float) -> float:
        """The estimated excess at grid step h (discretizes at h: cached)."""
        step_tail = (self.subset[0] if self.subset is not None
                     else _step_tail(self.parts, 1e-4 * self.delta))
        # (memoized: a pass's excess is asked for several times, each a sweep of its steps)
        key = (self.parts, step_tail, self.lam, self.stable, h)
        hit = SPREADS.get(key)
        if hit is None:
            plds = list(zip(discretized_all(self.parts, h, step_tail, self.stable),
                            (c for _, c in self.parts), strict=True))
            hit = (sum(c * _tilted_spread(p, self.lam) for p, c in plds),
                   # the split's float guard shifts every step's mean up (∝ 1/h: it can win
                   # at huge T)
                   sum(c * p.guard for p, c in plds))
            SPREADS.put(key, hit)
        spread, shift = cast(tuple[float, float], hit)
        if self.subset is not None:
            spread *= self.subset[1]
            shift *= self.subset[2]
        spread += self.blocks[0] * (h / self.blocks[1]) ** 2
        return self.scale * self.factor * spread + shift

    def with_scale(self, scale: float) -> ExcessModel:
        """The same model, scaled."""
        return ExcessModel(self.parts, self.delta, self.lam, self.factor, scale, self.gaussian,
                           self.blocks, self.subset, self.stable)


#: Parts the excess model follows one by one (beyond: the largest, scaled; it only picks grids)
_MODEL_PARTS = 6


def excess_model(
    parts: Parts, h: float, comp: ComposedPLD, eps: float, delta: float
) -> ExcessModel:
    """The excess model at the answer ``eps`` of the pass ``comp`` (grid step h)."""
    step_tail = _step_tail(parts, 1e-4 * delta)
    stable = _stable(parts)
    plds = list(zip(discretized_all(parts, h, step_tail, stable), (c for _, c in parts),
                    strict=True))
    lam = solve_tilt([(support_of(p), c) for p, c in plds], eps, start=comp.lam)
    slope = comp.slope(eps) / delta if delta > 0.0 else lam
    return _model(parts, plds, delta, lam, slope, (comp.block_spread, h), step_tail, stable)


def prior_model(parts: Parts, h: float, lam: float, slope: float, delta: float) -> ExcessModel:
    """The excess model before any pass: at the saddle point's tilt λ and slope −d log δ/dε
    (:func:`saddle_epsilon`), on the steps' discretizations at grid step h (those the pass
    there needs; one level: no blocks)."""
    step_tail = _step_tail(parts, 1e-4 * delta)
    stable = _stable(parts)
    plds = list(zip(discretized_all(parts, h, step_tail, stable), (c for _, c in parts),
                    strict=True))
    return _model(parts, plds, delta, lam, slope, (0.0, h), step_tail, stable)


def _near_gaussian(lam: float, slope: float) -> bool:
    """Whether a sum tilted at λ whose δ falls with slope −d log δ/dε = ``slope`` there is
    taken to be near-Gaussian (for a Gaussian sum the two agree): the excess model's flag."""
    return slope > 0.0 and 0.8 <= lam / slope <= 1.25 and lam >= 0.5


def _model(
    parts: Parts, plds: list[tuple[DiscretePLD, int]], delta: float, lam: float, slope: float,
    blocks: tuple[float, float], step_tail: float, stable: bool,
) -> ExcessModel:
    ratio = max(1.0, lam / slope) if slope > 0.0 else 1.0 + lam
    gaussian = _near_gaussian(lam, slope)
    kept, subset = tuple(parts), None
    if len(parts) > _MODEL_PARTS:  # a schedule: follow the parts that make most of the spread
        each = [(c * _tilted_spread(p, lam), c * p.guard) for p, c in plds]
        order = sorted(range(len(parts)), key=lambda i: -each[i][0])[:_MODEL_PARTS]
        spread, shift = sum(e[0] for e in each), sum(e[1] for e in each)
        part_spread = sum(each[i][0] for i in order)
        part_shift = sum(each[i][1] for i in order)
        if part_spread > 0.0:
            kept = tuple(parts[i] for i in order)
            subset = (step_tail, spread / part_spread,
                      shift / part_shift if part_shift > 0.0 else 1.0)
    return ExcessModel(kept, delta, lam, (1.0 + lam) / 2.0 * ratio, 1.0, gaussian,
                       blocks, subset, stable)


def calibrated(model: ExcessModel, coarse: tuple[float, float], fine: tuple[float, float]) -> (
    ExcessModel
):
    """``model`` scaled by what two certified passes measured: (h, ε) on a coarse and on a
    finer grid. The model's drop between them should be the drop of ε; where ε fell more,
    the model is scaled up (by at most 100), never down."""
    (h1, e1), (h2, e2) = coarse, fine
    base = model.with_scale(1.0)
    drop = base.at(h1) - base.at(h2)
    scale = model.scale
    if drop > 0.0 and e1 - e2 > drop * scale:
        scale = min(100.0, (e1 - e2) / drop)
    return model.with_scale(scale)
