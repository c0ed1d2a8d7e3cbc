"""What an event costs: its Gaussian part (Σ Δ²/σ²) and its (ε, δ) parts.

Dispatch is by event type (``functools.singledispatch``: a mechanism describes its release as an
event; only this module knows what each kind of event costs):

- ``GaussianEvent``: exact, contributes ρ = Δ²/σ² to the Gaussian part (Zhao et al. Lemma 15).
- ``LaplaceEvent``: (Δ/b, 0).  ``EpsilonDeltaEvent`` / ``DiscreteGaussianEvent``: their (ε, δ).
- ``SubsampledEvent``: the inner (ε, δ) (basic-composed if several) amplified by Poisson
  subsampling (D. Wang's notes, Thm 5.4). A subsampled *Gaussian* has no (ε, δ) of its own;
  wrap an ``EpsilonDeltaEvent`` carrying the point of its profile you want to account.
- ``ComposedEvent``: the sum of its parts.

:class:`LedgerState` is the sufficient statistic of a whole history: the Gaussian ρ and the
multiset of (ε, δ) parts. It is what the ledger stores and the accountant reasons about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import singledispatch

from approxdp.accounting.conversions import amplify_by_subsampling
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)

__all__ = ["Contribution", "LedgerState", "add_up", "check_cost", "contribution"]


def add_up(a: float, b: float) -> float:
    """a + b rounded towards +inf (the private side for accumulated costs)."""
    total = a + b
    return math.nextafter(total, math.inf) if b > 0 else total


@dataclass(frozen=True, slots=True)
class Contribution:
    """The cost of one event: Gaussian ρ = Σ Δ²/σ² and a tuple of (ε, δ) parts."""

    rho: float = 0.0
    items: tuple[tuple[float, float], ...] = ()

    def __add__(self, other: Contribution) -> Contribution:
        return Contribution(add_up(self.rho, other.rho), self.items + other.items)


@singledispatch
def contribution(event: object) -> Contribution:
    """The :class:`Contribution` of ``event``; raises ParameterTypeError for a non-event."""
    if isinstance(event, PrivacyEvent):
        raise ParameterTypeError(
            f"event type {type(event).__name__} has no privacy cost rule; "
            "compose it as an EpsilonDeltaEvent"
        )
    raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")


@contribution.register
def _(event: GaussianEvent) -> Contribution:
    if math.isinf(event.sigma) or event.sensitivity == 0.0:
        return Contribution()
    ratio = event.sensitivity / event.sigma
    return Contribution(rho=math.nextafter(ratio * ratio, math.inf))


@contribution.register
def _(event: LaplaceEvent) -> Contribution:
    return Contribution(items=((event.epsilon, 0.0),))


@contribution.register
def _(event: EpsilonDeltaEvent) -> Contribution:
    return Contribution(items=((event.epsilon, event.delta),))


@contribution.register
def _(event: DiscreteGaussianEvent) -> Contribution:
    return Contribution(items=((event.epsilon, event.delta),))


@contribution.register
def _(event: ComposedEvent) -> Contribution:
    total = Contribution()
    for inner in event.events:
        total = total + contribution(inner)
    return total


@contribution.register
def _(event: SubsampledEvent) -> Contribution:
    inner = contribution(event.event)
    if inner.rho > 0:
        raise InvalidParameterError(
            "a SubsampledEvent of a GaussianEvent has no closed-form (epsilon, delta); wrap "
            "an EpsilonDeltaEvent with the point of its profile you want to account instead"
        )
    if not inner.items:
        return Contribution()
    eps = math.fsum(e for e, _ in inner.items)
    delta = min(1.0 - 1e-16, math.fsum(d for _, d in inner.items))
    amplified = amplify_by_subsampling(eps, delta, event.q)
    return Contribution(items=((float(amplified.epsilon), float(amplified.delta)),))


def check_cost(event: object, contrib: Contribution) -> Contribution:
    """``contrib`` if every part of it is a finite cost, else InvalidParameterError.

    A Gaussian with σ/Δ below about 1e-154 costs Δ²/σ² = inf, a Laplace event with Δ/b beyond
    the largest float ε = inf: no finite (ε, δ) describes them, so no ledger may record them
    (its totals would become inf and every status after it meaningless).
    """
    if not math.isfinite(contrib.rho):
        raise InvalidParameterError(
            f"{event!r} costs rho = sensitivity²/sigma² = inf (sigma/sensitivity below about "
            "1e-154): no finite (epsilon, delta) describes it, so it cannot be accounted; use "
            "a larger sigma"
        )
    for eps, _ in contrib.items:
        if not math.isfinite(eps):
            raise InvalidParameterError(
                f"{event!r} costs epsilon = {eps}: no finite (epsilon, delta) describes it, "
                "so it cannot be accounted"
            )
    return contrib


@dataclass(frozen=True, slots=True)
class LedgerState:
    """Sufficient statistic of a spend history.

    Attributes:
        rho: Σ Δᵢ²/σᵢ² over every Gaussian release (σ* = rho^(−1/2)), rounded up.
        groups: sorted tuple of (ε, δ, count): the multiset of (ε, δ) parts.
        count: number of recorded spends.
    """

    rho: float = 0.0
    groups: tuple[tuple[float, float, int], ...] = ()
    count: int = 0

    def add(self, contrib: Contribution, times: int = 1) -> LedgerState:
        """The state after ``times`` more spends of ``contrib`` (O(1) in ``times``)."""
        counts = {(e, d): c for e, d, c in self.groups}
        for item in contrib.items:
            counts[item] = counts.get(item, 0) + times
        groups = tuple(sorted((e, d, c) for (e, d), c in counts.items()))
        rho = contrib.rho * times if times > 1 else contrib.rho
        if times > 1 and rho > 0:
            rho = math.nextafter(rho, math.inf)  # the product rounded up (private side)
        return LedgerState(add_up(self.rho, rho), groups, self.count + times)

    @property
    def n_items(self) -> int:
        """Number of (ε, δ) parts."""
        return sum(c for _, _, c in self.groups)
