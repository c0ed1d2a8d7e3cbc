"""What a release returns: values, their noise, intervals, cost, and how it was all derived."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from approxdp.accounting.budget.chain import Receipt
from approxdp.calibration import method_verdicts
from approxdp.engines.shapes import CellMapResult
from approxdp.errors import InvalidParameterError
from approxdp.mechanisms.outputs import SimulatedArray, SimulatedFloat
from approxdp.releases.diagnostics import EXACT_LABEL, Diagnostics
from approxdp.releases.sensitivity import Sensitivity

__all__ = ["COMPARED_METHODS", "MethodComparison", "ReleaseResult", "compare_methods"]

#: Calibrations shown next to the one used (classical formulas first).
COMPARED_METHODS = ("dwork-roth-2014", "dwork-2006", "zhao-m1", "zhao-m2", "pdp-optimal",
                    "zcdp", "optimal")


@dataclass(frozen=True, slots=True)
class MethodComparison:
    """The σ another calibration would have used, and whether it would have been (ε, δ)-DP
    (checked against the exact profile, Zhao et al. Thm 2). ``sigma`` and ``ratio_to_used`` are None
    where the method is undefined at this (ε, δ) (e.g. the classical bound for ε ≥ 1)."""

    method: str
    sigma: float | None
    private: bool
    ratio_to_used: float | None


def compare_methods(
    epsilon: float, delta: float, sensitivity: float, used_sigma: float,
    methods: Sequence[str] = COMPARED_METHODS, *, used_method: str | None = None,
) -> tuple[MethodComparison, ...]:
    """σ of each method for one Gaussian at (ε, δ, Δ), with its exact privacy verdict
    (:func:`~approxdp.calibration.method_verdicts`: each method calibrated once per (ε, δ)
    at Δ = 1, cached, and scaled). The row of ``used_method``, the method that gave
    ``used_sigma``, reports ``used_sigma`` itself (ratio 1) instead of calibrating it a second
    time.
    """
    known = {used_method: used_sigma} if used_method is not None else None
    out = []
    for v in method_verdicts(epsilon, delta, sensitivity, methods, known=known):
        if v.sigma is None:
            out.append(MethodComparison(v.method, None, False, None))
            continue
        ratio = v.sigma / used_sigma if used_sigma > 0 else None
        out.append(MethodComparison(v.method, v.sigma, bool(v.private), ratio))
    return tuple(out)


@dataclass(frozen=True)
class ReleaseResult:
    """One released query.

    Attributes:
        label: Query name.
        kind: count, sum, mean, histogram or linearqueries.
        columns: Names of the key columns (empty for a global query).
        keys: One tuple of key values per released cell (``[()]`` for a global query).
        values: Released values, one per cell (a k-vector for linear queries).
        std: Standard deviation of each value's noise. For a mean: the delta-method
            approximation, capped at (U − L)/2 — the largest standard deviation of a value
            confined to the bounds [L, U] (Popoviciu's inequality) — which is also what is
            reported where the noisy count is ≤ 0 (the value is then the midpoint).
        ci_low, ci_high: Confidence interval at ``level`` for each value (for a mean:
            a conservative interval from the sum's and count's intervals).
        level: Confidence level of the intervals.
        mechanism: ``"gaussian"``, or ``"exact"`` when the sensitivity is 0 (nothing to hide).
        method: Calibration method used.
        sigma: σ of the Gaussian on the query's scaled vector.
        sensitivity: Sensitivities of the scaled vector and their derivation.
        effective_sensitivity: Δ the mechanism was calibrated to after the plan's weighting.
        epsilon, delta: Budget of the plan this query was released in (shared by its queries).
        threshold: Partition-selection threshold on the noisy count (None with a domain).
        diagnostics: Exact facts about the data this release read — rows read, used and
            dropped, values a cast could not convert — labelled "exact, not private — for the
            data holder" (:class:`~approxdp.releases.diagnostics.Diagnostics`). Never in an
            artifact unless asked for by name (:meth:`to_dict`).
        comparisons: σ other calibrations would need for the same mechanism.
        extra: Other released measures (e.g. noisy counts used for selection or a mean).
        table: For a large declared domain (see :mod:`approxdp.releases.dense`), the released
            cells where the engine wrote them — one row per cell with the key columns,
            ``value``, ``std``, ``ci_low``, ``ci_high`` — and ``keys``/``values``/``std``/
            ``ci_*`` are then empty: use ``table.table`` (a Spark DataFrame or DuckDB
            relation), ``table.path`` or :meth:`to_arrow`. ``None`` otherwise.
        secure: False for a seeded release (``PrivateTable(seed=...)``): its noise is a
            reproducible simulation, NOT private. Its ``values``, ``std`` and ``ci_*`` are then
            :class:`~approxdp.mechanisms.SimulatedArray` and ``value`` a
            :class:`~approxdp.mechanisms.SimulatedFloat`, which
            :func:`~approxdp.mechanisms.is_secure` rejects; ``notes``, ``explain()``, ``str()``
            and :meth:`to_arrow` (schema metadata ``approxdp.secure``) say so too.
        informative: For a mean, per cell: False where the noisy count's interval reaches 0,
            so the value is only the midpoint or a bound of [L, U] and its interval the whole
            of [L, U] (an empty or tiny cell); for quantiles, False where the interval spans
            more than half the bounds (a note then says why and what to change); None for
            other kinds (every value informs).
        receipts: The spend receipts of this release in its ledger file (ledger id, index,
            chain hash: :class:`~approxdp.accounting.Receipt`), one per spend (two for
            ``bounds="private"``); empty for an in-memory budget or a release that spent
            nothing. ``approxdp ledger verify FILE --receipt ...`` checks them.
    """

    label: str
    kind: str
    columns: tuple[str, ...]
    keys: list[tuple[Any, ...]]
    values: npt.NDArray[np.float64]
    std: npt.NDArray[np.float64]
    ci_low: npt.NDArray[np.float64]
    ci_high: npt.NDArray[np.float64]
    level: float
    mechanism: str
    method: str
    sigma: float
    sensitivity: Sensitivity
    effective_sensitivity: float
    epsilon: float
    delta: float
    threshold: float | None
    diagnostics: Diagnostics
    comparisons: tuple[MethodComparison, ...]
    extra: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    table: CellMapResult | None = None
    secure: bool = True
    informative: npt.NDArray[np.bool_] | None = None
    receipts: tuple[Receipt, ...] = ()

    def __post_init__(self) -> None:
        if not self.secure:  # the mark travels with the numbers (is_secure(values) is False)
            for name in ("values", "std", "ci_low", "ci_high"):
                arr = np.asarray(getattr(self, name), dtype=np.float64)
                object.__setattr__(self, name, arr.view(SimulatedArray))

    @property
    def n_cells(self) -> int:
        """Number of released cells (values)."""
        return self.table.n_cells if self.table is not None else int(self.values.size)

    def to_arrow(self) -> Any:
        """The released cells as a ``pyarrow.Table``: key columns, value, std, ci_low, ci_high.

        For a large-domain release this collects the engine's table into this process. The
        schema's metadata says whether the release is private (``approxdp.secure``:
        ``"true"``, or ``"false"`` for a seeded simulation), so a file written from it says
        so too, and holds its spend receipts (``approxdp.receipts``, a JSON list). Like
        :meth:`to_dict`, it holds nothing exact: no diagnostics.
        """
        meta = {b"approxdp.secure": b"true" if self.secure else b"false"}
        if self.receipts:
            meta[b"approxdp.receipts"] = json.dumps([r.to_dict() for r in self.receipts]).encode()
        if self.table is not None:
            fetched = self.table.to_arrow()
            return fetched.replace_schema_metadata({**(fetched.schema.metadata or {}), **meta})
        import pyarrow as pa

        cols: dict[str, Any] = {
            c: [k[i] for k in self.keys] for i, c in enumerate(self.columns)
        }
        cols.update(value=np.asarray(self.values), std=np.asarray(self.std),
                    ci_low=np.asarray(self.ci_low), ci_high=np.asarray(self.ci_high))
        return pa.table(cols).replace_schema_metadata(meta)

    # -- exports for publication (approxdp.releases.export) -----------------------------------
    def to_pandas(self) -> Any:
        """The released cells as a pandas DataFrame: key columns, value, std, ci_low, ci_high,
        informative and the public parameters on every row; nothing exact
        (:mod:`approxdp.releases.export`)."""
        from approxdp.releases.export import to_pandas

        return to_pandas(self)

    def to_polars(self) -> Any:
        """The released cells as a Polars DataFrame (the columns of :meth:`to_pandas`)."""
        from approxdp.releases.export import to_polars

        return to_polars(self)

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """Write the released cells (the columns of :meth:`to_pandas`) to ``path`` as CSV;
        returns the path. A seeded simulation says so in its ``secure`` column (False)."""
        from approxdp.releases.export import write_csv

        return write_csv(self, path)

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Write the released cells to ``path`` as Parquet, with the public parameters and
        the ``approxdp.secure`` mark in the schema metadata too; returns the path."""
        from approxdp.releases.export import write_parquet

        return write_parquet(self, path)

    @property
    def value(self) -> float:
        """The single released value of a global count/sum/mean."""
        if self.values.shape != (1,):
            raise ValueError(f"{self.label} has {self.values.size} values; use .values")
        value = float(self.values[0])
        return value if self.secure else SimulatedFloat(value)

    def as_dict(self) -> dict[tuple[Any, ...], float]:
        """Released cells as {key tuple: value}."""
        if self.table is not None:
            raise ValueError(
                f"{self.label} has {self.table.n_cells} cells kept by the engine; use .table "
                "or .to_arrow()"
            )
        mark = float if self.secure else SimulatedFloat
        return {k: mark(v) for k, v in zip(self.keys, self.values, strict=True)}

    def to_dict(self, *, exact_diagnostics: bool = False) -> dict[str, Any]:
        """What may leave the data holder's hands: the released values and the public
        parameters, as a JSON-ready object (plain Python numbers; NaN/∞ as floats).

        Shape: ``label, kind, secure, key_columns, cells[{key{column: value}, value, std,
        ci_low, ci_high, informative}], level, mechanism, method, sigma, sensitivity{l2, l1,
        linf, derivation}, effective_sensitivity, epsilon, delta, threshold,
        comparisons[{method, sigma, private, ratio_to_used}], extra{name: [...]}, notes[...],
        receipts[{ledger_id, index, chain_hash}]``. Every value in it is private (noisy, or
        computed from noisy values) or public (a parameter of the release). For a release
        whose cells stay in the engine (``table``), ``cells`` is empty and ``cells_path``
        says where they are.

        ``exact_diagnostics=True`` adds ``"diagnostics"``: the exact, NOT private facts of
        :attr:`diagnostics`, labelled "exact, not private — for the data holder". Never
        publish an object made with it. This is the one view every writer (the CLI's
        ``--json``/``--output``, the browser's downloads) is built from.
        """
        columns = list(self.columns)
        values = [float(v) for v in np.asarray(self.values, dtype=np.float64).tolist()]
        informative = (np.asarray(self.informative).tolist() if self.informative is not None
                       else [True] * len(values))
        cells = []
        for i, value in enumerate(values):
            if len(self.keys) == len(values):
                key = {c: _plain(v) for c, v in zip(columns, self.keys[i], strict=True)}
            else:  # a vector of linear queries released for one global cell
                key = {"index": i}
            cells.append({
                "key": key, "value": value, "std": float(self.std[i]),
                "ci_low": float(self.ci_low[i]), "ci_high": float(self.ci_high[i]),
                "informative": bool(informative[i]),
            })
        out: dict[str, Any] = {
            "label": self.label,
            "kind": self.kind,
            "secure": self.secure,
            "key_columns": columns,
            "cells": cells,
            "level": self.level,
            "mechanism": self.mechanism,
            "method": self.method,
            "sigma": self.sigma,
            "sensitivity": dataclasses.asdict(self.sensitivity),
            "effective_sensitivity": self.effective_sensitivity,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "threshold": self.threshold,
            "comparisons": [dataclasses.asdict(c) for c in self.comparisons],
            "extra": {k: [float(x) for x in np.asarray(v, dtype=np.float64).ravel().tolist()]
                      for k, v in self.extra.items()},
            "notes": list(self.notes),
            "receipts": [r.to_dict() for r in self.receipts],
        }
        if self.table is not None:
            out["cells_path"] = self.table.path
        if exact_diagnostics:
            out["diagnostics"] = self.diagnostics.to_dict()
        return out

    def non_negative(self, how: Literal["clamp", "round"] = "clamp") -> ReleaseResult:
        """This count or histogram with values clamped at 0 (``"clamp"``) or also rounded to
        whole numbers that keep the total (``"round"``); intervals clamped (and rounded
        inward) alike. Free post-processing, never applied unless asked; the note says so.
        See :mod:`approxdp.releases.postprocess`."""
        from approxdp.releases.postprocess import NON_NEGATIVE_KINDS, non_negative_counts

        if self.kind not in NON_NEGATIVE_KINDS or self.table is not None:
            where = "kept in the engine" if self.table is not None else f"kind {self.kind!r}"
            raise InvalidParameterError(
                f"non_negative() applies to the values of a count or histogram held here, got "
                f"{where} ({self.label})"
            )
        values, lo, hi = non_negative_counts(np.asarray(self.values), np.asarray(self.ci_low),
                                             np.asarray(self.ci_high), how)
        note = (f"post-processed by non_negative(how={how!r}): values clamped at 0"
                + (" and rounded to whole numbers that keep the total" if how == "round" else "")
                + "; free in privacy; std is the noise's before post-processing")
        return dataclasses.replace(self, values=values, ci_low=lo, ci_high=hi,
                                   notes=(*self.notes, note))

    def explain(self, *, exact_diagnostics: bool = False) -> str:
        """A short human-readable account of what was released and why it is private.

        ``exact_diagnostics=True`` adds the exact facts of :attr:`diagnostics`, labelled
        "exact, not private — for the data holder" (keep such a text to yourself)."""
        if self.table is not None:
            spread = f"{self.level:.0%} CIs per cell in the table"
        elif self.values.size:
            spread = f"{self.level:.0%} CI half-width ≈ {_half(self):.4g}"
        else:
            spread = "no cell cleared the selection threshold"
        lines = [] if self.secure else [
            "WARNING: seeded simulation - NOT private. The noise is reproducible from the "
            "seed; do not publish these values.",
        ]
        lines += [
            f"{self.label} ({self.kind}): {self.n_cells} value(s), {spread}",
            f"  mechanism: {self.mechanism}, calibration '{self.method}', σ = {self.sigma:.6g} "
            f"on the scaled vector (Δ2 = {self.sensitivity.l2:.6g}; calibrated at Δ = "
            f"{self.effective_sensitivity:.6g} within its plan)",
            f"  sensitivity: {self.sensitivity.derivation}",
            f"  plan budget spent: ε = {self.epsilon:g}, δ = {self.delta:g}",
        ]
        if self.threshold is not None:
            lines.append(
                f"  partition selection: cells with noisy count ≤ {self.threshold:.6g} withheld"
            )
        if self.informative is not None and not bool(np.all(self.informative)):
            lines.append(
                f"  {int(np.count_nonzero(~self.informative))} cell(s) carry no information: "
                "the noisy count's interval reaches 0, so the value is the midpoint or a bound "
                "and the interval the whole of the bounds"
            )
        if exact_diagnostics:
            lines += [f"  {line} ({EXACT_LABEL})" for line in self.diagnostics.lines()]
        cmp = [c for c in self.comparisons if c.sigma is not None]
        if cmp:
            lines.append("  other calibrations for the same (ε, δ, Δ):")
            for c in cmp:
                verdict = "private" if c.private else "NOT private"
                ratio = "" if c.ratio_to_used is None else f" ({c.ratio_to_used:.3g}× used)"
                lines.append(f"    {c.method:16s} σ = {c.sigma:.6g}{ratio} — {verdict}")
        if self.table is not None:
            where = self.table.path or "the engine (checkpointed)"
            lines.append(f"  cells: noised where the data lives, kept in {where}; "
                         "see .table / .to_arrow()")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        head = f"{self.label}{'' if self.secure else ' [SEEDED SIMULATION, NOT private]'}: "
        if self.table is not None:
            return head + f"{self.table.n_cells} cells (in the engine), σ = {self.sigma:.4g}"
        if self.values.size == 1 and not self.columns:
            return head + f"{self.value:.6g} [{self.ci_low[0]:.6g}, {self.ci_high[0]:.6g}]"
        return head + f"{self.values.size} values, σ = {self.sigma:.4g}"


def _plain(value: Any) -> Any:
    """A key value as a plain Python value (NumPy scalars unwrapped)."""
    return value.item() if isinstance(value, np.generic) else value


def _half(r: ReleaseResult) -> float:
    return float(np.max(r.ci_high - r.ci_low) / 2)
