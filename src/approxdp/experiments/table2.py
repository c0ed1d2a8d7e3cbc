"""Paper Table II (and III, and the theorems behind them) checked numerically over grids.

Each claim of the paper about the noise amounts — orderings (Ineq. 6, 8, 10), "slightly
greater" (Table II, III), the bounds and limits of Theorems 2, 3 and 7, privacy of every
mechanism — is evaluated with the library on a grid of (ε, δ) and reported as the number of
grid points where it holds and the worst point. Nothing here knows the expected answer: a claim
that fails on the grid is reported as failing, with where and by how much.

"Slightly greater" has no number in the paper; we read it as "at most 10% more" and say so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.calibration import calibrate_gaussian, classical_failure_threshold
from approxdp.experiments.methods import noise_amounts
from approxdp.profiles import gaussian_delta, gaussian_pdp_delta

__all__ = ["SLIGHTLY", "PropertyCheck", "check_table2"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Our reading of "slightly greater" in Table II/III: at most this ratio.
SLIGHTLY = 1.10


@dataclass(frozen=True, slots=True)
class PropertyCheck:
    """The outcome of checking one claim of the paper on a grid.

    Attributes:
        claim: the property, in words.
        source: where the paper states it.
        domain: the (ε, δ) points it was checked on.
        points: how many points were checked.
        holds_at: at how many of them the claim holds.
        worst: the worst point and value found, in words.
    """

    claim: str
    source: str
    domain: str
    points: int
    holds_at: int
    worst: str

    @property
    def holds(self) -> bool:
        """True if the claim held at every point checked."""
        return self.holds_at == self.points


def _check(
    claim: str, source: str, domain: str, ok: BoolArray, score: FloatArray, eps: FloatArray,
    delta: FloatArray, describe: Callable[[int], str],
) -> PropertyCheck:
    i = int(np.nanargmax(score))
    return PropertyCheck(
        claim, source, domain, int(ok.size), int(np.count_nonzero(ok)),
        f"{describe(i)} at epsilon={eps.flat[i]:.4g}, delta={delta.flat[i]:.3g}",
    )


def _sigmas(methods: tuple[str, ...], eps: FloatArray, delta: FloatArray) -> dict[str, FloatArray]:
    return {m: noise_amounts(m, eps, delta)[0] for m in methods}


def _ordering(
    names: tuple[str, ...], labels: tuple[str, ...], sig: dict[str, FloatArray],
    eps: FloatArray, delta: FloatArray, source: str, domain: str,
) -> PropertyCheck:
    """Check sig[names[0]] < sig[names[1]] < ... pointwise."""
    ratios = np.stack([sig[b] / sig[a] for a, b in itertools.pairwise(names)])
    ok = np.all(ratios > 1.0, axis=0)
    score = -np.min(ratios, axis=0)  # the smallest ratio is the worst
    claim = " < ".join(f"sigma_{lab}" for lab in labels)
    return _check(
        claim, source, domain, ok, score, eps, delta,
        lambda i: f"smallest consecutive ratio {-score.flat[i]:.9g}",
    )


def _slightly(
    upper: str, lower: str, labels: tuple[str, str], sig: dict[str, FloatArray],
    eps: FloatArray, delta: FloatArray, source: str, domain: str,
) -> PropertyCheck:
    ratio = sig[upper] / sig[lower]
    ok = (ratio > 1.0) & (ratio <= SLIGHTLY)
    return _check(
        f"sigma_{labels[0]} is slightly (<= {100 * (SLIGHTLY - 1):.0f}%) greater than "
        f"sigma_{labels[1]}",
        source, domain, ok, ratio, eps, delta, lambda i: f"ratio {ratio.flat[i]:.4g}",
    )


def _limit(
    claim: str, source: str, values: FloatArray, params: FloatArray, where: str,
    tolerance: float,
) -> PropertyCheck:
    """Ratios that the claim says tend to 1, evaluated far out; hold where within tolerance."""
    dev = np.abs(values - 1.0)
    ok = dev <= tolerance
    i = int(np.argmax(dev))
    return PropertyCheck(
        claim, source, f"{where}, {values.size} points; ratio within {tolerance:g} of 1",
        int(values.size), int(np.count_nonzero(ok)), f"ratio {values[i]:.6g} at {params[i]}",
    )


def check_table2(quick: bool = False) -> list[PropertyCheck]:
    """Check the claims of Zhao et al. Tables II–III, Ineq. 6/8/10 and Theorems 2, 3, 7 on grids.

    Args:
        quick: a coarse grid (for tests); the full grid has 80 × 50 (ε, δ) points.

    Returns:
        One :class:`PropertyCheck` per claim.
    """
    n_e, n_d = (14, 8) if quick else (80, 50)
    e1 = np.logspace(-3, math.log10(50.0), n_e)
    d1 = np.logspace(-12, math.log10(0.45), n_d)
    E, D = (a.ravel() for a in np.meshgrid(e1, d1, indexing="ij"))
    grid = f"{n_e} x {n_d} grid, epsilon in [1e-3, 50], delta in [1e-12, 0.45]"
    methods = ("optimal", "zhao-m1", "zhao-m2", "dwork-roth-2014", "dwork-2006",
               "pdp-optimal", "zhao-m3", "zhao-m4")
    sig = _sigmas(methods, E, D)
    small = E <= 1.0
    sig_small = {m: s[small] for m, s in sig.items()}
    Es, Ds = E[small], D[small]
    grid_small = f"the points of that grid with epsilon <= 1 ({int(small.sum())})"
    out = [
        _ordering(("optimal", "zhao-m1", "zhao-m2"), ("DP-OPT", "M1", "M2"), sig, E, D,
                  "Ineq. (6), (8); Table II", grid),
        _ordering(("zhao-m1", "zhao-m2", "dwork-roth-2014", "dwork-2006"),
                  ("M1", "M2", "Dwork-2014", "Dwork-2006"), sig_small, Es, Ds,
                  "Ineq. (10), Appendix A", grid_small),
    ]
    below = np.minimum(sig_small["dwork-roth-2014"], sig_small["dwork-2006"]) / np.maximum.reduce(
        [sig_small["optimal"], sig_small["zhao-m1"], sig_small["zhao-m2"]]
    )
    out.append(_check(
        "sigma_DP-OPT, sigma_M1, sigma_M2 < sigma_Dwork-2014, sigma_Dwork-2006 for 0 < eps <= 1",
        "Table II (common properties)", grid_small, below > 1.0, -below, Es, Ds,
        lambda i: f"smallest classical/ours ratio {below.flat[i]:.6g}",
    ))
    out += [
        _slightly("zhao-m1", "optimal", ("M1", "DP-OPT"), sig, E, D, "Table II", grid),
        _slightly("zhao-m2", "zhao-m1", ("M2", "M1"), sig, E, D, "Table II", grid),
        _ordering(("pdp-optimal", "zhao-m3", "zhao-m4"), ("pDP-OPT", "M3", "M4"), sig, E, D,
                  "Table III; Lemmas 5, 6", grid),
        _slightly("zhao-m3", "pdp-optimal", ("M3", "pDP-OPT"), sig, E, D, "Table III", grid),
        _slightly("zhao-m4", "zhao-m3", ("M4", "M3"), sig, E, D, "Table III", grid),
    ]
    # Privacy of every proposed mechanism, by the exact profiles.
    worst_dp = np.max(
        [gaussian_delta(E, sig[m]) / D for m in ("optimal", "zhao-m1", "zhao-m2")], axis=0
    )
    out.append(_check(
        "DP-OPT, Mechanisms 1 and 2 are (eps, delta)-DP (exact profile <= delta)",
        "Thm 2, 4, 5", grid, worst_dp <= 1.0, worst_dp, E, D,
        lambda i: f"largest profile/delta {worst_dp.flat[i]:.6g}",
    ))
    worst_pdp = np.max(
        [gaussian_pdp_delta(E, sig[m]) / D for m in ("pdp-optimal", "zhao-m3", "zhao-m4")],
        axis=0,
    )
    out.append(_check(
        "pDP-OPT, Mechanisms 3 and 4 are (eps, delta)-pDP (P[|L| > eps] <= delta)",
        "Thm 6, 8, 9", grid, worst_pdp <= 1.0, worst_pdp, E, D,
        lambda i: f"largest pDP profile/delta {worst_pdp.flat[i]:.6g}",
    ))
    ratio = sig["pdp-optimal"] / sig["optimal"]
    out.append(_check(
        "sigma_pDP-OPT >= sigma_DP-OPT (pDP implies DP)", "Lemma 3", grid, ratio >= 1.0,
        -ratio, E, D, lambda i: f"smallest ratio {ratio.flat[i]:.6g}",
    ))
    bound = 1.0 / (2.0 * math.sqrt(2.0) * special.erfinv(D))
    r = sig["optimal"] / bound
    out.append(_check(
        "sigma_DP-OPT < Delta/(2 sqrt(2) inverf(delta)) for every epsilon", "Thm 3 (1)", grid,
        r < 1.0, r, E, D, lambda i: f"largest ratio to the bound {r.flat[i]:.6g}",
    ))
    out.append(_theorem2_bounds(sig["optimal"], E, D, grid))
    out.append(_m1_below_classical(quick))
    out += _limits(quick)
    return out


def _theorem2_bounds(
    sig_opt: FloatArray, E: FloatArray, D: FloatArray, grid: str
) -> PropertyCheck:
    sel = (E >= 0.01) & (D <= 0.05)
    e, d, s = E[sel], D[sel], sig_opt[sel]
    low = 1.0 / np.sqrt(2.0 * e)
    high = np.sqrt(2.0 * np.log(1.0 / (2.0 * d))) / e + low
    ok = (s > low) & (s < high)
    score = np.maximum(low / s, s / high)
    return _check(
        "Delta/sqrt(2 eps) < sigma_DP-OPT < sqrt(2 ln(1/(2 delta))) Delta/eps + "
        "Delta/sqrt(2 eps)",
        "Thm 2 (ii), (iii)", f"the points of the grid with eps >= 0.01, delta <= 0.05 "
        f"({int(sel.sum())})", ok, score, e, d,
        lambda i: f"closest approach to a bound (ratio {score.flat[i]:.6g})",
    )


def _m1_below_classical(quick: bool) -> PropertyCheck:
    """§V iii: σ_M1 < σ_Dwork-2014 for 1 < ε <= G*(δ) — checked up to ε = G itself."""
    deltas = np.logspace(-10, -2, 3 if quick else 9)
    eps_list, del_list = [], []
    for d in deltas:
        g = float(classical_failure_threshold(float(d), method="dwork-roth-2014"))
        t = np.linspace(0.0, 1.0, 6 if quick else 41)[1:]
        eps_list.append(1.0 + (g - 1.0) * t)
        del_list.append(np.full(t.size, d))
    e, d = np.concatenate(eps_list), np.concatenate(del_list)
    m1 = noise_amounts("zhao-m1", e, d)[0]
    classical = noise_amounts("dwork-roth-2014", e, d)[0]
    ratio = m1 / classical
    return _check(
        "sigma_M1 < sigma_Dwork-2014 for 1 < eps <= G*(delta)", "Section V, iii); Fig. 2",
        f"{e.size} points with 1 < eps <= G*(delta), delta in [1e-10, 1e-2], up to eps = G*",
        ratio < 1.0, ratio, e, d, lambda i: f"largest ratio M1/Dwork-2014 {ratio.flat[i]:.6g}",
    )


def _limits(quick: bool) -> list[PropertyCheck]:
    """Theorems 3 and 7: each limit evaluated far out (ε/δ = 1e-6, ε = 1e8, δ = 1e-300)."""
    deltas = np.logspace(-10, math.log10(0.45), 4 if quick else 12)
    tiny = deltas * 1e-6
    huge = 1e8
    opt_small = calibrate_gaussian(tiny, deltas)
    bound = 1.0 / (2.0 * math.sqrt(2.0) * special.erfinv(deltas))
    pdp_small = calibrate_gaussian(tiny, deltas, method="pdp-optimal")
    paper_pdp = special.erfcinv(deltas) / (tiny * math.sqrt(2.0))
    at_small = np.array(
        [f"epsilon={e:.3g}, delta={d:.3g}" for e, d in zip(tiny, deltas, strict=True)]
    )
    at_huge = np.array([f"epsilon=1e8, delta={d:.3g}" for d in deltas])
    eps_for_d = np.array([0.1, 1.0, 10.0])
    d0 = 1e-300
    at_d0 = np.array([f"epsilon={e:g}, delta=1e-300" for e in eps_for_d])
    lim_d = np.sqrt(2.0 * math.log(1.0 / d0)) / eps_for_d
    return [
        _limit("sigma_DP-OPT -> Delta/(2 sqrt(2) inverf(delta)) as eps -> 0", "Thm 3 (2)",
               opt_small / bound, at_small, "epsilon = 1e-6 delta, delta in [1e-10, 0.45]",
               1e-3),
        _limit("sigma_DP-OPT sqrt(2 eps)/Delta -> 1 as eps -> infinity", "Thm 3 (3)",
               calibrate_gaussian(huge, deltas) * math.sqrt(2.0 * huge), at_huge,
               "epsilon = 1e8, delta in [1e-10, 0.45]", 1e-2),
        _limit("sigma_DP-OPT eps/(Delta sqrt(2 ln(1/delta))) -> 1 as delta -> 0", "Thm 3 (4)",
               calibrate_gaussian(eps_for_d, d0) / lim_d, at_d0,
               "delta = 1e-300, epsilon in {0.1, 1, 10}", 2e-2),
        _limit("sigma_pDP-OPT / (inverfc(delta) Delta/(eps sqrt 2)) -> 1 as eps -> 0",
               "Thm 7 (1)", pdp_small / paper_pdp, at_small,
               "epsilon = 1e-6 delta, delta in [1e-10, 0.45]", 1e-2),
        _limit("sigma_pDP-OPT sqrt(2 eps)/Delta -> 1 as eps -> infinity", "Thm 7 (2)",
               calibrate_gaussian(huge, deltas, method="pdp-optimal") * math.sqrt(2.0 * huge),
               at_huge, "epsilon = 1e8, delta in [1e-10, 0.45]", 1e-2),
        _limit("sigma_pDP-OPT eps/(Delta sqrt(2 ln(1/delta))) -> 1 as delta -> 0",
               "Thm 7 (3)", calibrate_gaussian(eps_for_d, d0, method="pdp-optimal") / lim_d,
               at_d0, "delta = 1e-300, epsilon in {0.1, 1, 10}", 2e-2),
    ]
