"""How the privacy filter charged a spend or a commitment, and why it refuses one.

:class:`Charge` is stored with every spend and commitment (so a ledger can be audited); the
refusal messages say what the event needs and what is left, in the filter's currencies
(:mod:`approxdp.accounting.budget.filter`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

from approxdp.accounting.budget.filter_parts import PartCost
from approxdp.accounting.budget.filter_rdp import rdp_left
from approxdp.accounting.budget.filter_rooms import _gauss_fits, budget_rho
from approxdp.accounting.composition.filter_state import (
    ZERO,
    FilterKind,
    FilterState,
)

__all__ = ["Charge"]


@dataclass(frozen=True, slots=True)
class Charge:
    """How one spend or commitment was charged (stored with it, so a ledger can be audited).

    Attributes:
        gdp: μ² charged to the Gaussian-DP room.
        basic: (ε, δ) charged to the basic share.
        declared: parts added to the declared block (charged by its PLD).
        commitment: the plan it was spent from, if any.
        rdp: (order, ρ) charged to the Rényi share, at each of its orders (empty: none).
    """

    gdp: float = 0.0
    basic: tuple[Fraction, Fraction] = (ZERO, ZERO)
    declared: tuple[tuple[str, int], ...] = ()
    commitment: int | None = None
    rdp: tuple[tuple[float, float], ...] = ()

    def describe(self, kind: FilterKind) -> str:
        """One line for the spend's ``rule`` column."""
        if self.commitment is not None:
            return f"filter '{kind}': from commitment #{self.commitment} (charged when committed)"
        parts = []
        if self.declared:
            parts.append("declared before the first spend (its PLD sets the room)")
        if self.gdp > 0.0:
            parts.append(f"Gaussian-DP room μ² = {self.gdp:.6g}")
        if self.basic != (ZERO, ZERO):
            parts.append(f"basic share (ε, δ) = ({float(self.basic[0]):.6g}, "
                         f"{float(self.basic[1]):.6g})")
        if any(r > 0.0 for _, r in self.rdp):
            order, rho = self.rdp[0]  # the share's order with the most left
            parts.append(f"Rényi share ρ = {rho:.6g} at α = {order:g} (and at "
                         f"{len(self.rdp) - 1} other orders)")
        return f"filter '{kind}': " + ("; ".join(parts) if parts else "free")

    def to_json(self) -> str:
        """The charge as JSON."""
        return json.dumps({"gdp": self.gdp, "basic": [str(self.basic[0]), str(self.basic[1])],
                           "declared": [list(p) for p in self.declared],
                           "commitment": self.commitment,
                           **({"rdp": [list(p) for p in self.rdp]} if self.rdp else {})},
                          sort_keys=True)


def _room_fits(state: FilterState, budget: tuple[float, float]) -> bool:
    if state.room is None:
        return _gauss_fits(state.gdp_used, budget)
    return state.gdp_used <= state.room


def _share_fits(state: FilterState) -> bool:
    return state.share_used[0] <= state.share[0] and state.share_used[1] <= state.share[1]


def _fmt(x: Fraction | float) -> str:
    return f"{float(x):.6g}"


def _left(state: FilterState, budget: tuple[float, float]) -> str:
    if state.kind == "basic":
        return (f"basic budget left: (ε, δ) = ({_fmt(state.share[0] - state.share_used[0])}, "
                f"{_fmt(state.share[1] - state.share_used[1])})")
    room = budget_rho(budget) if state.room is None else state.room
    out = f"Gaussian-DP room left: μ² = {max(room - state.gdp_used, 0.0):.6g} of {room:.6g}"
    if state.rdp is not None:
        order, used, total = rdp_left(state.rdp)
        out += (f"; Rényi share (ε, δ) = ({_fmt(state.rdp.epsilon)}, {_fmt(state.rdp.delta)}) "
                f"left: ρ = {max(total - used, 0.0):.6g} of {total:.6g} at α = {order:g}, its "
                "order with the most left")
    if state.share != (ZERO, ZERO):
        out += (f"; basic share left: (ε, δ) = ({_fmt(state.share[0] - state.share_used[0])}, "
                f"{_fmt(state.share[1] - state.share_used[1])})")
    return out


_NO_SHARE = (
    "the filter can admit it only from a basic share fixed when the ledger was created "
    "(PrivacyAccountant(..., basic_share=(epsilon, delta)), or PrivateTable(..., "
    "basic_share=(epsilon, delta)) for the budget a table creates) or in a plan committed "
    "before the first spend; after a first noise draw, admitting it from the Gaussian-DP "
    "room would let an adaptive analyst exceed the budget (guide: Adaptive analysts and "
    "privacy filters)"
)


def _refusal(state: FilterState, part: PartCost, budget: tuple[float, float], what: str) -> str:
    head = f"{what} does not fit the budget ({budget[0]:g}, {budget[1]:g}) under filter " \
           f"'{state.kind}' (fully adaptive)"
    if state.kind == "basic" and part.basic is None:
        return (f"{head}: a Gaussian release has no (epsilon, delta) of its own for basic "
                "composition; describe it as an EpsilonDeltaEvent at the delta you choose, or "
                "use the 'gdp' filter")
    if part.gdp is None and state.share == (ZERO, ZERO):
        return f"{head}: it has a part with delta > 0 that no Gaussian dominates, and {_NO_SHARE}"
    if part.gdp is None and part.basic is not None:
        return (f"{head}: it needs basic (ε, δ) = ({_fmt(part.basic[0])}, "
                f"{_fmt(part.basic[1])}); {_left(state, budget)}")
    detail = f"it needs μ² = {part.gdp:.6g}"
    if part.basic is not None:
        detail += f" (or basic (ε, δ) = ({_fmt(part.basic[0])}, {_fmt(part.basic[1])}))"
    note = ""
    if '"SubsampledEvent"' in part.key and '"type": "GaussianEvent"' in part.key:
        note = ("; a subsampled Gaussian spent after the first spend costs its Gaussian's μ² "
                "(no amplification) unless a Rényi share takes it: commit the whole run before "
                "the first spend to charge it by its privacy-loss distribution, or create the "
                "ledger with PrivacyAccountant(..., rdp_share=(epsilon, delta)) to spend "
                "DP-SGD steps one at a time by their Rényi divergence")
    return f"{head}: {detail}; {_left(state, budget)}{note}"


