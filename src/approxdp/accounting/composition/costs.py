"""What an event costs: its Gaussian part (Σ Δ²/σ²) and its (ε, δ) parts.

Dispatch is by event type (``functools.singledispatch``: a mechanism describes its release as an
event; only this module knows what each kind of event costs):

- ``GaussianEvent``: exact, contributes ρ = Δ²/σ² to the Gaussian part (Zhao et al. Lemma 15).
- ``LaplaceEvent``: (Δ/b, 0).  ``EpsilonDeltaEvent`` / ``DiscreteGaussianEvent``: their (ε, δ).
- ``SubsampledEvent``: the inner (ε, δ) (basic-composed if several) amplified by Poisson
  subsampling (D. Wang's notes, Thm 5.4). A subsampled *Gaussian* has no (ε, δ) of its own: it
  is accounted by its privacy-loss distribution only (the PLD rule, and ``auto``).
- ``ComposedEvent``: the sum of its parts.

Besides the closed-form parts, every non-Gaussian atomic event contributes its canonical
description (:func:`~approxdp.accounting.serialization.event_key`): the PLD accountant
(:mod:`approxdp.accounting.pld.accounting`) re-accounts the whole history from those
descriptions and the Gaussian ρ.

:class:`LedgerState` is the sufficient statistic of a whole history: the Gaussian ρ, the
multiset of (ε, δ) parts and the multiset of event descriptions. It is what the ledger stores
and the accountant reasons about.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from functools import lru_cache, singledispatch
from typing import TYPE_CHECKING

from approxdp.accounting.composition.conversions import amplify_by_subsampling
from approxdp.accounting.serialization import event_key
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

if TYPE_CHECKING:
    from approxdp.accounting.composition.filter_state import FilterState

__all__ = [
    "Contribution",
    "LedgerState",
    "add_up",
    "check_cost",
    "contribution",
    "is_pld_only",
]


def add_up(a: float, b: float) -> float:
    """a + b rounded towards +inf (the private side for accumulated costs)."""
    total = a + b
    return math.nextafter(total, math.inf) if b > 0 else total


@lru_cache(maxsize=4096)
def is_pld_only(key: str) -> bool:
    """True for an event only the PLD accountant can account: a subsampled Gaussian."""
    obj = json.loads(key)
    return bool(obj.get("type") == "SubsampledEvent" and obj["event"]["type"] == "GaussianEvent")


@dataclass(frozen=True, slots=True)
class Contribution:
    """The cost of one event: Gaussian ρ = Σ Δ²/σ², a tuple of (ε, δ) parts, and the canonical
    descriptions of its non-Gaussian atomic events (for the PLD accountant)."""

    rho: float = 0.0
    items: tuple[tuple[float, float], ...] = ()
    pld: tuple[str, ...] = ()

    def __add__(self, other: Contribution) -> Contribution:
        return Contribution(
            add_up(self.rho, other.rho), self.items + other.items, self.pld + other.pld
        )


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
    return Contribution(items=((event.epsilon, 0.0),), pld=(event_key(event),))


@contribution.register
def _(event: EpsilonDeltaEvent) -> Contribution:
    return Contribution(items=((event.epsilon, event.delta),), pld=(event_key(event),))


@contribution.register
def _(event: DiscreteGaussianEvent) -> Contribution:
    return Contribution(items=((event.epsilon, event.delta),), pld=(event_key(event),))


@contribution.register
def _(event: ComposedEvent) -> Contribution:
    total = Contribution()
    for inner in event.events:
        total = total + contribution(inner)
    return total


@contribution.register
def _(event: SubsampledEvent) -> Contribution:
    inner = contribution(event.event)
    if isinstance(event.event, GaussianEvent):
        # no closed-form (ε, δ): its privacy-loss distribution describes it exactly
        return Contribution(pld=(event_key(event),)) if inner.rho > 0 else Contribution()
    if inner.rho > 0:
        raise InvalidParameterError(
            "a SubsampledEvent of a ComposedEvent with Gaussian parts cannot be accounted; "
            "subsample each GaussianEvent on its own (SubsampledEvent(GaussianEvent(...), q))"
        )
    if not inner.items:
        return Contribution()
    eps = math.fsum(e for e, _ in inner.items)
    delta = min(1.0 - 1e-16, math.fsum(d for _, d in inner.items))
    amplified = amplify_by_subsampling(eps, delta, event.q)
    item = (float(amplified.epsilon), float(amplified.delta))
    if isinstance(event.event, ComposedEvent):
        # the PLD has no loss distribution for a subsampled composition: its amplified (ε, δ)
        key = event_key(EpsilonDeltaEvent(item[0], item[1]))
    else:
        key = event_key(event)
    return Contribution(items=(item,), pld=(key,))


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
        pld: sorted tuple of (event description, count): the multiset of non-Gaussian atomic
            events (:func:`~approxdp.accounting.serialization.event_key`), from which the PLD
            rule re-accounts the history.
        filter: the privacy filter's state (:mod:`approxdp.accounting.budget.filter`) for a
            ledger that is one (``adaptivity="full"``), else None. :meth:`add` keeps it: the
            filter decides its next state itself.
    """

    rho: float = 0.0
    groups: tuple[tuple[float, float, int], ...] = ()
    count: int = 0
    pld: tuple[tuple[str, int], ...] = ()
    filter: FilterState | None = None

    def add(self, contrib: Contribution, times: int = 1) -> LedgerState:
        """The state after ``times`` more spends of ``contrib`` (O(1) in ``times``)."""
        counts = {(e, d): c for e, d, c in self.groups}
        for item in contrib.items:
            counts[item] = counts.get(item, 0) + times
        groups = tuple(sorted((e, d, c) for (e, d), c in counts.items()))
        keys = dict(self.pld)
        for key in contrib.pld:
            keys[key] = keys.get(key, 0) + times
        rho = contrib.rho * times if times > 1 else contrib.rho
        if times > 1 and rho > 0:
            rho = math.nextafter(rho, math.inf)  # the product rounded up (private side)
        return LedgerState(
            add_up(self.rho, rho), groups, self.count + times, tuple(sorted(keys.items())),
            self.filter,
        )

    def with_filter(self, state: FilterState | None) -> LedgerState:
        """The same statistic with the filter's state replaced."""
        return dataclasses.replace(self, filter=state)

    @property
    def pld_only(self) -> bool:
        """True if some event of the history can be accounted by the PLD rule only."""
        return any(is_pld_only(key) for key, _ in self.pld)

    @property
    def n_items(self) -> int:
        """Number of (ε, δ) parts."""
        return sum(c for _, _, c in self.groups)
