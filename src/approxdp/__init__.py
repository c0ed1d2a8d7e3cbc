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

__version__ = "0.1.0"

__all__ = [
    "ApproxDPError",
    "BudgetExceededError",
    "ComposedEvent",
    "DataError",
    "DiscreteGaussianEvent",
    "EpsilonDeltaEvent",
    "GaussianEvent",
    "InvalidParameterError",
    "LaplaceEvent",
    "LedgerError",
    "MissingDependencyError",
    "NotPrivateError",
    "NotPrivateWarning",
    "ParameterTypeError",
    "PrivacyEvent",
    "SubsampledEvent",
    "UnknownMethodError",
    "__version__",
]
