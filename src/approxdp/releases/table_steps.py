"""How a :class:`~approxdp.releases.PrivateTable` is made, and its three steps.

:class:`TableSteps` holds what every release of a table needs: the loaded (and cast) table,
its engine, the accountant that pays, the privacy unit and contribution caps, the noise
source; and the three steps every release goes through — plan (an immutable list of queries
under the table's neighbouring relation and bounds), allocate (one (ε, δ) split across the
plan by joint Gaussian calibration: :mod:`approxdp.releases.plan`), execute (aggregate,
spend, add noise: :mod:`approxdp.releases.execute`). :class:`~approxdp.releases.PrivateTable`
adds one method per kind of release (:mod:`approxdp.releases.session`).
"""

from __future__ import annotations

import copy
import dataclasses
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting import Accountant, BudgetStatus, PrivacyAccountant
from approxdp.engines import Engine, engine_for
from approxdp.errors import (
    DataError,
    InvalidParameterError,
    ParameterTypeError,
    SeededLedgerError,
)
from approxdp.releases.accuracy import AccuracyPlan, accuracy_of, plan_for_accuracy
from approxdp.releases.dense import LARGE_DOMAIN_CELLS
from approxdp.releases.execute import execute
from approxdp.releases.plan import AllocatedPlan, ReleasePlan, allocate
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import (
    CAST_ERRORS,
    CastErrors,
    ContributionBounds,
    Count,
    Neighbouring,
    Query,
)
from approxdp.releases.transformations import TableTransformations

__all__ = ["CAST_TYPES", "TableSteps"]


