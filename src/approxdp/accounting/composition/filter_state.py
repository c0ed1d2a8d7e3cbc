"""The privacy filter's state: plain data, stored with every spend of a ledger.

The rules that change it live in :mod:`approxdp.accounting.budget.filter`; this module holds
only the records (so that :mod:`~approxdp.accounting.composition.costs` can name the state
without importing the rules). A privacy filter is fully adaptive composition (Rogers et al.
2016, arXiv:1605.08294), so its records sit with the other composition pieces, below the ledger
that uses them (old import path: :mod:`approxdp.accounting.budget.filter_state`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, TypeAlias

__all__ = ["FILTERS", "ZERO", "Commitment", "FilterKind", "FilterState", "Pricing", "RdpShare"]

FilterKind: TypeAlias = Literal["gdp", "basic"]
FILTERS: tuple[FilterKind, ...] = ("gdp", "basic")
Pricing: TypeAlias = Literal["declared", "prepaid"]
ZERO = Fraction(0)


@dataclass(frozen=True, slots=True)
class Commitment:
    """A plan committed to a ledger: events fixed before any of their noise is drawn.

    Attributes:
        id: its number in the ledger (1, 2, ...).
        label: free text.
        pricing: ``"declared"`` (committed before the first spend: charged by its curve, in
            the declared block) or ``"prepaid"`` (committed later: charged up front in
            Gaussian-DP room and basic share, refunded if closed early).
        planned: (event description, count) pairs as committed.
        remaining: the same, less what has been spent.
        prices: (description, μ² each, basic ε each, basic δ each): a prepaid plan's, or a
            declared plan's Gaussian parts (refunded if closed early); empty in files
            written before declared plans kept them (nothing is refunded then).
        closed: True once closed (its remaining events are then charged like any others).
    """

    id: int
    label: str
    pricing: Pricing
    planned: tuple[tuple[str, int], ...]
    remaining: tuple[tuple[str, int], ...]
    prices: tuple[tuple[str, float, Fraction, Fraction], ...] = ()
    closed: bool = False

    @property
    def spent(self) -> int:
        """How many of its events have been spent."""
        return sum(c for _, c in self.planned) - sum(c for _, c in self.remaining)

    @property
    def open(self) -> bool:
        """True while it has events left and is not closed."""
        return not self.closed and any(c > 0 for _, c in self.remaining)


@dataclass(frozen=True, slots=True)
class RdpShare:
    """A Rényi-DP share of the budget, fixed when the ledger is created: a Rényi filter at
    orders fixed then (:mod:`approxdp.accounting.budget.filter_rdp` gives its theorem).

    Attributes:
        epsilon, delta: the (ε_R, δ_R) the share is certified for (part of the declared block
            whose privacy-loss distribution sets the Gaussian-DP room).
        orders: the Rényi orders α_j, fixed at creation.
        budgets: each order's Rényi budget B_j (rounded down): (α_j, B_j)-RDP converts to
            (ε_R, δ_R / k)-DP, k = the number of orders.
        used: Σρ_t(α_j) charged to each order (rounded up).
    """

    epsilon: Fraction
    delta: Fraction
    orders: tuple[float, ...]
    budgets: tuple[float, ...]
    used: tuple[float, ...]

    @property
    def pair(self) -> tuple[Fraction, Fraction]:
        """(ε_R, δ_R)."""
        return (self.epsilon, self.delta)

    def alive(self, used: tuple[float, ...] | None = None) -> bool:
        """True while some order is within its budget (with ``used`` instead, if given)."""
        return any(u <= b for u, b in zip(self.used if used is None else used, self.budgets,
                                          strict=True))


@dataclass(frozen=True, slots=True)
class FilterState:
    """The filter's state: every number its certificate rests on, fixed as it was decided.

    Attributes:
        kind: ``"gdp"`` or ``"basic"``.
        pristine: True until the first spend (noise may be drawn only after a spend).
        declared: (description, count) of the non-Gaussian parts declared before the first
            spend (committed plans and the first spend itself).
        room: the Gaussian-DP room μ² left for everything outside the declared block, as
            certified when the block was fixed; None when nothing non-Gaussian is declared (the
            exact Gaussian rule applies).
        gdp_used: Σμᵢ² charged to the room (rounded up), prepaid plans included.
        share: the basic share (ε_A, δ_A) fixed at creation (the whole budget for ``"basic"``).
        share_used: Σ(εᵢ, δᵢ) charged to the share, exactly.
        commitments: every committed plan.
        over: why the stored history exceeds the budget under this filter (set when an old
            ledger is re-certified), or None.
        pending_share: a basic share to fix at the first spend or commitment if it fits then
            (``basic_share="auto"``), or None (states written before it existed: None).
        auto_share: the ``"auto"`` share asked for at creation, kept once decided (a plan
            withdrawn before any spend puts the decision back), or None.
        rdp: the Rényi-DP share fixed at creation (``rdp_share=``), or None (states written
            before it existed: None).
        subs: the sub-budgets fixed at creation (``sub_budgets=``): (name, ε_i, δ_i), each a
            ledger of its own, part of the declared block (states written before: ()).
    """

    kind: FilterKind = "gdp"
    pristine: bool = True
    declared: tuple[tuple[str, int], ...] = ()
    room: float | None = None
    gdp_used: float = 0.0
    share: tuple[Fraction, Fraction] = (ZERO, ZERO)
    share_used: tuple[Fraction, Fraction] = (ZERO, ZERO)
    commitments: tuple[Commitment, ...] = ()
    over: str | None = None
    pending_share: tuple[Fraction, Fraction] | None = None
    auto_share: tuple[Fraction, Fraction] | None = None
    rdp: RdpShare | None = None
    subs: tuple[tuple[str, Fraction, Fraction], ...] = ()

    @property
    def fixed_pairs(self) -> tuple[tuple[Fraction, Fraction], ...]:
        """The (ε, δ) of every share fixed at creation other than the basic share — the Rényi
        share, the sub-budgets — as parts of the declared block."""
        pairs = () if self.rdp is None else (self.rdp.pair,)
        return (*pairs, *((e, d) for _, e, d in self.subs))

    def to_json(self) -> str:
        """The state as JSON (fractions as exact "p/q" strings)."""

        def plain(value: Any) -> Any:
            if isinstance(value, Fraction):
                return str(value)
            if isinstance(value, tuple | list):
                return [plain(v) for v in value]
            if isinstance(value, Commitment | RdpShare):
                return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return value

        obj = {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return json.dumps(obj, sort_keys=True, allow_nan=False)

    @staticmethod
    def from_json(text: str) -> FilterState:
        """Inverse of :meth:`to_json`."""
        obj = json.loads(text)

        def pairs(value: Any) -> tuple[tuple[str, int], ...]:
            return tuple((str(k), int(c)) for k, c in value)

        def frac2(value: Any) -> tuple[Fraction, Fraction]:
            return (Fraction(value[0]), Fraction(value[1]))

        commitments = tuple(
            Commitment(
                id=int(c["id"]), label=str(c["label"]), pricing=c["pricing"],
                planned=pairs(c["planned"]), remaining=pairs(c["remaining"]),
                prices=tuple((str(k), float(g), Fraction(e), Fraction(d))
                             for k, g, e, d in c["prices"]),
                closed=bool(c["closed"]),
            )
            for c in obj["commitments"]
        )
        return FilterState(
            kind=obj["kind"], pristine=bool(obj["pristine"]), declared=pairs(obj["declared"]),
            room=None if obj["room"] is None else float(obj["room"]),
            gdp_used=float(obj["gdp_used"]), share=frac2(obj["share"]),
            share_used=frac2(obj["share_used"]), commitments=commitments, over=obj["over"],
            pending_share=None if obj.get("pending_share") is None else
            frac2(obj["pending_share"]),
            auto_share=None if obj.get("auto_share") is None else frac2(obj["auto_share"]),
            rdp=None if obj.get("rdp") is None else RdpShare(
                epsilon=Fraction(obj["rdp"]["epsilon"]), delta=Fraction(obj["rdp"]["delta"]),
                orders=tuple(float(a) for a in obj["rdp"]["orders"]),
                budgets=tuple(float(b) for b in obj["rdp"]["budgets"]),
                used=tuple(float(u) for u in obj["rdp"]["used"]),
            ),
            subs=tuple((str(n), Fraction(e), Fraction(d)) for n, e, d in obj.get("subs", ())),
        )
