"""The one registry of accounting rules: what each certifies, and whether it survives adaptivity.

Every tool that composes privacy takes its rule names from here: the ledger
(:class:`~approxdp.accounting.PrivacyAccountant`'s ``composition=``), ``compose`` (the CLI's
rows), DP-SGD accounting (``dpsgd_epsilon``'s ``accountant=``) and budget splitting
(``split_budget``'s ``composition=``); the CLI's choices, the browser pages and the docs' rules
table (generated from :data:`ACCOUNTING_RULES`) read the same entries.

Each rule states:

- **what it certifies**: ``exact``, ``upper bound`` or ``approximation`` (the
  :class:`~approxdp.accounting.Guarantee` kinds), and the theorem behind it;
- **whether it is a valid privacy filter** under fully adaptive parameters — an analyst who
  picks the next release *and its ε, δ, σ* after seeing earlier outputs (Rogers et al. 2016,
  arXiv:1605.08294) — and the theorem behind that statement. A rule that is not a filter
  answers "how private is this sequence, declared in advance"; a ledger may use it only with
  ``adaptivity="fixed"``, where the caller promises exactly that.

Why the distinction matters: composition theorems for declared sequences are not automatically
stopping rules. The natural PLD / f-DP filter (stop when the composed curve of the realised
history crosses the budget) is provably invalid under full adaptivity (Honkela et al. 2026,
arXiv:2602.06756; Regehr et al. 2026, arXiv:2602.15815), and so is taking, at each check, the
smallest of several valid bounds (the choice depends on the realised path). The tests build
such interactions and compute their exact δ (``tests/accounting/test_adaptive_attacks.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from approxdp.accounting.guarantees import Kind
from approxdp.errors import UnknownMethodError

__all__ = [
    "ACCOUNTING_RULES",
    "ADAPTIVITY_MODES",
    "LEDGER_SHARES",
    "TOOLS",
    "AccountingRule",
    "Adaptivity",
    "Tool",
    "accounting_rule",
    "rule_names",
]

Tool: TypeAlias = Literal["ledger", "compose", "dpsgd", "split"]
#: The tools that take a rule name: the ledger, ``compose``, DP-SGD accounting, budget splits.
TOOLS: tuple[Tool, ...] = ("ledger", "compose", "dpsgd", "split")

Adaptivity: TypeAlias = Literal["full", "fixed"]
#: ``full``: parameters may be chosen after earlier outputs (the default for a ledger);
#: ``fixed``: the caller promises every spend's parameters were fixed before any noise.
ADAPTIVITY_MODES: tuple[Adaptivity, ...] = ("full", "fixed")


@dataclass(frozen=True, slots=True)
class AccountingRule:
    """One accounting rule and its contract.

    Attributes:
        name: the rule's name (what ``composition=`` / ``accountant=`` / ``--rule`` take).
        title: a short human name with its source.
        certifies: ``"exact"``, ``"upper bound"`` or ``"approximation"``.
        what: what the number means, in one sentence.
        source: the theorem behind ``certifies`` (key of ``docs/bibliography.md``, number).
        filter_valid: True if the rule is a valid privacy filter under fully adaptive
            parameters (a ledger may use it with ``adaptivity="full"``).
        adaptivity_source: the theorem behind ``filter_valid`` (validity, or the proof that
            the rule fails as a filter).
        tools: the tools that offer it.
        aliases: ``(tool, name)`` pairs where a tool knows the rule by another name.
    """

    name: str
    title: str
    certifies: Kind
    what: str
    source: str
    filter_valid: bool
    adaptivity_source: str
    tools: tuple[Tool, ...]
    aliases: tuple[tuple[Tool, str], ...] = ()

    def name_in(self, tool: Tool) -> str:
        """The name ``tool`` knows this rule by."""
        return dict(self.aliases).get(tool, self.name)

    @property
    def adaptivity(self) -> Adaptivity:
        """``"full"`` for a valid filter, else ``"fixed"`` (declared sequences only)."""
        return "full" if self.filter_valid else "fixed"


_NATURAL_FILTER_INVALID = (
    "not a filter: the natural PLD / f-DP filter is invalid under full adaptivity (Honkela "
    "et al. 2026, arXiv:2602.06756, Sec. 3; Regehr et al. 2026, arXiv:2602.15815: natural "
    "filters are free only for families totally ordered under composition)"
)

#: Every accounting rule, in the order tools list them.
ACCOUNTING_RULES: tuple[AccountingRule, ...] = (
    AccountingRule(
        name="exact-gaussian",
        title="exact Gaussian composition (Zhao et al. 2019, Lemma 15)",
        certifies="exact",
        what="Gaussian releases compose into one Gaussian with σ* = (Σ Δᵢ²/σᵢ²)^(−1/2): its "
             "exact privacy profile",
        source="Zhao et al. 2019, Lemma 15; Dong et al. 2022, Sec. 3 (μᵢ-GDP steps compose "
               "to √(Σμᵢ²)-GDP)",
        filter_valid=True,
        adaptivity_source="Smith & Thakurta 2022 (arXiv:2210.17520): adaptively chosen μᵢ-GDP "
                          "steps with Σμᵢ² ≤ μ² are μ-GDP; Gaussians are totally ordered under "
                          "composition, so their natural filter is free (Regehr et al. 2026)",
        tools=("compose", "split"),
        aliases=(("split", "gaussian"),),
    ),
    AccountingRule(
        name="gdp",
        title="Gaussian-DP residue filter (Smith & Thakurta 2022; Regehr et al. 2026)",
        certifies="upper bound",
        what="the whole interaction is (ε, δ)-DP at the budget whatever the analyst adapts: "
             "Gaussian-DP room Σμᵢ² (Gaussians exactly, pure-ε events by their least "
             "dominating μ), plans declared before the first spend and shares fixed at "
             "creation charged by their privacy-loss distribution",
        source="Dong et al. 2022 (Gaussian DP; Sec. 3, composition of trade-off functions; "
               "the Laplace trade-off curve); Zhao et al. 2019, Lemma 15; Doroshenko et al. "
               "2022 (certified PLD)",
        filter_valid=True,
        adaptivity_source="Smith & Thakurta 2022 (arXiv:2210.17520, the GDP filter); the "
                          "residue argument of Regehr et al. 2026 (arXiv:2602.15815): each "
                          "step leaves a residue fixed before its noise is drawn",
        tools=("ledger",),
    ),
    AccountingRule(
        name="pld",
        title="privacy loss distribution (Doroshenko et al. 2022)",
        certifies="upper bound",
        what="the declared sequence's privacy profile from every event's own loss "
             "distribution, certified, within about 0.1 % of the exact one",
        source="Doroshenko et al. 2022 (connect-the-dots); Koskela et al. 2021 (FFT "
               "composition)",
        filter_valid=False,
        adaptivity_source=_NATURAL_FILTER_INVALID,
        tools=("ledger", "dpsgd"),
    ),
    AccountingRule(
        name="optimal",
        title="optimal composition (Kairouz et al. 2017)",
        certifies="exact",
        what="the exact privacy of k (ε, δ) steps over the class of all (ε, δ)-DP "
             "mechanisms (different steps: each taken as the largest)",
        source="Kairouz et al. 2017, Thm 3.3",
        filter_valid=False,
        adaptivity_source="not a filter: it needs the k steps fixed in advance (Rogers et al. "
                          "2016); adaptive randomized-response histories overspend under it "
                          "(Regehr et al. 2026)",
        tools=("ledger", "compose", "split"),
    ),
    AccountingRule(
        name="advanced",
        title="advanced composition (Dwork & Roth 2014, Thm 3.20)",
        certifies="upper bound",
        what="√(2k ln(1/δ′))ε + kε(e^ε − 1) for k steps of the largest (ε, δ)",
        source="Dwork & Roth 2014, Thm 3.20",
        filter_valid=False,
        adaptivity_source="not a filter as stated: it needs k and the steps' ε fixed in "
                          "advance (Rogers et al. 2016); filters with its rate have other "
                          "forms (Whitehouse et al. 2023) and are not implemented",
        tools=("ledger", "compose", "split"),
    ),
    AccountingRule(
        name="basic",
        title="basic composition (Dwork & Roth 2014, Thm 3.16)",
        certifies="upper bound",
        what="(Σεᵢ, Σδᵢ); a ledger with adaptivity='fixed' joins it to the exact Gaussian "
             "part, optimised over how ε is shared (declared sequences only)",
        source="Dwork & Roth 2014, Thm 3.16",
        filter_valid=True,
        adaptivity_source="Rogers et al. 2016 (arXiv:1605.08294): stopping once Σεᵢ ≤ ε and "
                          "Σδᵢ ≤ δ would fail is a valid filter for adaptively chosen (εᵢ, δᵢ)",
        tools=("ledger", "compose", "split"),
    ),
    AccountingRule(
        name="auto",
        title="the smallest of the PLD and the closed-form rules",
        certifies="upper bound",
        what="exact for all-Gaussian histories, otherwise the smallest of pld, basic and "
             "optimal at each check (each a valid bound for a declared sequence)",
        source="the rules it takes the smallest of",
        filter_valid=False,
        adaptivity_source="not a filter: choosing the smallest bound by the realised path "
                          "breaks even basic composition, and its PLD part is a natural f-DP "
                          "filter (Honkela et al. 2026; Regehr et al. 2026)",
        tools=("ledger",),
    ),
    AccountingRule(
        name="rdp",
        title="Rényi DP (Mironov et al. 2019) with the best conversion (Balle et al. 2020)",
        certifies="upper bound",
        what="a DP-SGD run's ε from its Rényi divergences at many orders, the best order "
             "chosen for the run",
        source="Mironov et al. 2019; Balle et al. 2020, Thm 21",
        filter_valid=False,
        adaptivity_source="not a filter as used: the order is chosen once the run is known; "
                          "a Rényi filter needs its orders fixed in advance (Feldman & Zrnic "
                          "2021; Lécuyer 2021)",
        tools=("dpsgd",),
    ),
    AccountingRule(
        name="gdp-clt",
        title="central-limit Gaussian DP (Bu et al. 2020)",
        certifies="approximation",
        what="the central-limit μ-GDP approximation of a DP-SGD run: can understate ε",
        source="Bu et al. 2020; Dong et al. 2022 (central limit theorem)",
        filter_valid=False,
        adaptivity_source="an approximation, so no guarantee at all; the fully adaptive CLT of "
                          "Honkela et al. 2026 is asymptotic too",
        tools=("dpsgd",),
    ),
    AccountingRule(
        name="amplify+compose",
        title="amplification by subsampling, then basic/advanced composition",
        certifies="upper bound",
        what="each step's (ε₀, δ₀) amplified by subsampling, composed by the better of basic "
             "and advanced composition",
        source="D. Wang's notes, Thm 5.4; Dwork & Roth 2014, Thms 3.16 and 3.20",
        filter_valid=False,
        adaptivity_source="not a filter: advanced composition needs the run fixed in advance "
                          "(Rogers et al. 2016)",
        tools=("dpsgd",),
    ),
)


#: Sub-filters a ``"gdp"`` ledger may be given at creation (not rules of their own: no tool takes
#: their names as ``composition=``); each is a share of the budget fixed before any noise.
LEDGER_SHARES: tuple[AccountingRule, ...] = (
    AccountingRule(
        name="rdp-share",
        title="Rényi filter at orders fixed at creation (Feldman & Zrnic 2021; Lécuyer 2021)",
        certifies="upper bound",
        what="PrivacyAccountant(..., rdp_share=(ε_R, δ_R), rdp_orders=...): subsampled "
             "Gaussians (DP-SGD steps), and Gaussian or pure-ε events the Gaussian-DP room "
             "cannot take, charged their Rényi divergence at each order; admitted while some "
             "order stays within B_j, where (α_j, B_j)-RDP converts to (ε_R, δ_R/k)-DP",
        source="Feldman & Zrnic 2021 (arXiv:2008.11193), Thm 3.1; Balle et al. 2020 Thm 21 "
               "(Canonne et al. 2020, Prop. 12) for the conversion; Mironov et al. 2019 for "
               "the subsampled Gaussian",
        filter_valid=True,
        adaptivity_source="Feldman & Zrnic 2021, Thm 3.1 (the Rényi filter at a fixed order); "
                          "several orders with δ_R split between them (after Lécuyer 2021, "
                          "arXiv:2103.01379; the union argument in "
                          "approxdp.accounting.budget.filter_rdp); concurrent composition with "
                          "the Gaussian-DP room (Vadhan & Zhang 2023, arXiv:2207.08335; "
                          "Haney et al. 2023, arXiv:2309.05901)",
        tools=("ledger",),
    ),
    AccountingRule(
        name="sub-budgets",
        title="sub-budgets fixed at creation, composed concurrently (Vadhan & Zhang 2023)",
        certifies="upper bound",
        what="PrivacyAccountant(..., sub_budgets={name: (ε_i, δ_i)}): ledgers of their own "
             "(acc.sub(name)), each a valid filter on its (ε_i, δ_i); their (ε_i, δ_i) and "
             "the main ledger's room fit the budget by certified PLD, checked once at creation",
        source="Dong et al. 2022, Sec. 3 (composition of trade-off curves); Doroshenko et al. "
               "2022 (certified PLD)",
        filter_valid=True,
        adaptivity_source="concurrent composition of f-DP interactive mechanisms (Vadhan & "
                          "Zhang 2023, arXiv:2207.08335); filters with adaptively chosen "
                          "parameters inside it (Haney et al. 2023, arXiv:2309.05901)",
        tools=("ledger",),
    ),
)


def rule_names(tool: Tool, adaptivity: Adaptivity | None = None) -> tuple[str, ...]:
    """The names ``tool`` offers, in registry order; with ``adaptivity="full"`` only the valid
    filters (``"fixed"``: every rule, since a declared sequence may use any)."""
    if tool not in TOOLS:
        raise UnknownMethodError(f"tool must be one of {TOOLS}, got tool={tool!r}")
    return tuple(
        r.name_in(tool) for r in ACCOUNTING_RULES
        if tool in r.tools and (adaptivity != "full" or r.filter_valid)
    )


def accounting_rule(name: str, tool: Tool | None = None) -> AccountingRule:
    """The registry entry named ``name`` (in ``tool``'s names, if given).

    Raises:
        UnknownMethodError: no such rule (for that tool).
    """
    for r in ACCOUNTING_RULES:
        if (tool is None and name in (r.name, *(a for _, a in r.aliases))) or (
            tool is not None and tool in r.tools and r.name_in(tool) == name
        ):
            return r
    known = rule_names(tool) if tool is not None else tuple(r.name for r in ACCOUNTING_RULES)
    raise UnknownMethodError(f"unknown accounting rule {name!r}; known: {known}")