class TableSteps(TableTransformations):
    """The construction of a :class:`~approxdp.releases.PrivateTable` (its arguments are
    documented there) and the plan → allocate → execute steps of its releases."""

    def __init__(
        self,
        data: object,
        *,
        budget: tuple[float, float] | None = None,
        accountant: Accountant | None = None,
        neighbouring: Neighbouring = "add-remove",
        privacy_unit: str | None = None,
        max_partitions: int = 1,
        max_rows_per_partition: int = 1,
        engine: str | Engine[Any] = "auto",
        seed: int | None = None,
        method: str = "optimal",
        large_domain_cells: int = LARGE_DOMAIN_CELLS,
        output_dir: str | None = None,
        casts: Mapping[str, str] | None = None,
        cast_errors: CastErrors = "drop",
        allow_seeded_ledger: bool = False,
        basic_share: tuple[float, float] | Literal["auto"] | None = "auto",
        rdp_share: tuple[float, float] | None = None,
        rdp_orders: Sequence[float] | None = None,
        sub_budgets: Mapping[str, Any] | None = None,
    ) -> None:
        one_of = "pass exactly one of budget=(epsilon, delta) or accountant="
        if accountant is None:
            if budget is None:
                raise ParameterTypeError(one_of)
            accountant = PrivacyAccountant(budget=budget, basic_share=basic_share,
                                           rdp_share=rdp_share, rdp_orders=rdp_orders,
                                           sub_budgets=sub_budgets)
        elif budget is not None:
            raise ParameterTypeError(one_of)
        else:
            _check_no_settings(basic_share, rdp_share, rdp_orders, sub_budgets)
        if seed is not None and getattr(accountant, "persistent", False) and not (
                allow_seeded_ledger):
            raise SeededLedgerError(
                f"seed={seed!r} makes every release a seeded simulation (NOT private), but the "
                "accountant keeps its spends in a ledger file, where they would look like real "
                "releases; use an in-memory budget (budget=(epsilon, delta)) for simulations, "
                "or pass allow_seeded_ledger=True to record them, marked 'seeded, not private'"
            )
        self.accountant: Accountant = accountant
        self.bounds = ContributionBounds(privacy_unit, max_partitions, max_rows_per_partition)
        ReleasePlan((Count(),), neighbouring, self.bounds)  # validates neighbouring early
        self.neighbouring: Neighbouring = neighbouring
        self.method = method
        self.engine = engine_for(data, engine)
        self.table = self.engine.load(data)
        #: {column: (values that were not numbers, up to three of them)} for each cast column.
        self.cast_report: dict[str, tuple[int, tuple[str, ...]]] = {}
        checked = _check_casts(casts)
        if cast_errors not in CAST_ERRORS:
            raise InvalidParameterError(
                f"cast_errors must be one of {list(CAST_ERRORS)}, got cast_errors={cast_errors!r}"
            )
        for column in checked:
            self.cast_report[column] = self.engine.count_unconvertible(self.table, column)
            if cast_errors == "error" and self.cast_report[column][0]:
                raise DataError(
                    f"casts: column {column!r} has values that are not numbers, and "
                    "cast_errors='error' refuses them: clean the column, or pass "
                    "cast_errors='drop' to treat them as missing values"
                )
            self.table = self.engine.cast_to_double(self.table, column)
        self._rng = np.random.default_rng(seed) if seed is not None else None
        if isinstance(large_domain_cells, bool) or not isinstance(large_domain_cells, int):
            raise ParameterTypeError(
                f"large_domain_cells must be an integer, got {large_domain_cells!r}"
            )
        if large_domain_cells < 1:
            raise InvalidParameterError(
                f"large_domain_cells must be >= 1, got large_domain_cells={large_domain_cells}"
            )
        self.large_domain_cells = large_domain_cells
        self.output_dir = None if output_dir is None else str(output_dir)

    # -- the three steps -------------------------------------------------------------------
    def plan(self, queries: Sequence[Query], weights: Sequence[float] | None = None) -> ReleasePlan:
        """Step 1: an immutable plan of ``queries`` under this table's relation and bounds."""
        return ReleasePlan(
            tuple(queries), self.neighbouring, self.bounds,
            None if weights is None else tuple(weights),
        )

    def allocate(
        self, plan: ReleasePlan, *, epsilon: float, delta: float,
        selection_fraction: float = 0.5,
    ) -> AllocatedPlan:
        """Step 2: split (ε, δ) across ``plan`` (joint Gaussian calibration)."""
        return allocate(plan, epsilon, delta, method=self.method,
                        selection_fraction=selection_fraction)

    def execute(
        self, allocated: AllocatedPlan, *, level: float = 0.95
    ) -> tuple[ReleaseResult, ...]:
        """Step 3: aggregate, spend, add noise."""
        check_parameter("level", level)
        results = execute(allocated, self.engine, self.table, self.accountant, key=self._key(),
                          rng=self._rng, level=level, large_domain_cells=self.large_domain_cells,
                          output_dir=self.output_dir)
        return self._with_cast_notes(results)

    def _key(self) -> int:
        """The bounding key of one release: from the seed, else secret."""
        if self._rng is not None:
            return int(self._rng.integers(0, 2**63 - 1))
        return secrets.randbits(63)

    def _with_cast_notes(
        self, results: tuple[ReleaseResult, ...]
    ) -> tuple[ReleaseResult, ...]:
        """The results with this table's transformation steps in their notes (public: the
        filters, derived columns and public joins asked for) and its cast report in their
        diagnostics (exact, not private)."""
        steps = self._step_notes()
        casts = any(n for n, _ in self.cast_report.values())
        if not steps and not casts:
            return results
        return tuple(
            dataclasses.replace(
                r, notes=r.notes + steps,
                diagnostics=r.diagnostics.with_casts(self.cast_report) if casts else r.diagnostics,
            )
            for r in results
        )

    def release(
        self, queries: Sequence[Query], *, epsilon: float, delta: float,
        weights: Sequence[float] | None = None, level: float = 0.95,
    ) -> tuple[ReleaseResult, ...]:
        """Plan, allocate and execute ``queries`` together for a total (ε, δ)."""
        allocated = self.allocate(self.plan(queries, weights), epsilon=epsilon, delta=delta)
        return self.execute(allocated, level=level)

    # -- planning by accuracy (spends nothing) ----------------------------------------------
    def plan_for_accuracy(
        self, queries: Sequence[Query], *, delta: float,
        half_width: float | Sequence[float | None] | None = None,
        rmse: float | Sequence[float | None] | None = None, level: float = 0.95,
        weights: Sequence[float] | None = None, rows: int | None = None,
    ) -> AccuracyPlan:
        """The least ε whose intervals (at ``level``) are no wider than ``half_width`` and
        whose noise's RMSE is at most ``rmse`` (one target, or one per query), with the
        per-query accuracy it buys: one jointly calibrated plan, through the exact Gaussian
        calibration (:mod:`approxdp.releases.accuracy`). ``rows``: the rows a :class:`Mean`
        expects. Reads no data and spends nothing."""
        return plan_for_accuracy(self.plan(queries, weights), delta=delta,
                                 half_width=half_width, rmse=rmse, level=level,
                                 method=self.method, secure=self._rng is None, rows=rows)

    def accuracy(
        self, queries: Sequence[Query], *, epsilon: float, delta: float, level: float = 0.95,
        weights: Sequence[float] | None = None, rows: int | None = None,
    ) -> AccuracyPlan:
        """The per-query accuracy (interval half-width, RMSE, σ) that releasing ``queries``
        at (ε, δ) buys — the reverse of :meth:`plan_for_accuracy`. Spends nothing."""
        return accuracy_of(self.plan(queries, weights), epsilon, delta, method=self.method,
                           level=level, secure=self._rng is None, rows=rows)

    def remaining(self) -> BudgetStatus:
        """What the accountant has left."""
        return self.accountant.remaining()

    def sub_budget(self, name: str) -> Self:
        """This table (the same rows, transformations and settings) paying from sub-budget
        ``name`` of its accountant (``sub_budgets=`` at creation;
        :meth:`PrivacyAccountant.sub <approxdp.accounting.PrivacyAccountant.sub>`): its
        releases never take more than that sub-budget's own (ε_i, δ_i), whatever the other
        sub-budgets and the main budget spend, in any order.

        Raises:
            UnknownMethodError: the accountant has no sub-budget ``name``.
            ParameterTypeError: the accountant has no sub-budgets at all (one that is not a
                :class:`~approxdp.accounting.PrivacyAccountant`).
        """
        sub = getattr(self.accountant, "sub", None)
        if sub is None:
            raise ParameterTypeError(
                f"sub_budget({name!r}) needs a PrivacyAccountant with sub-budgets; this "
                f"table's accountant is a {type(self.accountant).__name__}"
            )
        child = copy.copy(self)
        child.accountant = sub(name)
        return child


