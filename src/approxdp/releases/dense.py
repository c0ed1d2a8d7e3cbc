"""Releases over very large declared domains: noise added where the data lives, per batch.

A histogram (or sum, mean) over a declared domain of millions of cells is released cell by
cell, empty cells included. Collecting such a table to one process to noise it defeats a
cluster, so above a threshold of cells (``large_domain_cells``, default
:data:`LARGE_DOMAIN_CELLS`) the release uses the engine primitive
:meth:`~approxdp.engines.base.Engine.map_cells`: the engine aggregates, spreads the aggregate
over every cell of the domain and applies :class:`CellNoise` to each batch of cells on its
workers (Spark executors; DuckDB streams batches through this process), then materialises the
result once — so the noise is never drawn twice for a cell.

The noise is the same as on the driver: :class:`~approxdp.mechanisms.GaussianMechanism`'s
secure release — the query rounded onto the lattice gZ and exact discrete Gaussian noise from
the OS CSPRNG (Canonne et al. 2020), with lattice and sampler calibrated on the driver for the
*whole*
vector's dimension (cells × measures), since rounding inflates the ℓ2 sensitivity by √d for
the whole release, not per batch. Each worker reads its own random bits from its own OS. With
a seed (tests and demos) the noise is a reproducible simulation instead: cell ``i`` gets the
normals of block ``i // 4096`` of ``numpy.random.default_rng([seed, block])``, the same on
every engine however the cells are batched.

The accountant is charged before :meth:`map_cells` runs (the caller's job, see
:func:`approxdp.releases.execute.execute`), so a refused spend draws no noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.mechanisms.gaussian import SecureGaussianNoise
from approxdp.mechanisms.randomness import SecureBits

__all__ = ["LARGE_DOMAIN_CELLS", "CellNoise", "n_cells"]

#: Declared domains with at least this many cells are noised where the data lives.
LARGE_DOMAIN_CELLS = 1_000_000
_BLOCK = 4096

FloatArray = npt.NDArray[np.float64]


def n_cells(domain: tuple[tuple[str, tuple[Any, ...]], ...] | None) -> int:
    """Number of cells of a declared domain (0 without one)."""
    return math.prod(len(v) for _, v in domain) if domain else 0


@dataclass(frozen=True)
class CellNoise:
    """Noise one batch of cells (picklable; runs on the engine's workers).

    Args:
        measures: Names of the batch's true-aggregate columns, in measure order.
        scales: Per-measure scale; the Gaussian acts on the scaled vector (true / scale).
        sigma: σ of the Gaussian on the scaled vector (for ``std`` and the seeded path).
        secure: The driver's lattice and exact sampler for the whole release; ``None`` with
            ``seed``.
        seed: Seed of the reproducible simulation (``None``: secure noise).
        z: Normal quantile of the confidence level.
        level: Confidence level (for the mean's interval).
        mean_bounds: The mean's clamping bounds (a Mean query), else ``None``.
    """

    measures: tuple[str, ...]
    scales: tuple[float, ...]
    sigma: float
    secure: SecureGaussianNoise | None
    seed: int | None
    z: float
    level: float
    mean_bounds: tuple[float, float] | None = None

    @property
    def outputs(self) -> tuple[str, ...]:
        """Columns this function returns per cell."""
        base = ("value", "std", "ci_low", "ci_high")
        return (*base, "sum_centred", "count") if self.mean_bounds is not None else base

    def __call__(self, batch: Any) -> Any:
        """``(__cell, measures...)`` → ``(value, std, ci_low, ci_high[, sum_centred, count])``."""
        import pyarrow as pa

        true = np.column_stack(
            [batch.column(m).to_numpy(zero_copy_only=False) for m in self.measures]
        ).astype(np.float64)
        scales = np.asarray(self.scales, dtype=np.float64)
        flat = true / scales  # (cells, measures), the scaled vector's coordinates
        if self.secure is not None:
            lattice = self.secure.lattice
            index = lattice.to_integers(flat.ravel())
            draws = self.secure.sampler.sample(SecureBits(), index.size)
            noisy = lattice.to_reals(index + draws).reshape(flat.shape) * scales
        else:
            cells = batch.column("__cell").to_numpy(zero_copy_only=False).astype(np.int64)
            noisy = (flat + self.sigma * self._normals(cells, flat.shape[1])) * scales
        # the driver path's formulas
        from approxdp.releases.execute import _mean, noise_spread

        std_unit, ci_unit = noise_spread(self.sigma, self.secure, self.level)
        stds = np.broadcast_to(scales * std_unit, noisy.shape)
        ci_stds = np.broadcast_to(scales * ci_unit, noisy.shape)
        if self.mean_bounds is not None:
            from approxdp.releases.specs import Mean

            spec = Mean("value", self.mean_bounds)  # _mean reads only the bounds
            values, std, lo, hi = _mean(spec, noisy, stds, self.level, ci_stds)
            cols = [values, std, lo, hi, noisy[:, 0], noisy[:, 1]]
        else:
            values, std, ci = noisy[:, 0], stds[:, 0], ci_stds[:, 0]
            cols = [values, std, values - self.z * ci, values + self.z * ci]
        return pa.RecordBatch.from_arrays(
            [pa.array(np.ascontiguousarray(c, dtype=np.float64)) for c in cols],
            names=list(self.outputs),
        )

    def _normals(self, cells: npt.NDArray[np.int64], k: int) -> FloatArray:
        """Standard normals for ``cells`` (shape (len, k)), a function of (seed, cell) only."""
        out = np.empty((cells.size, k))
        blocks = cells // _BLOCK
        for b in np.unique(blocks).tolist():
            rows = np.flatnonzero(blocks == b)
            gen = np.random.default_rng([int(self.seed or 0), b])
            out[rows] = gen.standard_normal((_BLOCK, k))[cells[rows] % _BLOCK]
        return out
