"""Privacy events as pairs of privacy-loss distributions (the PLD accountant's input).

Each event becomes one :class:`LossPair` per atomic release: the loss distribution when the
neighbour is removed and when it is added (Zhu, Dong, Wang 2022,
https://arxiv.org/abs/2106.08567, Sec. 5). Plain Gaussians are kept as their Δ²/σ², merged into
one Gaussian by the accountant (Zhao et al. 2019, https://arxiv.org/abs/1911.12060, Lemma 15).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import singledispatch

import numpy as np

from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    GaussianLoss,
    LaplaceLoss,
    LossSource,
    SubsampledLoss,
)
from approxdp.accounting.pld.quiet import quiet
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

__all__ = ["LossPair", "event_losses", "gaussian_source"]


@dataclass(frozen=True, slots=True)
class LossPair:
    """The two loss distributions of one event: neighbour removed, neighbour added.

    ``gaussian_rho`` is set instead for a plain Gaussian event (Δ²/σ²): those are merged.
    """

    remove: LossSource | None
    add: LossSource | None
    gaussian_rho: float = 0.0


#: Above this Δ/σ a Gaussian protects next to nothing (δ(ε) ≈ 1 until ε ~ μ²/2 = 5e9) and its
#: loss grid would not fit: it is accounted as the vacuous pair (δ = 1 at every ε), which is
#: never below the truth.
_MAX_MU = 1e5


#: Above this σ the discrete Gaussian's atom table (O(σ)) costs more than it gains: the event's
#: own certified (ε, δ) is used instead (never below the truth, a little looser).
_MAX_DISCRETE_SIGMA = 1e4


def gaussian_source(mu: float) -> LossSource:
    return GaussianLoss(mu) if mu <= _MAX_MU else EpsilonDeltaLoss(0.0, 1.0)


def _inner_source(event: PrivacyEvent) -> LossSource:
    """The symmetric loss distribution of an event that can be subsampled."""
    if isinstance(event, GaussianEvent):
        if math.isinf(event.sigma) or event.sensitivity == 0.0:
            return EpsilonDeltaLoss(0.0, 0.0)
        with quiet():
            mu = float(np.float64(event.sensitivity) / np.float64(event.sigma))
        return gaussian_source(mu)
    if isinstance(event, LaplaceEvent):
        return LaplaceLoss(event.epsilon)
    if isinstance(event, EpsilonDeltaEvent):
        return EpsilonDeltaLoss(event.epsilon, event.delta)
    if isinstance(event, DiscreteGaussianEvent):
        d = event.sensitivity
        if d == 0.0:
            return EpsilonDeltaLoss(0.0, 0.0)
        if float(d).is_integer() and event.sigma <= _MAX_DISCRETE_SIGMA:
            return DiscreteGaussianLoss(event.sigma, int(d))
        return EpsilonDeltaLoss(event.epsilon, event.delta)
    raise InvalidParameterError(
        f"a SubsampledEvent of a {type(event).__name__} has no privacy loss distribution; "
        "subsample a GaussianEvent, LaplaceEvent, DiscreteGaussianEvent or EpsilonDeltaEvent"
    )


@singledispatch
def event_losses(event: object) -> list[LossPair]:
    """The loss distributions of ``event`` (one :class:`LossPair` per atomic release)."""
    if isinstance(event, PrivacyEvent):
        raise ParameterTypeError(
            f"event type {type(event).__name__} has no privacy loss distribution"
        )
    raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")


@event_losses.register
def _(event: GaussianEvent) -> list[LossPair]:
    if math.isinf(event.sigma) or event.sensitivity == 0.0:
        return []
    with quiet():
        ratio = float(np.float64(event.sensitivity) / np.float64(event.sigma))
        rho = float(np.float64(ratio) * np.float64(ratio))
    return [LossPair(None, None, gaussian_rho=rho)]


@event_losses.register(LaplaceEvent)
@event_losses.register(EpsilonDeltaEvent)
@event_losses.register(DiscreteGaussianEvent)
def _(event: PrivacyEvent) -> list[LossPair]:
    src = _inner_source(event)
    return [LossPair(src, src)]


@event_losses.register
def _(event: ComposedEvent) -> list[LossPair]:
    out: list[LossPair] = []
    for inner in event.events:
        out.extend(event_losses(inner))
    return out


@event_losses.register
def _(event: SubsampledEvent) -> list[LossPair]:
    inner = _inner_source(event.event)
    if isinstance(inner, EpsilonDeltaLoss) and inner.epsilon == 0.0 and inner.delta == 0.0:
        return []
    if event.q >= 1.0:
        return [LossPair(inner, inner)]
    remove = SubsampledLoss(inner, event.q, "remove")
    if event.sampling == "without-replacement":
        # substitution neighbours: the remove-direction pair dominates both orders
        return [LossPair(remove, remove)]
    return [LossPair(remove, SubsampledLoss(inner, event.q, "add"))]
