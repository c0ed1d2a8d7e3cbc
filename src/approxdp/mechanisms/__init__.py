"""Noise mechanisms: Gaussian, Laplace, truncated Laplace and discrete Gaussian.

Every mechanism is a frozen, validated object with ``.release(value, rng=None)``. The default
is secure: exact integer noise from the OS CSPRNG on a fine lattice (see ``docs/security.md``).
A ``numpy.random.Generator`` (or ``secure=False``) selects a fast simulation path whose
outputs are marked (:class:`SimulatedFloat`, :class:`SimulatedArray`, :class:`SimulatedInt`).
The teaching examples live in :mod:`approxdp.mechanisms.teaching` and are not exported here.
"""

from __future__ import annotations

from approxdp.mechanisms.discrete_gaussian import DiscreteGaussianMechanism
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler, DiscreteLaplaceSampler
from approxdp.mechanisms.gaussian import GaussianMechanism
from approxdp.mechanisms.laplace import LaplaceMechanism
from approxdp.mechanisms.outputs import SimulatedArray, SimulatedFloat, SimulatedInt, is_secure
from approxdp.mechanisms.truncated_laplace import TruncatedLaplaceMechanism

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteGaussianSampler",
    "DiscreteLaplaceSampler",
    "GaussianMechanism",
    "LaplaceMechanism",
    "SimulatedArray",
    "SimulatedFloat",
    "SimulatedInt",
    "TruncatedLaplaceMechanism",
    "is_secure",
]
