"""Immutable descriptions of privacy-consuming releases ("events").

Mechanisms describe what they did as an event; accountants (``approxdp.accounting``) decide
what it costs. Keeping the two apart (the design of Google's ``dp_event``) lets one release be
accounted under different composition rules, and lets accountants be tested without noise.

Every event validates itself when built, so an invalid event can never reach a ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from approxdp._validation import check_parameter
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
    """Base class of all events. ``label`` is free text shown in ledgers and reports.

    Each event lists its numeric fields in :attr:`RANGES` with the kind of parameter each is
    (:data:`approxdp._validation.PARAMETER_RANGES`); building an event checks them all, here,
    once, and stores them as floats. Subclasses add only checks that are not ranges.
    """

    #: Each numeric field and the kind of parameter it is (its allowed range).
    RANGES: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __post_init__(self) -> None:
        for name, kind in self.RANGES:
            object.__setattr__(self, name, float(check_parameter(name, getattr(self, name),
                                                                 kind)))


@dataclass(frozen=True, slots=True)
class GaussianEvent(PrivacyEvent):
    """One release of f(D) + N(0, σ² I) with ℓ2-sensitivity Δ (Zhao et al. 2019, Thm 2).

    Its exact privacy is that of a Gaussian with noise multiplier σ/Δ; several compose exactly
    (Zhao et al. Lemma 15).
    """

    sigma: float
    sensitivity: float = 1.0
    label: str = field(default="gaussian", compare=False)

    RANGES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("sigma", "sigma"),
        ("sensitivity", "sensitivity"),
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

    RANGES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("sigma", "sigma"),
        ("sensitivity", "sensitivity"),
        ("epsilon", "epsilon"),
        ("delta", "delta"),
    )


@dataclass(frozen=True, slots=True)
class LaplaceEvent(PrivacyEvent):
    """One release with Laplace noise of scale b and ℓ1-sensitivity Δ: (Δ/b, 0)-DP."""

    scale: float
    sensitivity: float = 1.0
    label: str = field(default="laplace", compare=False)

    RANGES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("scale", "scale"),
        ("sensitivity", "sensitivity"),
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

    RANGES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("epsilon", "epsilon"),
        ("delta", "delta_cost"),
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

    RANGES: ClassVar[tuple[tuple[str, str], ...]] = (("q", "sample_rate"),)

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise ParameterTypeError(
                f"event must be a PrivacyEvent, got {type(self.event).__name__}"
            )
        super(SubsampledEvent, self).__post_init__()
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
