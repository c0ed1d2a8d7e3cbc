"""The other neighbouring direction read off one direction's composition, where the two are
the same pair of distributions in swapped order.

For any pair of probability measures and any ε, the hockey-stick divergences of the two
orders determine each other (the events' complements):

    H_{e^ε}(Q ‖ P) = sup_E Q(E) − e^ε P(E) = 1 − e^ε + e^ε · H_{e^(−ε)}(P ‖ Q).

Poisson subsampling's two directions are such a pair: "remove" is (qA + (1 − q)B, B) and
"add" is (B, qA + (1 − q)B) (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9),
and a composition of swapped pairs is the swapped composition (the product measures swap
factor by factor). So one direction's composed PLD, read at −ε, bounds the other's δ at ε:
δ_other(ε) ≤ 1 − e^ε + e^ε · δ̃(−ε), with δ̃(x) = E_P̃[(1 − e^(x − L))₊] + P̃(L = ∞) of the
composed pessimistic discretization. That reading is an upper bound at every x, not only at
x ≥ 0, because of two facts that hold at every real x:

1. the integrand f_x(ℓ) = (1 − e^(x − ℓ))₊ is non-negative and non-decreasing in ℓ (and
   f_x(+∞) = 1), so E_P̃[f_x(L)] ≥ E_P[f_x(L)] whenever P̃ dominates P to first order (mass at
   or above every loss at least P's) and may carry extra mass;
2. the discretized step does dominate the exact connect-the-dots one to first order at every
   grid point, negative losses included: connect-the-dots keeps each interval's P- and
   Q-mass (Doroshenko et al. 2022, https://arxiv.org/abs/2207.04380, Sec. 3; by Jensen on
   y ↦ (1 − αy)₊, convex for every α > 0, it dominates the exact pair at every order α),
   mass below the grid is moved up to its lowest point (never dropped), mass above it goes to
   +∞, and the float guards and lifts only add mass or move it up. Convolution keeps
   first-order dominance and added mass.

So the read stays valid only while no step drops mass or moves it *down* anywhere, including
at losses below 0, which the ε ≥ 0 reads never look at: a change that applies the guards or
lifts at non-negative losses only would keep those reads right and break this one (the test
``test_one_step_swapped_bound_holds_the_exact_profile`` reads mass between −ε and 0).

The accountant uses this to certify the non-dominant direction below the dominant one's ε
without composing it (:func:`swapped_delta`): it costs a sum over the window already composed.
Where the window does not reach −ε, or the untilting there amplifies the FFT's round-off too
much (a large tilt λ and ε: the factor e^(2λε)), the bound is loose, and the caller composes
the other direction as before.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from approxdp.accounting.pld.compose import ComposedPLD
from approxdp.accounting.pld.discretized import Parts
from approxdp.accounting.pld.privacy_loss import SubsampledLoss

__all__ = ["is_swap", "swapped_delta"]

_U = float(np.finfo(np.float64).eps) / 2
_FLIP = {"remove": "add", "add": "remove"}


def _flipped(parts: Parts) -> list[tuple[object, int]] | None:
    """The keys of ``parts`` with every source's pair swapped, or None where some source is
    not a Poisson-subsampled pair (the only one known here to have its swap as a source)."""
    out: list[tuple[object, int]] = []
    for source, count in parts:
        if not isinstance(source, SubsampledLoss) or source.direction not in _FLIP:
            return None
        out.append((replace(source, direction=_FLIP[source.direction]).key, count))
    return out


def is_swap(parts: Parts, other: Parts) -> bool:
    """Whether ``other`` is ``parts`` with every step's pair swapped (the same steps, counts
    and order; Poisson-subsampled pairs only)."""
    flipped = _flipped(parts)
    return flipped is not None and flipped == [(s.key, c) for s, c in other]


def _delta_at(comp: ComposedPLD, x: float) -> float:
    """Certified upper bound on δ̃(x) = E[(1 − e^(x − S))₊] + P(S = ∞) of a composed PLD at
    any real x (:meth:`ComposedPLD.delta` serves x ≥ 0 only): the window's untilted masses
    above x, each entry's round-off bound (weighted as its mass), the mass at +∞, above the
    window and — where x is below the window — below it (aliased mass only adds: harmless
    for an upper bound)."""
    losses = (comp.offset + np.arange(comp.size)) * comp.h
    j = int(np.searchsorted(losses, x, side="right"))  # (ascending: losses > x from j on)
    lk = losses[j:]
    # the untilt factors e^(min(log_mgf − λl, 700)): those at l ≥ 0 are the composition's own
    # (the same floats, formed once there), the few in (x, 0) formed here
    nonneg = min(max(-comp.offset, 0), comp.size)
    with np.errstate(over="ignore"):
        if j < nonneg:
            untilt = np.concatenate((
                np.exp(np.minimum(comp.log_mgf - comp.lam * losses[j:nonneg], 700.0)),
                comp.untilt_factors()))
        else:
            untilt = comp.untilt_factors()[j - nonneg:]
    w = -np.expm1(x - lk)
    core = float((comp.tilted[j:] * untilt * w).sum())
    # each entry's round-off moves δ̃ by its bound times the entry's weight 1 − e^(x − l)
    rounding = comp.roundoff * float((untilt * w).sum())
    extra = comp.infinity_mass + math.exp(min(comp.log_beyond, 0.0))
    if x < comp.bottom:
        extra += math.exp(min(comp.log_below, 0.0))
    total = core + rounding + extra
    # (the sums' and the untilting's rounding, as ComposedPLD.delta)
    return total * (1.0 + 1e-10) if math.isfinite(total) else math.inf


def swapped_delta(comp: ComposedPLD, epsilon: float) -> float:
    """Certified upper bound on δ(ε), ε ≥ 0, of the *swapped* composition of ``comp``'s
    (not composed in blocks, whose regridding is only shown to dominate at ε ≥ 0 here):
    1 − e^ε + e^ε·δ̃(−ε); 1 where that is not below 1 (or ``comp`` is blocked)."""
    if comp.blocked or not (math.isfinite(epsilon) and epsilon >= 0.0):
        return 1.0
    d = _delta_at(comp, -epsilon)
    if not d < 1.0:
        return 1.0
    # δ̃(−ε) − (1 − e^(−ε)), each rounded to the safe side, then times e^ε
    gap = d - -math.expm1(-epsilon) * (1.0 - 4.0 * _U)
    if gap <= 0.0:  # (not reached while the bound holds: d carries its margins; decline)
        return 1.0
    return min(1.0, gap * (1.0 + 4.0 * _U) * math.exp(epsilon) * (1.0 + 1e-12))
