"""What each atomic part of an event costs in the privacy filter's currencies.

The filter (:mod:`approxdp.accounting.budget.filter`) charges an event part by part: a plain
Gaussian release its exact μ² = Δ²/σ² in Gaussian-DP room (Smith & Thakurta 2022,
arXiv:2210.17520), a pure-ε part its least dominating μ² (:mod:`~approxdp.accounting.budget.gdp`),
and a part with δ > 0 that no Gaussian dominates its own (ε, δ) for a basic share (Rogers et al.
2016, arXiv:1605.08294). A subsampled Gaussian is dominated by its own Gaussian (joint convexity
of the hockey-stick divergence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache, singledispatch

from approxdp.accounting.budget.gdp import laplace_mu, pure_dp_mu
from approxdp.accounting.composition.costs import contribution
from approxdp.accounting.composition.filter_state import ZERO
from approxdp.accounting.serialization import event_from_json, event_key
from approxdp.errors import ParameterTypeError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)

__all__ = ["PartCost", "part_costs"]


@dataclass(frozen=True, slots=True)
class PartCost:
    """The cost of one atomic part of an event in the filter's currencies.

    Attributes:
        key: the part's canonical description (what a declared block's PLD composes).
        gdp: μ² in Gaussian-DP room (rounded up), or None if no Gaussian dominates the part.
        basic: its (ε, δ) for a basic share, or None if it has none of its own (a Gaussian).
        gaussian: True for a plain Gaussian release (declared blocks charge it exactly).
        subsampled: True for a subsampled Gaussian (a Rényi share charges it first).
    """

    key: str
    gdp: float | None
    basic: tuple[Fraction, Fraction] | None
    gaussian: bool = False
    subsampled: bool = False


def _square_up(mu: float) -> float:
    return math.nextafter(mu * mu, math.inf) if mu > 0.0 else 0.0


def _pure(key: str, eps: float, mu: float | None) -> PartCost:
    return PartCost(key, _square_up(mu if mu is not None else pure_dp_mu(eps)),
                    (Fraction(eps), ZERO))


@singledispatch
def _parts(event: object) -> tuple[PartCost, ...]:
    raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")


@_parts.register
def _(event: GaussianEvent) -> tuple[PartCost, ...]:
    rho = contribution(event).rho
    return (PartCost(event_key(event), rho, None, gaussian=True),) if rho > 0 else ()


@_parts.register
def _(event: LaplaceEvent) -> tuple[PartCost, ...]:
    eps = event.epsilon
    return (_pure(event_key(event), eps, laplace_mu(eps)),) if eps > 0 else ()


@_parts.register
def _(event: EpsilonDeltaEvent) -> tuple[PartCost, ...]:
    return _described(event_key(event), event.epsilon, event.delta)


@_parts.register
def _(event: DiscreteGaussianEvent) -> tuple[PartCost, ...]:
    # its calibrated (ε, δ) (the profile of Canonne et al. 2020); no Gaussian-DP claim is made
    return _described(event_key(event), event.epsilon, event.delta)


def _described(key: str, eps: float, delta: float) -> tuple[PartCost, ...]:
    if delta == 0.0:
        return (_pure(key, eps, None),) if eps > 0 else ()
    return (PartCost(key, None, (Fraction(eps), Fraction(delta))),)


@_parts.register
def _(event: ComposedEvent) -> tuple[PartCost, ...]:
    return tuple(p for inner in event.events for p in _parts(inner))


@_parts.register
def _(event: SubsampledEvent) -> tuple[PartCost, ...]:
    contrib = contribution(event)  # validates it (a subsampled mix with Gaussians raises)
    if isinstance(event.event, GaussianEvent):
        # dominated by its own Gaussian (joint convexity of the hockey-stick divergence), which
        # is all a Gaussian-DP room can say of it: no amplification after the first spend
        rho = contribution(event.event).rho
        return (PartCost(event_key(event), rho, None, subsampled=True),) if rho > 0 else ()
    if not contrib.items:
        return ()
    ((eps, delta),) = contrib.items
    return _described(contrib.pld[0], eps, delta)


@lru_cache(maxsize=4096)
def _parts_of_key(key: str) -> tuple[PartCost, ...]:
    return _parts(event_from_json(key))


def part_costs(event: PrivacyEvent) -> tuple[PartCost, ...]:
    """The atomic parts of ``event`` and what each costs (cached by the event's key)."""
    if not isinstance(event, PrivacyEvent):
        raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")
    return _parts_of_key(event_key(event))

