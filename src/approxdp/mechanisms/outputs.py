"""Marking of releases made with a non-secure (seeded or floating-point) noise path.

A release made from the OS CSPRNG with exact lattice noise is returned as a plain ``float`` /
``numpy.ndarray`` (``int`` / int64 array for integer mechanisms). Anything else — a seeded
``numpy.random.Generator`` or ``secure=False`` — comes back as :class:`SimulatedFloat` or
:class:`SimulatedArray`: numerically the same kind of value, but carrying ``secure = False``
and a ``repr`` that says so. NumPy operations on a :class:`SimulatedArray` keep the mark.
Use :func:`is_secure` to check a value before publishing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SimulatedArray", "SimulatedFloat", "SimulatedInt", "is_secure", "mark_simulated"]


class SimulatedFloat(float):
    """A float released with simulation-grade noise (seeded or floating-point): not for
    publication."""

    __slots__ = ()
    secure = False

    def __repr__(self) -> str:
        return f"SimulatedFloat({float(self)!r}, secure=False)"


class SimulatedInt(int):
    """An integer released with simulation-grade (seeded) noise: not for publication."""

    __slots__ = ()
    secure = False

    def __repr__(self) -> str:
        return f"SimulatedInt({int(self)!r}, secure=False)"


class SimulatedArray(np.ndarray[Any, Any]):
    """An array released with simulation-grade noise (seeded or floating-point): not for
    publication. Arithmetic results keep this type."""

    secure = False

    def __repr__(self) -> str:
        return f"SimulatedArray({np.asarray(self)!r}, secure=False)"


def mark_simulated(value: npt.NDArray[Any], scalar: bool) -> Any:
    """Wrap a simulation release: a :class:`SimulatedFloat` for scalars, else an array view."""
    if scalar:
        if np.asarray(value).dtype.kind in "iu":
            return SimulatedInt(int(value))
        return SimulatedFloat(float(value))
    return np.asarray(value).view(SimulatedArray)


def is_secure(value: Any) -> bool:
    """False for values marked as simulation releases, True otherwise."""
    return bool(getattr(value, "secure", True))
