"""approxdp: approximate (ε, δ) differential privacy with exactly calibrated Gaussian noise."""

from __future__ import annotations

from approxdp.errors import (
    ApproxDPError,
    BudgetExceededError,
    DataError,
    InvalidParameterError,
    LedgerError,
    MissingDependencyError,
    NotPrivateError,
    NotPrivateWarning,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)
from approxdp.mechanisms import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    SimulatedArray,
    SimulatedFloat,
    SimulatedInt,
    TruncatedLaplaceMechanism,
    is_secure,
)

__version__ = "0.1.0"

__all__ = [
    "ApproxDPError",
    "BudgetExceededError",
    "ComposedEvent",
    "DataError",
    "DiscreteGaussianEvent",
    "DiscreteGaussianMechanism",
    "EpsilonDeltaEvent",
    "GaussianEvent",
    "GaussianMechanism",
    "InvalidParameterError",
    "LaplaceEvent",
    "LaplaceMechanism",
    "LedgerError",
    "MissingDependencyError",
    "NotPrivateError",
    "NotPrivateWarning",
    "ParameterTypeError",
    "PrivacyEvent",
    "SimulatedArray",
    "SimulatedFloat",
    "SimulatedInt",
    "SubsampledEvent",
    "TruncatedLaplaceMechanism",
    "UnknownMethodError",
    "__version__",
    "is_secure",
]
