"""Paper Table I recomputed: published uses of the classical Gaussian formulas that are not DP.

Each entry of the table is one (paper, ε, δ): the classical σ the paper used and the least σ
that would have been (ε, δ)-DP, as Zhao et al. publish them (for sensitivity Δ = 1). We
recompute both with the library — the classical σ from its formula (Zhao et al. Eq. 1, 2), the least
σ as DP-OPT (Zhao et al. Thm 2) — and compare with the published digits.

Where a published least σ disagrees, we look for where it came from, by computation only:
the exact least σ of another ε of the same row (the values were *swapped*), or what a naive
float64 evaluation of the profile with Φ(x) = (1 + erf(x/√2))/2 gives (that Φ cannot resolve
e^ε Φ(−…) at large ε, and under-noises). The verdicts are therefore outputs of this
module, not inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special

from approxdp.calibration import calibrate_gaussian
from approxdp.experiments.methods import LABELS, noise_amounts
from approxdp.profiles import gaussian_delta, gaussian_epsilon

__all__ = [
    "TABLE_I",
    "PublishedUse",
    "Table1Row",
    "agrees_to_published",
    "naive_float_least_sigma",
    "recompute_table1",
]


@dataclass(frozen=True, slots=True)
class PublishedUse:
    """One (ε, δ) entry of Zhao et al. Table I, with the values exactly as published.

    Attributes:
        paper: the cited work, as the table names it.
        method: the library's name of the classical formula the work used.
        epsilon, delta: the privacy parameters the work claimed.
        published_sigma: the table's "resulting noise amount" (σ/Δ).
        published_least: the table's "least noise amount" (σ/Δ).
        row: index of the table row (a row may list several ε or δ).
    """

    paper: str
    method: str
    epsilon: float
    delta: float
    published_sigma: float
    published_least: float
    row: int


_RAW: tuple[tuple[str, str, tuple[tuple[float, float, float, float], ...]], ...] = (
    ("Imtiaz and Sarwate [12]", "dwork-roth-2014", ((10, 1e-2, 0.3108, 0.3501),)),
    ("Liu et al. [13]", "dwork-roth-2014", ((6, 0.1, 0.3746, 0.3813), (10, 0.1, 0.2248, 0.2818))),
    (
        "Wang et al. [14]",
        "dwork-roth-2014",
        ((8.87, 1e-5, 0.5462, 0.5172), (9.59, 1e-5, 0.5052, 0.5513)),
    ),
    (
        "Ermis and Cemgil [15]",
        "dwork-roth-2014",
        ((10, 1e-2, 0.3108, 0.3501), (10, 1e-5, 0.4845, 0.4999)),
    ),
    ("Liu et al. [16]", "dwork-roth-2014", ((8, 0.1, 0.2809, 0.3215),)),
    ("Imtiaz and Sarwate [17]", "dwork-roth-2014", ((10, 1e-2, 0.3108, 0.3501),)),
    ("Jälkö et al. [7]", "dwork-roth-2014", ((10, 1e-3, 0.3776, 0.4061),)),
    (
        "Heikkilä et al. [8]",
        "dwork-roth-2014",
        ((10, 1e-4, 0.4344, 0.1976), (31.62, 1e-4, 0.1374, 0.4553)),
    ),
    ("Imtiaz and Sarwate [18]", "dwork-2006", ((10, 1e-2, 0.3325, 0.3501),)),
    ("Pyrgelis et al. [19]", "dwork-2006", ((10, 0.1, 0.2448, 0.2818),)),
    ("Wang et al. [21]", "dwork-2006", ((10, 0.1, 0.2448, 0.2818),)),
    ("Jain and Thakurta [20]", "dwork-2006", ((10, 1e-3, 0.3898, 0.4061),)),
)

#: Paper Table I, one entry per (work, ε, δ), values as published (Δ = 1).
TABLE_I: tuple[PublishedUse, ...] = tuple(
    PublishedUse(paper, method, float(e), float(d), s, least, row)
    for row, (paper, method, entries) in enumerate(_RAW)
    for e, d, s, least in entries
)


@dataclass(frozen=True, slots=True)
class Table1Row:
    """One recomputed entry of Table I.

    Attributes:
        use: the published entry.
        sigma: the classical σ/Δ recomputed from its formula.
        least: the exact least σ/Δ for (ε, δ)-DP (DP-OPT, Zhao et al. Thm 2), from the library.
        naive_least: the least σ/Δ found with a naive float64 Φ = (1 + erf)/2 (for reference).
        true_delta: the δ the classical σ really gives at ε (exact profile).
        true_epsilon: the least ε at which the classical σ is DP at the claimed δ.
        private: whether the classical σ is (ε, δ)-DP after all.
        sigma_verdict, least_verdict: ``"ok"``, ``"swapped"``, ``"off"`` or ``"swapped, off"``.
        note: what the computation found about the published values, in words.
    """

    use: PublishedUse
    sigma: float
    least: float
    naive_least: float
    true_delta: float
    true_epsilon: float
    private: bool
    sigma_verdict: str
    least_verdict: str
    note: str


def agrees_to_published(value: float, published: float, decimals: int = 4) -> bool:
    """True if ``published`` is ``value`` rounded or truncated to ``decimals`` places."""
    scale = 10.0**decimals
    candidates = (round(value * scale) / scale, math.floor(value * scale) / scale)
    return any(abs(c - published) < 1e-9 for c in candidates)


def _naive_profile(sigma: float, epsilon: float) -> float:
    """δ_DP with Φ(x) = (1 + erf(x/√2))/2 in float64: an evaluation that under-noises at large ε."""

    def phi(x: float) -> float:
        return 0.5 * (1.0 + float(special.erf(x / math.sqrt(2.0))))

    a = 1.0 / (2.0 * sigma)
    return phi(a - epsilon * sigma) - math.exp(epsilon) * phi(-a - epsilon * sigma)


def naive_float_least_sigma(epsilon: float, delta: float) -> float:
    """Least σ/Δ by bisection on the naively evaluated profile (for explaining Table I).

    Not a calibration: at large ε the naive Φ cannot resolve e^ε Φ(−…) and the answer is
    off (ε = 31.62, δ = 1e-4: 0.19763 where the exact optimum is 0.194364). Use
    :func:`approxdp.calibrate_gaussian` for real work.
    """
    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _naive_profile(mid, epsilon) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def _explain(
    kind: str, entry: PublishedUse, group: list[PublishedUse], exact: dict[PublishedUse, float],
    naive: dict[PublishedUse, float],
) -> tuple[str, str]:
    published = entry.published_sigma if kind == "sigma" else entry.published_least
    if agrees_to_published(exact[entry], published):
        return "ok", ""
    what = "classical sigma" if kind == "sigma" else "least sigma"
    for other in group:
        if agrees_to_published(exact[other], published) and other is not entry:
            return "swapped", (
                f"published {what} {published:.4f} is the exact value for "
                f"epsilon={other.epsilon:g}, delta={other.delta:g}; exact here "
                f"{exact[entry]:.6f}"
            )
    if kind == "least":
        for other in group:
            if agrees_to_published(naive[other], published):
                swapped = other is not entry
                where = (
                    f"for epsilon={other.epsilon:g} (values swapped)" if swapped else "here"
                )
                return ("swapped, off" if swapped else "off"), (
                    f"published least sigma {published:.4f} is what a naive float "
                    f"Phi = (1 + erf)/2 gives {where}; exact "
                    f"{exact[other]:.6f}"
                )
    text = f"published {what} {published:.4f}; computed {exact[entry]:.6f}"
    if sorted(f"{exact[entry]:.4f}") == sorted(f"{published:.4f}"):
        text += f" (the published digits are {exact[entry]:.4f} transposed)"
    return "off", text


def recompute_table1(uses: tuple[PublishedUse, ...] = TABLE_I) -> list[Table1Row]:
    """Recompute every entry of Zhao et al. Table I with the library and explain the differences.

    Returns:
        One :class:`Table1Row` per published entry, in the table's order.
    """
    sigma: dict[PublishedUse, float] = {}
    least: dict[PublishedUse, float] = {}
    naive: dict[PublishedUse, float] = {}
    for u in uses:
        s, _ = noise_amounts(u.method, u.epsilon, u.delta)
        sigma[u] = float(s)
        least[u] = float(calibrate_gaussian(u.epsilon, u.delta))
        naive[u] = naive_float_least_sigma(u.epsilon, u.delta)
    rows: list[Table1Row] = []
    for u in uses:
        group = [v for v in uses if v.row == u.row]
        sv, snote = _explain("sigma", u, group, sigma, naive)
        lv, lnote = _explain("least", u, group, least, naive)
        true_delta = float(gaussian_delta(u.epsilon, sigma[u]))
        note = "; ".join(n for n in (snote, lnote) if n)
        rows.append(
            Table1Row(
                use=u,
                sigma=sigma[u],
                least=least[u],
                naive_least=naive[u],
                true_delta=true_delta,
                true_epsilon=float(gaussian_epsilon(sigma[u], u.delta)),
                private=bool(true_delta <= u.delta),
                sigma_verdict=sv,
                least_verdict=lv,
                note=note,
            )
        )
    return rows


def method_label(method: str) -> str:
    """The paper's name of a classical method (``Dwork-2014``, ``Dwork-2006``)."""
    return LABELS.get(method, method)

