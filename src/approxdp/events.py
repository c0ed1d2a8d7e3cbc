"""Immutable descriptions of privacy-consuming releases ("events").

Mechanisms describe what they did as an event; accountants (``approxdp.accounting``) decide
what it costs. Keeping the two apart (the design of Google's ``dp_event``) lets one release be
accounted under different composition rules, and lets accountants be tested without noise.

Every event validates itself when built, so an invalid event can never reach a ledger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from approxdp._validation import check_interval, check_probability
from approxdp.errors import ParameterTypeError, UnknownMethodError

__all__ = [
    "SAMPLINGS",
    "ComposedEvent",
    "DiscreteGaussianEvent",
    "EpsilonDeltaEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "SubsampledEvent",
]


@dataclass(frozen=True, slots=True)
class PrivacyEvent:
    """Base class of all events. ``label`` is free text shown in ledgers and reports."""


@dataclass(frozen=True, slots=True)
class GaussianEvent(PrivacyEvent):
    """One release of f(D) + N(0, σ² I) with ℓ2-sensitivity Δ (Zhao et al. 2019, Thm 2).

    Its exact privacy is that of a Gaussian with noise multiplier σ/Δ; several compose exactly
    (Zhao et al. Lemma 15).
    """

    sigma: float
    sensitivity: float = 1.0
    label: str = field(default="gaussian", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "sigma", float(check_interval("sigma", self.sigma, 0.0, math.inf, low_open=True))
        )
        object.__setattr__(
            self,
            "sensitivity",
            float(check_interval("sensitivity", self.sensitivity, 0.0, math.inf, high_open=True)),
        )


@dataclass(frozen=True, slots=True)
class DiscreteGaussianEvent(PrivacyEvent):
    """One release of an integer query plus discrete Gaussian noise N_Z(0, σ²).

    ``epsilon``/``delta`` are the guarantee the mechanism was calibrated for with the discrete
    profile (Canonne et al. 2020); the accountant must not treat it as continuous.
    """

    sigma: float
    sensitivity: float
    epsilon: float
    delta: float
    label: str = field(default="discrete-gaussian", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "sigma", float(check_interval("sigma", self.sigma, 0.0, math.inf, low_open=True))
        )
        object.__setattr__(
            self,
            "sensitivity",
            float(check_interval("sensitivity", self.sensitivity, 0.0, math.inf, high_open=True)),
        )
        object.__setattr__(
            self,
            "epsilon",
            float(check_interval("epsilon", self.epsilon, 0.0, math.inf, high_open=True)),
        )
        object.__setattr__(self, "delta", float(check_probability("delta", self.delta)))


@dataclass(frozen=True, slots=True)
class LaplaceEvent(PrivacyEvent):
    """One release with Laplace noise of scale b and ℓ1-sensitivity Δ: (Δ/b, 0)-DP."""

    scale: float
    sensitivity: float = 1.0
    label: str = field(default="laplace", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "scale", float(check_interval("scale", self.scale, 0.0, math.inf, low_open=True))
        )
        object.__setattr__(
            self,
            "sensitivity",
            float(check_interval("sensitivity", self.sensitivity, 0.0, math.inf, high_open=True)),
        )

    @property
    def epsilon(self) -> float:
        """ε = Δ/b (0 for an infinite scale)."""
        return self.sensitivity / self.scale


@dataclass(frozen=True, slots=True)
class EpsilonDeltaEvent(PrivacyEvent):
    """A release known only through its (ε, δ)-DP guarantee (truncated Laplace, partition
    selection, a black-box algorithm). δ may be 0 (pure DP)."""

    epsilon: float
    delta: float = 0.0
    label: str = field(default="approximate-dp", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "epsilon",
            float(check_interval("epsilon", self.epsilon, 0.0, math.inf, high_open=True)),
        )
        object.__setattr__(
            self, "delta", float(check_probability("delta", self.delta, allow_zero=True))
        )


SAMPLINGS = ("poisson", "without-replacement")


@dataclass(frozen=True, slots=True)
class SubsampledEvent(PrivacyEvent):
    """``event`` run on a random subsample of the data.

    ``sampling="poisson"`` (default): each record is kept independently with probability q;
    neighbours differ by adding or removing one record. ``sampling="without-replacement"``: a
    batch of fixed size m is drawn without replacement from n records (q = m/n); neighbours
    differ by substituting one record, and the inner event's sensitivity must be the
    substitution sensitivity (2C for a sum of vectors clipped to norm C). (Zhu, Dong, Wang 2022,
    https://arxiv.org/abs/2106.08567, Thms 9 and 10.)
    """

    event: PrivacyEvent
    q: float
    label: str = field(default="subsampled", compare=False)
    sampling: str = "poisson"

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise ParameterTypeError(
                f"event must be a PrivacyEvent, got {type(self.event).__name__}"
            )
        object.__setattr__(self, "q", float(check_interval("q", self.q, 0.0, 1.0, low_open=True)))
        if self.sampling not in SAMPLINGS:
            raise UnknownMethodError(
                f"sampling must be one of {SAMPLINGS}, got sampling={self.sampling!r}"
            )


@dataclass(frozen=True, slots=True)
class ComposedEvent(PrivacyEvent):
    """Several events run one after the other (possibly adaptively) on the same data."""

    events: tuple[PrivacyEvent, ...]
    label: str = field(default="composed", compare=False)

    def __post_init__(self) -> None:
        events = tuple(self.events)
        for i, ev in enumerate(events):
            if not isinstance(ev, PrivacyEvent):
                raise ParameterTypeError(
                    f"events[{i}] must be a PrivacyEvent, got {type(ev).__name__}"
                )
        object.__setattr__(self, "events", events)
