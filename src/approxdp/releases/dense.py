"""Releases over very large declared domains: noise added where the data lives, per batch.

A histogram (or sum, mean) over a declared domain of millions of cells is released cell by
cell, empty cells included. Collecting such a table to one process to noise it defeats a
cluster, so above a threshold of cells (``large_domain_cells``, default
:data:`LARGE_DOMAIN_CELLS`) the release uses the engine primitive
:meth:`~approxdp.engines.base.Engine.map_cells`: the engine aggregates, spreads the aggregate
over every cell of the domain and applies :class:`CellNoise` to each batch of cells on its
workers (Spark executors; DuckDB streams batches through this process), then materialises the
result once — so the noise is never drawn twice for a cell. The aggregation itself runs before
the spend (:meth:`~approxdp.engines.base.Engine.aggregate_cells`, by
:func:`~approxdp.releases.execute.execute`): after it only the noise is added.

The noise is the same as on the driver: :class:`~approxdp.mechanisms.GaussianMechanism`'s
secure release — the query rounded onto the lattice gZ and exact discrete Gaussian noise from
the OS CSPRNG (Canonne et al. 2020), with lattice and sampler calibrated on the driver for the
*whole* vector's dimension (cells × measures), since rounding inflates the ℓ2 sensitivity by
√d for the whole release, not per batch. Each worker reads its own random bits from its own OS. With
a seed (tests and demos) the noise is a reproducible simulation instead: cell ``i`` gets the
normals of block ``i // 4096`` of ``numpy.random.default_rng([seed, block])``, the same on
every engine however the cells are batched.

This module holds the whole large-domain path: the checks it needs before the spend (the
output folder, the names of the cell table's columns), the function that noises each batch,
and the release itself (:func:`release_dense`). The accountant is charged before
:meth:`map_cells` runs (the caller's job, see :func:`approxdp.releases.execute.execute`), so a
refused spend draws no noise.
"""

from __future__ import annotations

import math
import os
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.engines.base import Engine, TableT
from approxdp.engines.shapes import AggregateRequest, CellAggregate, CellMapRequest
from approxdp.errors import DataError
from approxdp.mechanisms.gaussian import SecureGaussianNoise
from approxdp.mechanisms.randomness import SecureBits
from approxdp.releases._checks import DROPPED_NOTE
from approxdp.releases._intervals import mean_interval, noise_spread
from approxdp.releases.diagnostics import Diagnostics
from approxdp.releases.noise import SEEDED_NOTE, PreparedNoise
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import Mean, Query

__all__ = [
    "LARGE_DOMAIN_CELLS",
    "CellNoise",
    "check_cell_columns",
    "check_output_dir",
    "n_cells",
    "release_dense",
]

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
        std_unit, ci_unit = noise_spread(self.sigma, self.secure, self.level)  # as on the driver
        stds = np.broadcast_to(scales * std_unit, noisy.shape)
        ci_stds = np.broadcast_to(scales * ci_unit, noisy.shape)
        if self.mean_bounds is not None:
            values, std, lo, hi = mean_interval(self.mean_bounds, noisy, stds, self.level,
                                                ci_stds)
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


def check_output_dir(output_dir: str) -> None:
    """Create a local ``output_dir`` and check it is writable, before anything is spent (a
    URI such as ``s3://...`` is left to the engine)."""
    if "://" in output_dir:
        return
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as exc:
        raise DataError(f"output_dir {output_dir!r} cannot be created: {exc.strerror}; nothing "
                        "was spent") from exc
    if not os.access(output_dir, os.W_OK | os.X_OK):
        raise DataError(f"output_dir {output_dir!r} is not writable; nothing was spent")


def check_cell_columns(query: Query) -> None:
    """Raise :class:`DataError` (nothing spent) if a group column of ``query`` has the name of
    a column the cell table adds: its outputs, or the engine's cell index and row count."""
    outputs = ("value", "std", "ci_low", "ci_high", "__cell", "__rows",
               *(("sum_centred", "count") if isinstance(query, Mean) else ()))
    clash = [c for c in query.by if c.lower() in outputs]
    if clash:
        raise DataError(
            f"group column {clash[0]!r} has the name of an output column of a "
            f"large-domain release ({', '.join(outputs)}); rename it; nothing was spent"
        )


def release_dense(
    aq: AllocatedQuery,
    allocated: AllocatedPlan,
    request: AggregateRequest,
    engine: Engine[TableT],
    table: TableT,
    noise: PreparedNoise,
    *,
    rng: np.random.Generator | None,
    z: float,
    level: float,
    n_rows: int,
    output_dir: str | None,
    aggregate: CellAggregate | None = None,
) -> ReleaseResult:
    """Noise every cell of the query's domain inside the engine (already paid for), from
    ``aggregate``, the result of ``request`` that :meth:`~approxdp.engines.base.Engine.
    aggregate_cells` computed before the spend (computed here when None); the result's
    ``table`` points to the cells."""
    q = aq.query
    measures = q.measures()
    cell_noise = CellNoise(
        tuple(a.name for a in request.aggregations), tuple(m.scale for m in measures),
        noise.sigma, noise.secure, None if rng is None else int(rng.integers(0, 2**63 - 1)),
        z, level, q.bounds if isinstance(q, Mean) else None,
    )
    path = None
    if output_dir is not None:  # a seeded simulation says so in its file name too
        tag = "-seeded-NOT-PRIVATE" if noise.simulated else ""
        path = os.path.join(output_dir, f"release-{uuid.uuid4().hex[:12]}{tag}.parquet")
    cells = engine.map_cells(table, CellMapRequest(request, q.cell_domain or (), cell_noise,
                                                   cell_noise.outputs, path), aggregate)
    notes = [SEEDED_NOTE] if noise.simulated else []
    if q.outside == "drop":
        notes.append(DROPPED_NOTE)
    empty = np.zeros(0)
    return ReleaseResult(
        label=q.label(), kind=q.kind, columns=q.by, keys=[], values=empty, std=empty,
        ci_low=empty, ci_high=empty, level=level,
        mechanism="exact" if noise.mechanism is None else "gaussian", method=allocated.method,
        sigma=noise.sigma, sensitivity=aq.sensitivity,
        effective_sensitivity=aq.effective_sensitivity, epsilon=allocated.epsilon,
        delta=allocated.delta, threshold=None,
        diagnostics=Diagnostics(rows={"read": n_rows, "used": cells.rows_used,
                                      "dropped": n_rows - cells.rows_used}),
        comparisons=noise.comparisons, notes=tuple(notes), table=cells,
        secure=not noise.simulated,
    )
