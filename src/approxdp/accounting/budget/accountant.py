"""PrivacyAccountant: a total (ε, δ) budget that spends can never take past its limit — even
when the analyst chooses each spend after seeing earlier outputs.

The accountant consumes the mechanisms' events (:mod:`approxdp.events`). It has two modes,
which say what they promise (the rules and their contracts:
:data:`~approxdp.accounting.registry.ACCOUNTING_RULES`):

- ``adaptivity="full"`` (default): the ledger is a **privacy filter** (Rogers et al. 2016): the
  whole interaction is (ε, δ)-DP at the budget however each spend's parameters were chosen
  from earlier outputs. Its rule is ``"gdp"`` (default; the Gaussian-DP residue filter of
  :mod:`approxdp.accounting.budget.filter`: exact for Gaussian releases, plans committed before
  the first spend charged by their privacy-loss distribution) or ``"basic"``.
- ``adaptivity="fixed"``: the caller **promises** that every spend's parameters were fixed
  before any noise was drawn (a declared sequence); any ledger rule may then be used,
  including the tighter ones that are not filters (``"auto"``, ``"pld"``, ``"optimal"``,
  ``"advanced"``; :mod:`approxdp.accounting.composition.rules`). An adaptive analyst can defeat
  them: the guide "Adaptive analysts and privacy filters" shows how.

Every spend is checked and recorded atomically *before* the caller draws noise; a refused
spend raises :class:`BudgetExceededError` and changes nothing. A sequence fixed in advance (a
DP-SGD run, a study) can be committed as one unit (:meth:`PrivacyAccountant.commit`).

Example:
    >>> from approxdp.events import GaussianEvent
    >>> acc = PrivacyAccountant(budget=(1.0, 1e-5))
    >>> receipt = acc.spend(GaussianEvent(sigma=10.0))
    >>> receipt.index, acc.remaining().count, acc.remaining().adaptivity
    (1, 1, 'full')
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from approxdp.accounting.budget.admission import (
    accountable_cost,
    close_update,
    commit_update,
    plan_result,
    spend_check,
)
from approxdp.accounting.budget.arguments import (
    check_budget,
    check_rdp_share,
    plan_items,
    reopened_budget,
    resolve_mode,
    resolve_share,
)
from approxdp.accounting.budget.filter import Commitment, FilterKind
from approxdp.accounting.budget.ledger import FilterLogEntry, Ledger, SpendRecord
from approxdp.accounting.budget.opening import file_ledger, memory_ledger, stored_settings
from approxdp.accounting.budget.status import BudgetStatus, PlanResult, explain_text, status_of
from approxdp.accounting.budget.sub_budgets import sub_named
from approxdp.accounting.composition.costs import Contribution, LedgerState
from approxdp.accounting.composition.filter_state import ZERO, RdpShare
from approxdp.errors import InvalidParameterError, LedgerRecertificationWarning, ParameterTypeError
from approxdp.events import PrivacyEvent

__all__ = ["AUTO_SHARE_DELTA", "BudgetStatus", "PlanResult", "PrivacyAccountant"]

#: ``basic_share="auto"`` reserves (0, δ_B times this) for partition selection (its (0, δ) is
#: dominated by no Gaussian): about 1 % of the Gaussian releases' μ at common budgets
#: (μ² room after a (0, δ_A) block: the exact Gaussian rule at (ε_B, (δ_B − δ_A)/(1 − δ_A))).
AUTO_SHARE_DELTA = 0.2


class PrivacyAccountant:
    """Tracks spends against a total (ε, δ) budget; never lets the total exceed it.

    Args:
        budget: the total (ε, δ): ε ≥ 0 finite, δ ∈ [0, 1). May be left out when ``ledger``
            names an existing ledger file: its stored budget, mode and rule are used
            (:func:`~approxdp.accounting.read_ledger_settings`).
        ledger: None for an in-memory ledger, or a path to a SQLite ledger file (created if
            absent; shared safely by threads and processes; an existing file keeps its
            budget, mode and rule).
        composition: the rule. With ``adaptivity="full"``: ``"gdp"`` (default) or
            ``"basic"``, the valid privacy filters. With ``adaptivity="fixed"``: also
            ``"auto"`` (its default), ``"pld"``, ``"optimal"`` and ``"advanced"``
            (:data:`~approxdp.accounting.registry.ACCOUNTING_RULES` says what each
            certifies).
        adaptivity: ``"full"`` (default: spends may be chosen after earlier outputs; the
            ledger is a filter) or ``"fixed"`` (the caller promises every spend's parameters
            were fixed before any noise was drawn). A ledger file written before filters
            existed may be re-declared ``"fixed"`` once, before its next spend.
        basic_share: an (ε, δ) within the budget, fixed now, for events with δ > 0 that no
            Gaussian dominates (truncated Laplace, partition selection, a discrete Gaussian):
            after the first spend the ``"gdp"`` filter can admit those only from such a share
            or from a plan committed before the first spend. It costs the Gaussian releases
            the room its privacy-loss distribution takes (None: no share). ``"auto"`` (an
            in-memory budget only; :class:`~approxdp.releases.PrivateTable`'s default):
            (0, :data:`AUTO_SHARE_DELTA` · δ), for partition selection, fixed at the first
            spend or commitment if that one fits with it, else no share — decided before any
            noise is drawn, so it is as fixed in advance as a share given here.
        rdp_share: an (ε_R, δ_R) within the budget, fixed now, for a **Rényi filter** at orders
            fixed now (``rdp_orders``; default
            :data:`~approxdp.accounting.budget.filter_rdp.DEFAULT_SHARE_ORDERS`) inside the
            ``"gdp"`` filter: subsampled Gaussians (DP-SGD steps) spent one at a time, after
            the first spend, are charged their Rényi divergence there (tight for DP-SGD)
            instead of their Gaussian's μ²; Gaussian and pure-ε events go there when the
            Gaussian-DP room (and basic share) cannot take them. The share is part of the
            block declared at creation, so it costs the Gaussian-DP room what its (ε_R, δ_R)
            takes; ``rdp_share=budget`` makes the whole ledger a Rényi filter (Feldman & Zrnic
            2021; :mod:`~approxdp.accounting.budget.filter_rdp`). A ledger file stores it
            when created (reopen it with the same share, or without one). None: no share.
        rdp_orders: the Rényi share's orders α > 1 (at most 1024), fixed now; the share's δ_R
            is split evenly between them.
        sub_budgets: ``{"name": (ε_i, δ_i)}`` or ``{"name": {"budget": (ε_i, δ_i), ...}}``
            (the other keys: ``composition``, ``basic_share``, ``rdp_share``, ``rdp_orders``;
            in memory ``sub_budgets``; under a ledger file ``ledger``): ledgers of their own,
            fixed now, reached by :meth:`sub`. Each is a valid filter on its (ε_i, δ_i), so an
            (ε_i, δ_i)-DP interactive mechanism; run concurrently with this ledger they
            compose as their curves do (concurrent composition: Vadhan & Zhang 2023,
            arXiv:2207.08335; filters inside: Haney et al. 2023,
            arXiv:2309.05901), so each enters this ledger's block declared at creation as an
            (ε_i, δ_i) event, checked once by certified PLD (``"gdp"`` filter). Spends in
            different sub-budgets may then be interleaved in any order. This ledger's own
            block is then fixed at creation (a sub-budget may draw noise before its first
            spend): plans it commits are charged up front, and its first spend like any
            other. Under a ledger file each sub-budget is a ledger file of its own in the same
            folder (``study.sqlite`` → ``study.a.sqlite``, or the file named by its
            ``"ledger"``); the file records the split, so reopening it without
            ``sub_budgets`` uses the stored one and another split is a ``LedgerError``
            (:mod:`~approxdp.accounting.budget.sub_budgets`).
        read_only: open the ``ledger`` file only to read it (a file the user may only read;
            an older schema is read as it is): :meth:`spend` and :meth:`commit` then refuse.

    Raises:
        InvalidParameterError, UnknownMethodError: on a bad budget, rule, mode or share; or a
            rule that is not a filter without ``adaptivity="fixed"``.
        LedgerError: if the ledger file is corrupt, foreign, or made for another budget or
            mode.
    """

    def __init__(
        self,
        budget: tuple[float, float] | None = None,
        ledger: str | os.PathLike[str] | None = None,
        composition: str | None = None,
        *,
        adaptivity: str | None = None,
        basic_share: tuple[float, float] | Literal["auto"] | None = None,
        rdp_share: tuple[float, float] | None = None,
        rdp_orders: Iterable[float] | None = None,
        sub_budgets: Mapping[str, Any] | None = None,
        read_only: bool = False,
    ) -> None:
        settings = stored_settings(ledger)
        budget = reopened_budget(budget, settings, ledger)
        self._epsilon, self._delta = check_budget(budget)
        self._adaptivity, self._composition = resolve_mode(settings, adaptivity,
                                                           composition, self._delta)
        self._share, pending = resolve_share(basic_share, settings, ledger, self._composition,
                                             self.budget, AUTO_SHARE_DELTA)
        self._filter_kind: FilterKind | None = (
            "gdp" if self._composition == "gdp" else
            "basic" if self._composition == "basic" and self._adaptivity == "full" else None
        )
        rdp = check_rdp_share(rdp_share, rdp_orders, self._composition, self.budget)
        self._persistent = ledger is not None
        self._path = None if ledger is None else Path(ledger)
        self._ledger: Ledger
        if ledger is None:
            self._ledger, self._subs = memory_ledger(
                sub_budgets, self._composition, self.budget, self._filter_kind, self._share,
                pending, rdp, PrivacyAccountant)
            return
        self._ledger, self._subs = file_ledger(
            ledger, settings, sub_budgets, self._composition, self._adaptivity, self.budget,
            self._share, rdp, read_only, PrivacyAccountant)
        over = self._ledger.state().filter
        if over is not None and over.over is not None:
            warnings.warn(over.over, LedgerRecertificationWarning, stacklevel=2)

    # -- properties ------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        """Whether spends are kept in a ledger file (a budget that outlives this process)."""
        return self._persistent

    @property
    def ledger_path(self) -> Path | None:
        """The ledger file (None for an in-memory ledger)."""
        return self._path

    @property
    def ledger_id(self) -> str | None:
        """The ledger file's random identity, named by its receipts (None in memory)."""
        ledger_id = getattr(self._ledger, "ledger_id", None)
        return None if ledger_id is None else str(ledger_id)

    @property
    def budget(self) -> tuple[float, float]:
        """The total (ε, δ) budget."""
        return (self._epsilon, self._delta)

    @property
    def composition(self) -> str:
        """The ledger's rule (:data:`~approxdp.accounting.registry.ACCOUNTING_RULES`)."""
        return self._composition

    @property
    def adaptivity(self) -> str:
        """``"full"`` (a privacy filter) or ``"fixed"`` (a declared sequence, promised)."""
        return self._adaptivity

    @property
    def filter_kind(self) -> FilterKind | None:
        """The privacy filter that admits spends (``"gdp"`` or ``"basic"``), or None under a
        rule that is not a filter; :meth:`commit` needs one."""
        return self._filter_kind

    @property
    def basic_share(self) -> tuple[float, float] | None:
        """The basic share: fixed at creation, or by ``basic_share="auto"`` at the first spend
        (None: none, or not fixed yet)."""
        f = self._ledger.state().filter
        if f is None or f.share == (ZERO, ZERO) or f.kind != "gdp":
            return self._share
        return (float(f.share[0]), float(f.share[1]))

    def sub(self, name: str) -> PrivacyAccountant:
        """The ledger of sub-budget ``name`` (``sub_budgets=``): spend on it as on any
        accountant; it never takes more than its own (ε_i, δ_i). Under a ledger file it is a
        :class:`PrivacyAccountant` on the sub-budget's own file (its spends persist; its
        :attr:`ledger_path` names the file).

        Raises:
            UnknownMethodError: no sub-budget of that name.
        """
        return sub_named(self._subs, name)

    @property
    def sub_budgets(self) -> dict[str, tuple[float, float]]:
        """Each sub-budget's (ε_i, δ_i), by name (empty: none)."""
        return {name: a.budget for name, a in self._subs.items()}

    @property
    def rdp_share(self) -> RdpShare | None:
        """The Rényi share fixed at creation (orders, budgets and what is used), or None."""
        f = self._ledger.state().filter
        return None if f is None else f.rdp

    def _status(self, state: LedgerState) -> BudgetStatus:
        """This ledger's status in ``state``
        (:func:`~approxdp.accounting.budget.status.status_of`)."""
        return status_of(state, self.budget, self._composition, self._adaptivity,
                         self._filter_kind)

    # -- spending --------------------------------------------------------------------------

    def spend(self, event: PrivacyEvent, *, seeded: bool = False) -> SpendRecord:
        """Debit ``event`` from the budget. Call it BEFORE drawing the noise.

        Under a filter an event matching an open commitment (:meth:`commit`) is taken from
        it (already charged); otherwise it is charged as the filter says
        (:mod:`approxdp.accounting.budget.filter`).

        ``seeded``: the spend pays for a seeded simulation (NOT private), recorded so and shown
        "seeded, not private" wherever the ledger is shown (see
        :class:`~approxdp.releases.PrivateTable`'s ``allow_seeded_ledger``).

        Returns:
            The recorded SpendRecord (with what admitted it).

        Raises:
            BudgetExceededError: the spend would exceed the budget, or the ledger refuses
                spends (an old ledger over budget under its filter); nothing was recorded.
                ``err.remaining`` is the BudgetStatus before the spend, ``err.requested``
                the event.
            ParameterTypeError, InvalidParameterError: ``event`` is not an accountable event,
                or its cost is not finite (e.g. σ/Δ below about 1e-154); nothing was recorded.
        """
        check = spend_check(event, self.budget, self._composition, self._status)
        return self._ledger.append(event, self._cost(event), check, seeded=seeded)

    def _cost(self, event: PrivacyEvent) -> Contribution:
        return accountable_cost(event, self._filter_kind, self._composition)

    def commit(self, events: Iterable[Any], *, label: str = "plan") -> Commitment:
        """Commit a plan: events whose parameters are fixed now, before any of their noise is
        drawn (a DP-SGD run with fixed σ, q and T; a study declared up front; a batch).

        Committed before the first spend, the plan joins the block the filter declares in
        advance and is charged by its privacy-loss distribution (a DP-SGD run costs what the
        PLD accountant says, not its Gaussian-DP domination). Committed later, it is charged
        up front in the filter's currencies. Either way the whole plan is reserved: its
        events, spent later in any order (each BEFORE its noise), are taken from it; stopping
        early is allowed (:meth:`close_commitment`).

        Args:
            events: the plan's events, or (event, count) pairs (``[(step, 1000)]`` for 1000
                identical DP-SGD steps costs one PLD composition).
            label: free text, shown in the ledger.

        Returns:
            The :class:`~approxdp.accounting.budget.filter.Commitment`.

        Raises:
            BudgetExceededError: the plan does not fit; nothing was recorded.
            InvalidParameterError: with ``adaptivity="fixed"`` (every spend is already part
                of a declared sequence there: spend the events; :meth:`plan` checks that they
                fit).
        """
        if self._filter_kind is None:
            raise InvalidParameterError(
                "commit() keeps a plan's tight cost under a privacy filter; this ledger is "
                f"adaptivity='fixed' (rule {self._composition!r}), where every spend already "
                "counts as part of a declared sequence: spend the events (plan() checks that "
                "they fit)"
            )
        items = plan_items(events)
        for event, _ in items:
            self._cost(event)
        box: list[Commitment] = []
        self._ledger.update_filter(commit_update(items, str(label), self.budget, self._status,
                                                 box))
        return box[0]

    def close_commitment(self, commitment: Commitment | int) -> Commitment:
        """Close a committed plan before all of its events are spent (stopping early).

        A plan committed after the first spend is refunded its unspent events (its prepaid
        room was still room: the filter's residue is unchanged). A plan committed before the
        first spend and closed while nothing has been spent is withdrawn, as if never
        committed (no noise has been drawn, so no output depends on it). Closed after the
        first spend, it gives back its unspent Gaussian parts (charged exactly to the room)
        and nothing of its other parts: their curve was part of the declared block, and
        cannot become Gaussian room. Its remaining events, if spent later, are charged like
        any others.

        Returns:
            The closed commitment.
        """
        cid = commitment.id if isinstance(commitment, Commitment) else commitment
        if isinstance(cid, bool) or not isinstance(cid, int):
            raise ParameterTypeError(f"commitment must be a Commitment or its id, got {cid!r}")
        if self._filter_kind is None:
            raise InvalidParameterError("this ledger has no commitments (adaptivity='fixed')")
        box: list[Commitment] = []
        self._ledger.update_filter(close_update(cid, self.budget, box))
        return box[0]

    def commitments(self) -> tuple[Commitment, ...]:
        """Every committed plan, oldest first (no side effects)."""
        f = self._ledger.state().filter
        return () if f is None else f.commitments

    def commitment_log(self) -> tuple[FilterLogEntry, ...]:
        """Every commit and close, oldest first, with its time (no side effects); with
        :meth:`history` it replays the ledger's decisions in order."""
        return self._ledger.filter_log()

    def plan(self, events: Iterable[PrivacyEvent]) -> PlanResult:
        """Would ``events``, spent in this order after the history, fit? Spends nothing."""
        return plan_result(self._ledger.state(), events, self.budget, self._cost,
                           self._status)

    def remaining(self) -> BudgetStatus:
        """The budget's current status (no side effects)."""
        return self._status(self._ledger.state())
    def explain(self) -> str:
        """What certifies this ledger's total, in a few lines (for people)."""
        state = self._ledger.state()
        text = explain_text(state, self._status(state))
        for name, sub in self._subs.items():
            r = sub.remaining()
            where = "" if sub.ledger_path is None else f" in {str(sub.ledger_path)!r}"
            text += (f"\nsub-budget {name!r}: (ε, δ) = {sub.budget} (a ledger of its own"
                     f"{where}, fixed at creation, part of the declared block); {r.count} "
                     "spend(s)")
        return text

    def history(self) -> tuple[SpendRecord, ...]:
        """Every accepted spend, oldest first (no side effects)."""
        return self._ledger.records()

    def close(self) -> None:
        """Close the ledger and its sub-budgets' (a no-op for in-memory ledgers)."""
        for sub in self._subs.values():
            sub.close()
        self._ledger.close()

    def __enter__(self) -> PrivacyAccountant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

