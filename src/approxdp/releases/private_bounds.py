"""``bounds="private"``: clamping bounds estimated by a release of their own, then the release
that clamps to them — two spends, every check of both before the first.

The second release's bounds depend on the first one's noisy output, so the two cannot be
calibrated jointly; by basic composition they add up to exactly (ε, δ). Both privacy events
are known before any data is read (σ does not depend on the bounds), so the pair is a plan
fixed in advance: a privacy-filter ledger takes it as one commitment before its first spend
(:mod:`approxdp.releases.plan_commit`), and any accountant that can plan refuses it whole.
The release's own data checks (columns, groups, domain, empty table) run first on placeholder
bounds, by an accountant that stops at the spend.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting import BudgetStatus
from approxdp.accounting.budget.ledger import SpendRecord
from approxdp.accounting.budget.protocols import Accountant
from approxdp.accounting.serialization import event_key
from approxdp.engines.base import Engine
from approxdp.errors import BudgetExceededError, InsufficientDataError, InternalError
from approxdp.events import PrivacyEvent
from approxdp.releases.bounds import PrivateBounds
from approxdp.releases.derived import check_numeric_column
from approxdp.releases.execute import execute
from approxdp.releases.plan import AllocatedPlan, ReleasePlan
from approxdp.releases.plan_commit import closed_if_stopped, commit_plan
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import Query

__all__ = ["release_with_private_bounds"]


class _Table(Protocol):
    """What this needs of a :class:`~approxdp.releases.session.PrivateTable`."""

    engine: Engine[Any]
    table: Any
    accountant: Accountant
    large_domain_cells: int
    output_dir: str | None
    _rng: np.random.Generator | None

    def plan(self, queries: Sequence[Query],
             weights: Sequence[float] | None = None) -> ReleasePlan: ...

    def allocate(self, plan: ReleasePlan, *, epsilon: float, delta: float,
                 selection_fraction: float = 0.5) -> AllocatedPlan: ...

    def execute(self, allocated: AllocatedPlan, *,
                level: float = 0.95) -> tuple[ReleaseResult, ...]: ...

    def _key(self) -> int: ...


def release_with_private_bounds(
    table: _Table, query: Callable[[tuple[float, float]], Query], column: str, *,
    epsilon: float, delta: float, level: float, bounds_share: float,
) -> ReleaseResult:
    """Estimate the bounds of ``column`` from ``bounds_share`` of (ε, δ) on ``table``, then
    release ``query(bounds)`` with the rest (module docstring); the result's notes say how
    the budget was split and which bounds were used.

    Raises:
        BudgetExceededError: the two spends do not fit (nothing spent).
        InsufficientDataError: too few values for private bounds at this budget (nothing
            spent: an exact check before the first spend); or, rarely, the bounds came back
            as the whole range (``spent`` True: the first spend only).
        DataError, InvalidParameterError: a check of either release fails (nothing spent).
    """
    share = float(check_parameter("bounds_share", bounds_share, "probability"))
    check_parameter("level", level)
    eps_b, delta_b = epsilon * share, delta * share
    eps_r, delta_r = epsilon - eps_b, delta - delta_b
    # Every check before the first spend: the query with placeholder bounds is planned and
    # allocated with the rest of the budget (its columns are checked on the data below and
    # again by execute, which spends nothing when one fails).
    rest = table.allocate(table.plan([query((0.0, 1.0))]), epsilon=eps_r, delta=delta_r)
    first = table.allocate(table.plan([PrivateBounds(column)]), epsilon=eps_b, delta=delta_b)
    check_numeric_column(table.engine.schema(table.table), column, f"bounds({column})")
    # The release's own data checks (columns, groups, domain, empty table), run now on
    # placeholder bounds by an accountant that stops at the spend: nothing spent or drawn.
    with contextlib.suppress(_StoppedError):
        execute(rest, table.engine, table.table, _StopAtSpend(table.accountant), key=0,
                rng=None, level=level, large_domain_cells=table.large_domain_cells,
                output_dir=table.output_dir)
    # Both events are known before any data is read (σ does not depend on the bounds), so
    # the pair is one plan: committed whole before the first spend where the ledger is a
    # privacy filter (:mod:`approxdp.releases.plan_commit`), else checked by an accountant
    # that can plan; either way refused before the first spend if it does not fit.
    events = [e for e in (first.event(), rest.event()) if e is not None]
    refused = (
        f"bounds='private': the two spends (bounds with ε={eps_b:g}, δ={delta_b:g}, then the "
        f"release with ε={eps_r:g}, δ={delta_r:g}) do not fit the remaining budget"
    )
    try:
        commitment = commit_plan(table.accountant, events,
                                 f"bounds='private': {query((0.0, 1.0)).label()}")
    except BudgetExceededError as exc:
        raise BudgetExceededError(f"{refused}: {exc}; nothing was spent",
                                  remaining=table.accountant.remaining(),
                                  requested=tuple(events)) from None
    with closed_if_stopped(table.accountant, commitment):
        planner = getattr(table.accountant, "plan", None)
        if commitment is None and callable(planner):
            verdict = planner(events)
            if not verdict.fits:
                raise BudgetExceededError(
                    f"{refused} ({table.accountant.remaining()}); nothing was spent",
                    remaining=table.accountant.remaining(), requested=tuple(events),
                )
        found = execute(first, table.engine, table.table, table.accountant, key=table._key(),
                        rng=table._rng, level=0.95)[0]
        low, high = (float(v) for v in found.values)
        whole = PrivateBounds(column).ceiling
        if low <= -whole and high >= whole:  # no bin rose above the noise, by chance
            raise InsufficientDataError(
                f"bounds='private': the bounds of {column!r} came back as the whole range "
                f"±{whole:g} (no bin rose above the noise): the first spend (ε={eps_b:g}, "
                f"δ={delta_b:g}) is recorded, the release itself was not made and spent "
                "nothing",
                advice=f"bounds='private': the bounds of {column!r} could not be estimated; "
                       "the first spend is recorded, the release was not made: give public "
                       "bounds, or a larger epsilon (or bounds_share)",
                spent=True,
            )
        final = table.allocate(table.plan([query((low, high))]), epsilon=eps_r, delta=delta_r)
        if commitment is not None and _key(final.event()) != _key(rest.event()):
            raise InternalError(
                f"bounds='private': the release's privacy event {final.event()!r} is not the "
                f"one committed ({rest.event()!r}); the first spend is recorded, the release "
                "was not made"
            )
        result = table.execute(final, level=level)[0]
    split = (
        f"bounds='private': budget split in two spends — bounds [{low:.6g}, {high:.6g}] "
        f"estimated privately with ε={eps_b:g}, δ={delta_b:g} (bounds_share={share:g}: "
        "the 1 % and 99 % quantiles on a log scale), then this release with "
        f"ε={eps_r:g}, δ={delta_r:g}; at most ε={epsilon:g}, δ={delta:g} together (basic "
        "composition; the ledger may compose the two tighter)"
        + ("" if commitment is None else
           f"; committed to the ledger as one plan before its first spend (commitment "
           f"#{commitment.id})")
    )
    return dataclasses.replace(result, notes=(*result.notes, split),
                               extra={**result.extra, "bounds": found.values},
                               receipts=(*found.receipts, *result.receipts))


def _key(event: PrivacyEvent | None) -> str | None:
    return None if event is None else event_key(event)


class _StoppedError(Exception):
    """Raised by :class:`_StopAtSpend` where a release would spend."""


class _StopAtSpend:
    """An accountant that stops a release at its spend (a dry run of every check before it)."""

    def __init__(self, inner: Accountant) -> None:
        self._inner = inner

    def spend(self, event: PrivacyEvent, *, seeded: bool = False) -> SpendRecord:
        raise _StoppedError

    def remaining(self) -> BudgetStatus:
        return self._inner.remaining()