def _check_no_settings(basic_share: object, rdp_share: object, rdp_orders: object,
                       sub_budgets: object) -> None:
    """ParameterTypeError for a ledger setting passed with ``accountant=``: an accountant's
    settings are fixed when it is created."""
    for name, value, default, example in (
        ("basic_share", basic_share, "auto", "basic_share=(epsilon, delta)"),
        ("rdp_share", rdp_share, None, "rdp_share=(epsilon, delta)"),
        ("rdp_orders", rdp_orders, None, "rdp_share=(epsilon, delta), rdp_orders=[...]"),
        ("sub_budgets", sub_budgets, None, "sub_budgets={name: (epsilon, delta)}"),
    ):
        if (value is not None) if default is None else (value != default):
            raise ParameterTypeError(
                f"{name}={value!r} is for the accountant that budget= creates; an "
                f"accountant's {name} is fixed when it is created: pass it there "
                f"(PrivacyAccountant(..., {example}))"
            )


#: The conversions ``PrivateTable(casts=...)`` knows.
CAST_TYPES = ("double",)


def _check_casts(casts: Mapping[str, str] | None) -> dict[str, str]:
    if casts is None:
        return {}
    if not isinstance(casts, Mapping):
        raise ParameterTypeError(
            f"casts must map column names to a type, e.g. {{'amount': 'double'}}, got {casts!r}"
        )
    out = {}
    for column, kind in casts.items():
        if not isinstance(column, str) or not column:
            raise ParameterTypeError(f"casts keys must be column names, got {column!r}")
        if kind not in CAST_TYPES:
            raise InvalidParameterError(
                f"casts[{column!r}] must be one of {list(CAST_TYPES)}, got {kind!r}"
            )
        out[column] = kind
    return out
