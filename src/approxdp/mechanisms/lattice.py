"""Rounding real queries onto a fine lattice gZ, so that exact integer noise can be added.

The secure default for real-valued queries (Canonne et al. 2020, §1;
https://arxiv.org/abs/2004.00010):
round the query to the lattice gZ (g a power of two, so x/g is exact in binary floating point),
add exact integer noise, and map back by multiplying with g. Every float operation after the
noise is post-processing of an exact integer and leaks nothing (this is what defeats the
low-bit attacks of Mironov 2012 and Jin et al. 2022). Rounding moves each coordinate by at most
g/2, so two neighbouring queries round to integer vectors whose difference has
ℓ1-norm ≤ ⌊Δ₁/g⌋ + d and ℓ2-norm ≤ Δ₂/g + √d (d coordinates); in one dimension, ≤ ⌊Δ/g⌋ + 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, overload

import numpy as np
import numpy.typing as npt

from approxdp.errors import DataError

__all__ = [
    "MAX_INDEX",
    "Lattice",
    "LatticeMechanism",
    "LatticeNoise",
    "lattice_release",
    "power_of_two_at_most",
    "release_on_lattice",
]

#: Indices |x/g| must stay below this to be exact in float64 (and fit an int64).
MAX_INDEX = 2.0**52


def power_of_two_at_most(x: float) -> float:
    """The largest power of two ≤ x (x > 0 finite)."""
    _m, e = math.frexp(x)  # x = m·2^e, m in [0.5, 1)
    return math.ldexp(1.0, e - 1)


@dataclass(frozen=True, slots=True)
class Lattice:
    """The lattice gZ with granularity ``g`` (a power of two)."""

    g: float

    def to_integers(self, value: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        """Round ``value`` to the nearest lattice points, as integer indices.

        Raises:
            DataError: for NaN/inf or values too large for exact indices (|x/g| ≥ 2^52).
        """
        scaled = value / self.g  # exact: g is a power of two
        bad = ~np.isfinite(scaled) | (np.abs(scaled) >= MAX_INDEX)
        if bool(np.any(bad)):
            first = float(np.asarray(value)[bad].flat[0])
            raise DataError(
                f"value must be finite with |value| < 2^52 * g = {MAX_INDEX * self.g:g} to be "
                f"released on the secure lattice, got value={first!r}; rescale the query or "
                "use a coarser sensitivity"
            )
        return np.rint(scaled).astype(np.int64)

    def to_reals(self, index: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Map integer indices back to lattice points (post-processing of the exact result)."""
        return index.astype(np.float64) * self.g

    def sensitivity_l1(self, sensitivity: float, dimension: int) -> int:
        """Bound on the ℓ1-norm of the rounded difference: ⌊Δ₁/g⌋ + d."""
        return math.floor(sensitivity / self.g) + dimension

    def sensitivity_l2(self, sensitivity: float, dimension: int) -> float:
        """Bound on the ℓ2-norm of the rounded difference: Δ₂/g + √d (⌊Δ/g⌋ + 1 for d = 1)."""
        if dimension == 1:
            return float(math.floor(sensitivity / self.g) + 1)
        return sensitivity / self.g + math.sqrt(dimension)


class LatticeNoise(Protocol):
    """The secure noise of a lattice mechanism: its lattice, and exact integer draws."""

    @property
    def lattice(self) -> Lattice:
        """The lattice gZ the query is rounded to."""
        ...

    def draw(self, n: int) -> npt.NDArray[np.int64]:
        """``n`` exact integer noises from the OS CSPRNG (in lattice units)."""
        ...


def lattice_release(
    value: npt.ArrayLike, rng: np.random.Generator | None, secure: bool | None, *,
    simulate: Callable[[np.random.Generator, tuple[int, ...]], npt.NDArray[np.float64]],
    noise: Callable[[int], LatticeNoise],
) -> Any:
    """The release of every lattice mechanism (Gaussian, Laplace, truncated Laplace).

    The secure path (``rng=None``): ``value`` rounded onto the lattice of ``noise(d)`` (d
    coordinates), exact integer noise added, mapped back (module docstring). A Generator or
    ``secure=False``: ``value + simulate(generator, shape)``, float noise, returned marked as a
    simulation (:mod:`approxdp.mechanisms.outputs`).

    Raises:
        DataError: a value that is not finite or too large for exact lattice indices.
    """
    from approxdp.mechanisms.base import choose_path, prepare_value
    from approxdp.mechanisms.outputs import mark_simulated

    path, gen = choose_path(rng, secure)
    arr, scalar = prepare_value(value)
    if path != "secure" and gen is not None:
        return mark_simulated(simulate(gen, arr.shape) + arr, scalar)
    secure_noise = noise(max(arr.size, 1))
    return release_on_lattice(arr, scalar, secure_noise.lattice, secure_noise.draw)


class LatticeMechanism:
    """Base of the mechanisms released on a lattice (Gaussian, Laplace, truncated Laplace):
    their :meth:`release`, written once. Each gives its :meth:`secure_noise` (lattice and
    exact integer sampler) and ``_simulated_noise(generator, shape)``, the float noise of a
    seeded simulation (the Gaussian's ``Generator.normal``, the Laplace's
    ``Generator.laplace``, the truncated Laplace's inverse CDF clipped to τ)."""

    __slots__ = ()

    def secure_noise(self, dimension: int = 1) -> LatticeNoise:
        """The lattice and exact sampler of the secure release of ``dimension`` coordinates."""
        raise NotImplementedError  # pragma: no cover - every mechanism defines it

    def _simulated_noise(
        self, generator: np.random.Generator, shape: tuple[int, ...]
    ) -> npt.NDArray[np.float64]:
        raise NotImplementedError  # pragma: no cover - every mechanism defines it

    @overload
    def release(
        self, value: float, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> float: ...
    @overload
    def release(
        self, value: npt.ArrayLike, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> npt.NDArray[np.float64]: ...

    def release(
        self, value: npt.ArrayLike, rng: np.random.Generator | None = None, *,
        secure: bool | None = None,
    ) -> Any:
        """Release ``value`` (a number, or an array of any shape: one vector query whose
        sensitivity is the mechanism's) with the mechanism's noise.

        Args:
            value: the true answer.
            rng: None (default) for the secure release: the value rounded onto the lattice,
                exact integer noise from the OS CSPRNG (module docstring); a
                ``numpy.random.Generator`` for a reproducible float simulation.
            secure: ``False`` asks for the fast float path without a seed.

        Returns:
            A float or float64 array (secure), or a SimulatedFloat/SimulatedArray (marked as
            a simulation, NOT private).

        Raises:
            DataError: a value that is not finite or too large for exact lattice indices.
        """
        return lattice_release(value, rng, secure, noise=self.secure_noise,
                               simulate=self._simulated_noise)


def release_on_lattice(
    value: npt.NDArray[np.float64], scalar: bool, lattice: Lattice,
    draw: Callable[[int], npt.NDArray[np.int64]],
) -> float | npt.NDArray[np.float64]:
    """The secure release of every lattice mechanism (Gaussian, Laplace, truncated Laplace):
    round ``value`` onto ``lattice``, add ``draw(n)`` — n exact integer noises from the
    mechanism's sampler — and map back, so every float operation after the noise is
    post-processing of an exact integer (module docstring).

    Raises:
        DataError: a value that is not finite or too large for exact lattice indices.
    """
    index = lattice.to_integers(value)
    draws = np.asarray(draw(index.size)).reshape(index.shape)
    out = lattice.to_reals(index + draws)
    return float(out) if scalar else np.asarray(out)
