"""Plans of several spends, committed to the ledger as one unit before their first spend.

A release that spends more than once — ``bounds="private"``: the bounds, then the statistic
clamped to them — fixes every privacy parameter of its spends before any of their noise is
drawn (σ does not depend on the bounds: :mod:`approxdp.releases.private_bounds`). Such a
sequence is a *declared* plan in the sense of a privacy filter (Rogers et al. 2016,
arXiv:1605.08294), and the accountant can take it whole
(:meth:`PrivacyAccountant.commit <approxdp.accounting.PrivacyAccountant.commit>`): committed
before the ledger's first spend it joins the block the Gaussian-DP filter charges by its
privacy-loss distribution (parts no Gaussian dominates included, e.g. the (0, δ) of partition
selection); committed later it is charged up front in the filter's currencies, exactly as its
spends one at a time would be, and refused whole, before the first spend, if it does not fit.
Its spends, each still recorded before its noise, are then taken from the commitment (their
event descriptions match it).

Stopping early stays sound and loses no ledger row: every spend made is recorded; if the plan
stops (an error, an interrupt) the commitment is closed — refunded if prepaid, withdrawn if
nothing at all was spent since the ledger was created, given up otherwise
(:func:`~approxdp.accounting.budget.filter.close_commitment`); if the process dies before
that, the commitment stays open and its unspent events stay reserved (the ledger only ever
over-counts).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from approxdp.accounting.budget.filter_state import Commitment
from approxdp.accounting.budget.protocols import Accountant
from approxdp.errors import ApproxDPError
from approxdp.events import PrivacyEvent

__all__ = ["closed_if_stopped", "commit_plan"]


def commit_plan(accountant: Accountant, events: Sequence[PrivacyEvent],
                label: str) -> Commitment | None:
    """Commit ``events`` (a plan of two or more spends, every parameter fixed now) to
    ``accountant`` as one unit (module docstring). Returns the commitment, or None where the
    accountant keeps no plans (a rule that is not a filter, an accountant without
    ``commit``) or the plan has a single event: its spends are then charged one at a time.

    Raises:
        BudgetExceededError: the plan does not fit (nothing committed or spent).
    """
    commit = getattr(accountant, "commit", None)
    if (len(events) < 2 or not callable(commit)
            or getattr(accountant, "filter_kind", None) is None):
        return None
    commitment = commit(events, label=label)
    assert isinstance(commitment, Commitment)
    return commitment


@contextlib.contextmanager
def closed_if_stopped(accountant: Accountant, commitment: Commitment | None) -> Iterator[None]:
    """Run the plan's releases; if they stop early (any exception, an interrupt included),
    close ``commitment`` if it still has events, then let the exception through. If the
    ledger cannot close it now (it failed too), the commitment stays open: its unspent events
    stay reserved."""
    try:
        yield
    except BaseException:
        if commitment is not None:
            keeper: Any = accountant
            with contextlib.suppress(ApproxDPError):
                for c in keeper.commitments():
                    if c.id == commitment.id and c.open:
                        keeper.close_commitment(c.id)
        raise
