"""The reproduction report: every table and number of a :class:`Reproduction` as Markdown.

All verdicts in the report are computed from the results it is given; the paper's published
values appear only in their own columns, for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from approxdp._version import __version__
from approxdp.experiments.methods import LABELS
from approxdp.experiments.table1 import method_label
from approxdp.experiments.utility import UtilityCurves
from approxdp.reproduction.results import Reproduction

__all__ = ["render_report"]


def _g(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


def _figure(name: str, caption: str) -> list[str]:
    return [f"![{caption}]({name})", ""]


def _table1(res: Reproduction) -> list[str]:
    rows = []
    for r in res.table1:
        u = r.use
        rows.append([
            u.paper, method_label(u.method), f"{u.epsilon:g}", f"{u.delta:g}",
            f"{u.published_sigma:.4f}", f"{r.sigma:.6f}", _g(r.true_delta, 4),
            _g(r.true_epsilon, 5), "yes" if r.private else "**no**",
            f"{u.published_least:.4f}", f"{r.least:.6f}",
            r.least_verdict if r.sigma_verdict == "ok" else
            f"sigma {r.sigma_verdict}; least {r.least_verdict}",
        ])
    lines = [
        "## Table I recomputed: published uses of the classical formulas",
        "",
        "Sensitivity 1. *sigma used*: the classical formula (Zhao et al. Eq. 1 or 2) as published "
        "and as recomputed; *true delta*: the exact profile (Zhao et al. Thm 2) at that sigma; "
        "*true eps*: the least eps at which that sigma is DP at the claimed delta; *least "
        "sigma*: DP-OPT (Thm 2). A published value agrees if it is our value rounded or "
        "truncated to 4 decimals; otherwise the verdict says where it came from (another "
        "eps of the same row: *swapped*; a naive float Phi = (1 + erf)/2: noted).",
        "",
    ]
    lines += _table(
        ["Paper", "Mechanism", "eps", "delta", "sigma used (paper)", "sigma used (ours)",
         "true delta", "true eps", "DP?", "least sigma (paper)", "least sigma (exact)",
         "verdict"], rows)
    notes = [r for r in res.table1 if r.note]
    if notes:
        lines += ["Notes:", ""]
        lines += [f"- {r.use.paper}, eps = {r.use.epsilon:g}: {r.note}." for r in notes]
        lines.append("")
    return lines


def _table2(res: Reproduction) -> list[str]:
    rows = [[c.claim, c.source, f"{c.holds_at} / {c.points}",
             "holds" if c.holds else "**fails**", c.worst, c.domain] for c in res.table2]
    return [
        "## Table II (and III) checked numerically",
        "",
        "Each claim evaluated with the library on a grid; *holds at* counts the grid points "
        "where it is true. \"Slightly greater\" is read as at most 10% greater.",
        "",
        *_table(["Claim", "Source", "Holds at", "Verdict", "Worst point", "Checked on"], rows),
    ]


def _thresholds(res: Reproduction) -> list[str]:
    deltas = sorted({t.delta for t in res.thresholds}, reverse=True)
    by = {(t.method, t.notion, t.delta): t for t in res.thresholds}
    rows = []
    for d in deltas:
        row = [f"{d:g}"]
        for method in ("dwork-roth-2014", "dwork-2006"):
            dp, pdp = by.get((method, "dp", d)), by.get((method, "pdp", d))
            row += [_g(dp.exact, 6) if dp else "-",
                    _g(dp.published) if dp and dp.published else "-",
                    _g(pdp.exact, 6) if pdp else "-"]
        rows.append(row)
    lines = [
        "## G(delta): the least eps at which the classical formulas fail",
        "",
        "Paper Thm 1 and Remark 2: Dwork-2014 (G*) and Dwork-2006 (G#) are not "
        "(eps, delta)-DP for eps > G(delta); the same for pDP (Fig. 3). Exact values "
        "from `classical_failure_threshold`; Zhao et al.'s Remark 2 values beside them.",
        "",
        *_table(["delta", "G* DP (exact)", "G* DP (paper)", "G* pDP (exact)",
                 "G# DP (exact)", "G# DP (paper)", "G# pDP (exact)"], rows),
    ]
    for t in res.thresholds:
        if t.published is None:
            continue
        if t.claim_holds:
            what = (f"the paper's {t.published:g} is above the exact {t.exact:.6g}: its "
                    f"claim holds, but the method already fails on ({t.exact:.6g}, "
                    f"{t.published:g}]")
        else:
            what = (f"the paper's {t.published:g} is below the exact {t.exact:.6g}: "
                    f"\"fails for every eps > {t.published:g}\" is false on "
                    f"({t.published:g}, {t.exact:.6g})")
        lines.append(f"- {method_label(t.method)}, delta = {t.delta:g}: {what}.")
    return [*lines, ""]


def _utility_table(c: UtilityCurves) -> list[str]:
    headers = [c.parameter, *[LABELS.get(m, m) for m in c.methods]]
    rows = [[f"{v:g}", *[_g(float(c.error[j, i]), 4) for j in range(len(c.methods))]]
            for i, v in enumerate(c.values)]
    fixed = ", ".join(f"{k} = {v:g}" for k, v in c.fixed.items())
    runs = "1 run" if c.reps == 1 else f"{c.reps} runs"
    lines = [f"**{c.figure}** ({c.metric}, mean of {runs}; {fixed}):", "",
             *_table(headers, rows)]
    ratio = c.ratio_to("optimal") if "optimal" in c.methods else None
    if ratio is not None:
        parts = []
        for j, m in enumerate(c.methods):
            if m == "optimal" or np.all(np.isnan(ratio[j])):
                continue
            parts.append(f"{LABELS.get(m, m)} {np.nanmin(ratio[j]):.3g}-{np.nanmax(ratio[j]):.3g}")
        lines += [f"Error relative to DP-OPT: {'; '.join(parts)}.", ""]
    return lines


def _utility(res: Reproduction) -> list[str]:
    lines = ["## Fig. 4: mean estimation", "",
             "n = 1000 points x_i = x_0 + xi_i in R^d (x_0 ~ N(0, I), xi_i uniform on "
             "[-1/2, 1/2]^d), replace-one neighbours, l2-sensitivity sqrt(d)/n; l2 error of "
             "the released mean. d = 10 in panels (a) and (b) (the paper does not say; its text "
             "also calls these results Figure 5). "
             "Every method sees the same seeded noise stream.", "",
             *_figure("fig4_mean_estimation.png", "Fig. 4")]
    for c in res.mean_estimation:
        lines += _utility_table(c)
    lines += ["## Fig. 5: Adult histogram", "",
              "Counts over the combination of all categorical attributes of the complete "
              "Adult records, add/remove neighbours, sensitivity 1, MSE over the non-empty "
              "cells (the expected MSE is sigma^2 for any released domain).", "",
              *_figure("fig5_adult_histogram.png", "Fig. 5")]
    for c in res.histogram:
        lines += _utility_table(c)
    return lines


def _noise(res: Reproduction) -> list[str]:
    n = res.noise
    if n is None:
        return []
    rows = []
    for name, scale, values, tails in (
        (f"Laplace b = {n.laplace_scale:.4g}", n.laplace_scale * math.sqrt(2.0), n.laplace,
         n.tails[0]),
        (f"Gaussian Dwork-2014 sigma = {n.sigma_classical:.4g}", n.sigma_classical,
         n.classical, n.tails[1]),
        (f"Gaussian DP-OPT sigma = {n.sigma_optimal:.4g}", n.sigma_optimal, n.optimal,
         n.tails[2]),
    ):
        cells = [f"{_g(float(tails[i]), 3)} ({_g(float(np.mean(np.abs(values) > t)), 3)})"
                 for i, t in enumerate(n.thresholds)]
        rows.append([name, f"{scale:.4g} ({np.std(values):.4g})", *cells])
    return [
        "## Laplace vs Gaussian noise (the notes)", "",
        f"eps = {n.epsilon:g}, delta = {n.delta:g} for the Gaussians, {n.laplace.size:,} "
        "samples each (the notes drew 100 Laplace against 100,000 Gaussian values, and their "
        "code's delta = 10e-5 is 1e-4, not the 1e-5 of their text). Exact values, empirical "
        "in parentheses.", "",
        *_figure("laplace_vs_gaussian_noise.png", "Laplace vs Gaussian noise"),
        *_table(["noise", "std", *[f"P[abs > {t:g}]" for t in n.thresholds]], rows),
    ]


def _composition(res: Reproduction) -> list[str]:
    c = res.composition
    if c is None:
        return []
    show = [k for k in (1, 10, 70, 100, 1000, 10_000) if k in c.ks]
    rows = []
    for k in show:
        i = int(np.flatnonzero(c.ks == k)[0])
        rows.append([str(k), _g(c.basic[i], 5), _g(c.advanced[i], 5),
                     _g(c.simplified[i], 5) + ("" if c.simplified_valid[i] else " (not a bound)"),
                     _g(c.optimal[i], 5), _g(c.gaussian[i], 5)])
    cross = c.simplified_below_basic_from
    under = c.simplified_below_optimal_from
    lines = [
        "## Composition as k grows (the notes' plot, improved)", "",
        f"k steps of eps = {c.epsilon:g} each; total eps at delta = {c.delta:g}. Basic, "
        "advanced (Dwork-Roth Thm 3.20), the notes' simplified 2 eps sqrt(2k ln(1/delta)), "
        "the optimal composition of Kairouz-Oh-Viswanath (exact over all eps-DP mechanisms) "
        f"and k Gaussian steps each exactly (eps, delta)-DP (sigma = {c.gaussian_sigma:.5g}),"
        " composed exactly (Zhao et al. Lemma 15).", "",
        *_figure("composition.png", "composition"),
        *_table(["k", "basic", "advanced (Thm 3.20)", "notes' simplified",
                 "optimal (Kairouz et al. 2017)", "exact Gaussian"], rows),
        f"- The notes' simplified form drops below basic composition from k = {cross} at "
        f"delta = {c.delta:g}.",
    ]
    notes = res.composition_notes
    if notes is not None:
        lines.append(
            f"- At delta = {notes.delta:g} (the notes' code: 10e-5) it does so from k = "
            f"{notes.simplified_below_basic_from}: the notes' "
            "\"about 70\".")
    if under is not None:
        lines.append(
            f"- From k = {under} on it is below the exact optimum: there it understates the "
            "privacy loss (it is a valid bound only where sqrt(k)(e^eps - 1) <= "
            "sqrt(2 ln(1/delta)), i.e. for very small k at eps = 1).")
    return [*lines, ""]


def _max_error(res: Reproduction) -> list[str]:
    m = res.max_error
    if m is None:
        return []
    rows = []
    for i, k in enumerate(m.ks):
        rows.append([str(k), _g(m.laplace_measured[i]), _g(m.laplace_exact[i]),
                     _g(m.laplace_bound[i]),
                     *[_g(m.gaussian_measured[j, i]) for j in range(len(m.gaussian_methods))],
                     _g(m.gaussian_exact[0, i]), _g(m.gaussian_bound[i])])
    gm = [f"Gaussian {LABELS.get(x, x)} (measured)" for x in m.gaussian_methods]
    return [
        "## Max error of k counting queries: Laplace vs Gaussian (Wu's notes, Eq. 36-37)", "",
        f"eps = {m.epsilon:g}, delta = {m.delta:g}, {m.reps} simulated releases per k. Laplace "
        "noise of scale k/eps (l1-sensitivity k); Gaussian noise for l2-sensitivity sqrt k.",
        "",
        *_figure("max_error_k_queries.png", "max error"),
        *_table(["k", "Laplace (measured)", "Laplace exact", "Eq. 36 bound", *gm,
                 "Gaussian DP-OPT exact", "Eq. 37 bound"], rows),
        f"- The Gaussian (DP-OPT) beats Laplace from k = {m.crossover_measured} (measured), "
        f"k = {m.crossover_exact} (exact expectations), k = {m.crossover_bound} (the two "
        f"bounds); the lecture's rule k ln k >= ln(1/delta) gives k = {m.crossover_heuristic}.",
        "",
    ]


def _attack(res: Reproduction) -> list[str]:
    a = res.attack
    if a is None:
        return []
    rows = []
    for i, k in enumerate(a.ks):
        c = a.cost
        rows.append([str(k), _g(a.laplace_rmse[i]), _g(a.laplace_theory[i]),
                     _g(a.gaussian_rmse[i]), _g(a.gaussian_theory[i]), _g(c.basic[i], 5),
                     _g(c.simplified[i], 5), _g(c.advanced[i], 5), _g(c.optimal[i], 5),
                     _g(c.gaussian[i], 5)])
    return [
        "## The averaging attack (the notes)", "",
        f"The mean of k answers to one sensitivity-1 query, eps = {a.epsilon:g} per answer, "
        f"{a.reps} simulated attacks per k; privacy cost at delta = {a.delta:g}.", "",
        *_figure("averaging_attack.png", "averaging attack"),
        *_table(["k", "RMSE Laplace", "theory", "RMSE Gaussian", "theory", "basic",
                 "notes' simplified", "advanced", "optimal (Kairouz et al. 2017)",
                 "exact Gaussian"], rows),
    ]


def _summary(res: Reproduction) -> list[str]:
    lines = ["## Findings", ""]
    t1 = res.table1
    if t1:
        failing = sum(not r.private for r in t1)
        ratio = [r.true_delta / r.use.delta for r in t1]
        lines.append(
            f"- Table I: {failing} of {len(t1)} published settings are not (eps, delta)-DP "
            f"with the sigma they used (true delta {min(ratio):.3g} to {max(ratio):.3g} times "
            "the claimed one).")
        for r in t1:
            if r.sigma_verdict != "ok" or r.least_verdict != "ok":
                lines.append(f"  - {r.use.paper}, eps = {r.use.epsilon:g}: {r.note}.")
    for c in res.table2:
        if not c.holds:
            lines.append(f"- {c.source}: \"{c.claim}\" fails at {c.points - c.holds_at} of "
                         f"{c.points} points ({c.worst}).")
    wrong = [t for t in res.thresholds if t.claim_holds is False]
    if wrong:
        lines.append("- Remark 2: the published G(delta) is below the exact threshold for " +
                     ", ".join(f"{method_label(t.method)} at delta = {t.delta:g}"
                               for t in wrong) + ".")
    for curves in (*res.mean_estimation, *res.histogram):
        j = curves.methods.index("optimal") if "optimal" in curves.methods else None
        if j is None:
            continue
        best = np.nanmin(curves.error, axis=0)
        wins = int(np.count_nonzero(curves.error[j] <= best))
        lines.append(f"- {curves.figure}: DP-OPT has the least {curves.metric} at {wins} of "
                     f"{curves.values.size} points.")
    return [*lines, ""]


def render_report(res: Reproduction) -> str:
    """The Markdown report of a reproduction run."""
    lines = [
        "# Reproduction of Zhao et al., \"Reviewing and Improving the Gaussian Mechanism "
        "for Differential Privacy\"",
        "",
        f"Generated by approxdp {__version__} ({res.settings.name} mode, "
        f"{res.seconds:.0f} s of computation). Every number below is computed by the library at "
        "run time; the paper's published values appear only beside ours. Sensitivity 1 "
        "unless said otherwise.",
        "",
        *_summary(res),
        *_table1(res),
        *_table2(res),
        *_thresholds(res),
        "## Fig. 1-3", "",
        *_figure("fig1_dp_failure_regions.png", "Fig. 1"),
        *_figure("fig2_sigma_vs_delta.png", "Fig. 2"),
        *_figure("fig3_pdp_failure_regions.png", "Fig. 3"),
        *_utility(res),
        "## Privacy profiles", "",
        *_figure("privacy_profiles.png", "privacy profiles"),
        *_noise(res),
        *_composition(res),
        *_max_error(res),
        *_attack(res),
    ]
    return "\n".join(lines).rstrip() + "\n"
