"""The demo on the bundled Adult data: the releases ``approxdp demo`` prints.

Half the budget releases the number of complete records, the mean age and two small
histograms over declared domains (one plan, jointly calibrated); the other half releases the
paper's histogram (Zhao et al. §VI, Fig. 5): counts over the combination of all nine
categorical attributes of the 45,222 complete records, add/remove neighbours, Δ = 1. Its
domain has 54,001,920 cells, so cells are chosen by DP partition selection. The report ends
with the noise each calibration would need for that histogram at the full (ε, δ).

Both releases are fixed before any noise is drawn, so the demo commits them to its ledger as
one study first (:meth:`~approxdp.accounting.PrivacyAccountant.commit`): the ledger, a privacy
filter, then charges them by their exact curve — the selection's δ included, which a filter
could not admit after a first noise draw without a share reserved for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from approxdp.accounting import PrivacyAccountant
from approxdp.data import ADULT_CATEGORICAL, load_adult
from approxdp.releases import (
    Count,
    Histogram,
    Mean,
    MethodComparison,
    PrivateTable,
    ReleaseResult,
    compare_methods,
)

__all__ = ["AdultDemo", "run_adult_demo"]

RACES = ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White")


@dataclass(frozen=True)
class AdultDemo:
    """The demo's releases and the calibration comparison, printable with ``str()``."""

    epsilon: float
    delta: float
    releases: tuple[ReleaseResult, ...]
    paper_histogram: ReleaseResult
    comparisons: tuple[MethodComparison, ...]

    def report(self) -> str:
        """A compact plain-text report."""
        out = [f"approxdp demo — UCI Adult, its complete records, budget ε = {self.epsilon:g},"
               f" δ = {self.delta:g} (add/remove one record)", ""]
        for r in self.releases:
            if not r.columns:
                out.append(f"{r.label:28s} {r.values[0]:12.2f}   95% CI [{r.ci_low[0]:.2f}, "
                           f"{r.ci_high[0]:.2f}]   σ = {r.std[0]:.3g}")
            else:
                out.append(f"{r.label}: {r.values.size} cells, σ = {r.std[0]:.3g} per cell")
                for key, v, lo, hi in zip(r.keys, r.values, r.ci_low, r.ci_high, strict=True):
                    name = " × ".join(map(str, key))
                    out.append(f"    {name:40s} {v:10.1f}  [{lo:.1f}, {hi:.1f}]")
        h = self.paper_histogram
        out += ["", f"{h.label}: all 9 categorical attributes (domain 54,001,920 cells), Δ = 1",
                f"    σ = {h.sigma:.4g} per cell (MSE = σ² = {h.sigma ** 2:.4g}); partition "
                f"selection threshold {h.threshold:.4g}; {h.values.size} cells released"]
        top = np.argsort(-h.values)[:3]
        for i in top:
            out.append(f"    {' × '.join(map(str, h.keys[i]))[:90]}: {h.values[i]:.1f}")
        out += ["", f"Noise for that histogram at the full budget (ε = {self.epsilon:g}, "
                f"δ = {self.delta:g}, Δ = 1):",
                f"    {'method':16s} {'σ':>10s} {'MSE':>10s}  verdict"]
        for c in self.comparisons:
            if c.sigma is None:
                out.append(f"    {c.method:16s} {'n/a':>10s}")
                continue
            verdict = "(ε, δ)-DP" if c.private else "NOT (ε, δ)-DP"
            out.append(f"    {c.method:16s} {c.sigma:10.4g} {c.sigma ** 2:10.4g}  {verdict}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.report()


def run_adult_demo(
    epsilon: float = 1.0, delta: float = 1e-6, seed: int | None = None
) -> AdultDemo:
    """Run the Adult demo at total budget (ε, δ); ``seed`` makes it reproducible."""
    data = load_adult()
    accountant = PrivacyAccountant(budget=(epsilon, delta))
    table = PrivateTable(data, accountant=accountant, seed=seed)
    small_queries = [
        Count(name="complete records"),
        Mean("age", (17.0, 90.0), name="mean age"),
        Histogram(("income",), {"income": ["<=50K", ">50K"]}, name="income"),
        Histogram(("sex", "race"), {"sex": ["Female", "Male"], "race": list(RACES)},
                  name="sex × race"),
    ]
    paper_queries = [Histogram(ADULT_CATEGORICAL, name="paper histogram")]
    study = [table.allocate(table.plan(q), epsilon=epsilon / 2, delta=delta / 2).event()
             for q in (small_queries, paper_queries)]
    accountant.commit([e for e in study if e is not None], label="Adult demo")
    small = table.release(small_queries, epsilon=epsilon / 2, delta=delta / 2)
    paper = table.release(paper_queries, epsilon=epsilon / 2, delta=delta / 2)[0]
    comparisons = compare_methods(epsilon, delta, 1.0, paper.sigma)
    return AdultDemo(epsilon, delta, small, paper, comparisons)
