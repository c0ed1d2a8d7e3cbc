"""Private quantiles and the median from a noisy hierarchical histogram (Gaussian noise).

The algorithm (Hay et al. 2010; Qardaji et al. 2013 for the choice of branching): the
clamping bounds [L, U] are cut into B = b^D equal leaves, and a tree of branching b is laid
over them — level j (j = 1 … D) has b^j nodes, each the count of the rows whose leaf lies
under it. Each level is a :class:`~approxdp.releases.specs.Histogram` over a declared domain
of node indices, so every level gets the contribution bounding of any grouped release (a
unit adds ≤ m rows to each of ≤ k nodes per level: Δ2 = m√k per level) and the D levels are
calibrated *jointly* as one plan (Zhao et al. 2019, Lemma 15): one exact
:class:`~approxdp.events.GaussianEvent` pays for all of them, and any number of quantiles
are read from the same noisy tree for free (post-processing).

Why this and not the exponential mechanism on the sorted data (Smith 2011): measured
(``benchmarks/quantiles.py``, ``docs/guide/quantiles.md``), both are far inside ±1 on Adult's
age and on continuous data — the exponential mechanism sharper on continuous values (the tree
resolves to a leaf), the tree on values with ties — and the tree (1) costs an exact
:class:`~approxdp.events.GaussianEvent` that composes tightly with every other release in the
ledger and through the joint calibration; (2) answers every quantile from one release, where
the exponential mechanism pays once per quantile (or needs the joint mechanism of Gillenwater
et al. 2021); (3) needs only bounded grouped counts, which both engines already compute where
the data lives, instead of collecting all sorted values to one process.

From the noisy counts, for each leaf edge t_i = L + i·w (w = (U − L)/B) the estimate of
G(t_i) = #{x < t_i} − q·N is the sum of the ≤ (b − 1)·D tree nodes covering [L, t_i), minus q
times the sum of the first level: a fixed linear combination of independent noises, whose
variance is known exactly. The released quantile is where the estimate crosses zero
(linearly interpolated inside the leaf; the mean of the first and the last crossing). The
interval [t_lo, t_hi] is honest: t_lo is the highest edge whose estimate is below zero by
more than u_i, t_hi the lowest above zero by at least u_i, with u_i the noise's quantile at
α/(2(B + 1)) (a union bound over every edge and both sides), so the true quantile of the
clamped, bounded data, inf{x : #{v ≤ x} ≥ qN}, lies in it with probability ≥ level. For the
secure (lattice) noise u_i uses the sub-Gaussian tail of the discrete Gaussian (Canonne et
al. 2020) plus the rounding to the lattice; for a seeded simulation, the Gaussian tail.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp._validation import check_parameter
from approxdp.engines import derivation as ex
from approxdp.engines.derivation import Derivation
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.mechanisms.gaussian import LATTICE_BITS
from approxdp.releases.derived import DerivedQuery, fresh_names
from approxdp.releases.noise import SEEDED_NOTE
from approxdp.releases.result import ReleaseResult
from approxdp.releases.sensitivity import Sensitivity
from approxdp.releases.specs import Histogram, Query, check_bounds

__all__ = [
    "TREE_MENU",
    "Median",
    "QuantileTree",
    "Quantiles",
    "bin_derivation",
    "predicted_widths",
    "quantiles_from_tree",
    "suggest_tree",
]

FloatArray = npt.NDArray[np.float64]

#: Largest number of leaves (the finest level is a declared domain of this many cells).
MAX_BINS = 2**16


@dataclass(frozen=True, slots=True)
class QuantileTree:
    """The tree's shape: ``bins`` = ``branching``^D leaves over the bounds.

    The default, 1024 leaves in two levels of branching 32, reads any edge's rank from at most
    62 nodes (a flat histogram of 1024 leaves needs up to 1024) with two scans of the data.
    """

    bins: int = 1024
    branching: int = 32

    def __post_init__(self) -> None:
        for name in ("bins", "branching"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ParameterTypeError(f"{name} must be an integer, got {value!r}")
        if not 2 <= self.branching <= MAX_BINS:
            raise InvalidParameterError(
                f"branching must be in [2, {MAX_BINS}], got branching={self.branching}"
            )
        if not self.branching <= self.bins <= MAX_BINS or self.branching ** self.depth != self.bins:
            raise InvalidParameterError(
                f"bins must be a power of branching={self.branching} in [{self.branching}, "
                f"{MAX_BINS}], got bins={self.bins}"
            )

    @property
    def depth(self) -> int:
        """D, the number of levels."""
        return max(1, round(math.log(self.bins) / math.log(self.branching)))

    @property
    def levels(self) -> tuple[int, ...]:
        """Nodes per level, coarse to fine: b, b², …, bins."""
        return tuple(self.branching ** j for j in range(1, self.depth + 1))


#: The tree shapes :func:`suggest_tree` chooses from, coarse to fine: (bins, branching).
TREE_MENU: tuple[tuple[int, int], ...] = ((16, 16), (64, 8), (256, 16), (1024, 32), (4096, 64))


def predicted_widths(
    count: float, sigma: float, level: float = 0.95, q: float = 0.5,
) -> dict[tuple[int, int], float]:
    """Expected width of the ``q``-quantile's interval, as a share of the bounds, for each
    shape of :data:`TREE_MENU`, on ``count`` values spread evenly over the bounds.

    ``sigma`` is the noise of a *one-level* tree's node (a D-level tree's nodes get σ·√D: the
    levels are calibrated jointly with Δ2 ∝ √D, and the Gaussian's σ is linear in Δ2). The
    model: the interval spans the ranks qN ± h, h = z·sd(rank at the middle edge), with z the
    union bound's quantile over the B + 1 edges (module docstring), so it holds a share
    2h/N of the values, plus one leaf 1/B: ``min(1, 2h/N + 1/B)``. The rank's variance is
    exact (:func:`_edge_estimates`); the even spread is the assumption — real data that
    cluster give narrower intervals, but the ranking of the shapes is what it is for (the
    trade-off of Qardaji et al. 2013, https://doi.org/10.14778/2556549.2556576, §4: fewer
    levels and leaves, less noise per rank; more, finer resolution).
    """
    n = max(float(count), 1.0)
    alpha0 = (1.0 - float(level)) / 2.0
    out: dict[tuple[int, int], float] = {}
    for bins, branching in TREE_MENU:
        shape = QuantileTree(bins, branching)
        s = float(sigma) * math.sqrt(shape.depth)
        zeros = [np.zeros(nodes) for nodes in shape.levels]
        _, var, _ = _edge_estimates(zeros, [s] * shape.depth, shape, q)
        z = -float(special.ndtri(alpha0 / (bins + 1)))
        half = z * math.sqrt(float(var[bins // 2]))
        out[(bins, branching)] = min(1.0, 2.0 * half / n + 1.0 / bins)
    return out


def suggest_tree(count: float, epsilon: float, delta: float, level: float = 0.95,
                 q: float = 0.5) -> QuantileTree:
    """The shape of :data:`TREE_MENU` with the narrowest :func:`predicted_widths` for about
    ``count`` values at (``epsilon``, ``delta``) and one row per unit (m = k = 1).

    ``count`` must be public or private — a guess, or a noisy count already released (a
    quantile release's not-informative note uses its own noisy count: post-processing) —
    never the exact number of rows: the shape is visible in what is released (its notes,
    its σ), so a shape chosen from the exact count would publish that count.
    """
    from approxdp.calibration import calibrate_gaussian

    check_parameter("count", count, "finite")
    sigma = float(calibrate_gaussian(epsilon, delta))
    widths = predicted_widths(count, sigma, level, q)
    bins, branching = min(widths, key=lambda shape: (round(widths[shape], 9), shape[0]))
    return QuantileTree(bins, branching)


def _check_qs(qs: object) -> tuple[float, ...]:
    if isinstance(qs, str) or not isinstance(qs, Sequence) or not qs:
        raise ParameterTypeError(f"qs must be a non-empty list of probabilities, got {qs!r}")
    return tuple(float(check_parameter("qs", q, "quantile")) for q in qs)


def _edge_estimates(
    counts: Sequence[FloatArray], stds: Sequence[float], tree: QuantileTree, q: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Estimate of G(t_i) = #{x < t_i} − qN at every edge i = 0 … B, its noise variance and
    the sum of |coefficient| × std (for the lattice rounding allowance)."""
    b, levels, n_bins = tree.branching, tree.levels, tree.bins
    i = np.arange(n_bins + 1)
    est = np.zeros(n_bins + 1)
    var = np.zeros(n_bins + 1)
    l1 = np.zeros(n_bins + 1)
    parent_div = n_bins * b
    for j, (nodes, s) in enumerate(zip(levels, stds, strict=True)):
        div = n_bins // nodes
        cs = np.concatenate([[0.0], np.cumsum(counts[j])])
        start = (i // parent_div) * b
        stop = i // div
        est += cs[stop] - cs[start]
        used = (stop - start).astype(float)
        if j == 0:
            total = cs[nodes]
            est -= q * total
            var += s * s * ((1 - q) ** 2 * used + q * q * (nodes - used))
            l1 += s * ((1 - q) * used + q * (nodes - used))
        else:
            var += s * s * used
            l1 += s * used
        parent_div = div
    return est, var, l1


def quantiles_from_tree(
    counts: Sequence[FloatArray], stds: Sequence[float], tree: QuantileTree,
    qs: Sequence[float], bounds: tuple[float, float], level: float, *, secure: bool,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(values, ci_low, ci_high) of the quantiles ``qs`` from the noisy level counts (see the
    module docstring). Pure post-processing: no data, no budget."""
    low, high = bounds
    width = (high - low) / tree.bins
    edges = np.asarray(low + width * np.arange(tree.bins + 1), dtype=np.float64)
    edges[-1] = high
    alpha = (1.0 - level) / (2.0 * (tree.bins + 1))
    z = math.sqrt(2.0 * math.log(1.0 / alpha)) if secure else -float(special.ndtri(alpha))
    total = float(np.sum(counts[0]))
    values, los, his = [], [], []
    for q in qs:
        if total <= 0:
            values.append(low / 2 + high / 2)
            los.append(low)
            his.append(high)
            continue
        est, var, l1 = _edge_estimates(counts, stds, tree, q)
        u = z * np.sqrt(var) + (l1 / 2.0 ** (LATTICE_BITS + 1) if secure else 0.0)
        below = np.flatnonzero(est + u < 0)
        above = np.flatnonzero(est - u >= 0)
        lo = float(edges[below[-1]]) if below.size else low
        hi = float(edges[above[0]]) if above.size else high
        lo, hi = min(lo, hi), max(lo, hi)
        values.append(min(max(_crossing(est, edges), lo), hi))
        los.append(lo)
        his.append(hi)
    return np.array(values), np.array(los), np.array(his)


def _crossing(est: FloatArray, edges: FloatArray) -> float:
    """Where ``est`` crosses zero: the mean of its first and its last crossing, each linearly
    interpolated inside its leaf."""
    nonneg = np.flatnonzero(est >= 0)
    neg = np.flatnonzero(est < 0)
    if not neg.size:
        return float(edges[0])
    if not nonneg.size:
        return float(edges[-1])

    def interpolate(i: int) -> float:  # est[i - 1] < 0 <= est[i]
        if i == 0:
            return float(edges[0])
        a, b = est[i - 1], est[i]
        frac = -a / (b - a) if b > a else 0.0
        return float(edges[i - 1] + frac * (edges[i] - edges[i - 1]))

    first = int(nonneg[0])
    last = int(neg[-1]) + 1
    if last > len(est) - 1:
        return float(edges[-1])
    return (interpolate(first) + interpolate(last)) / 2.0


def bin_derivation(
    column: str, low: float, high: float, n_bins: int, outputs: Sequence[tuple[str, int]],
    log_floor: float = 0.0,
) -> Derivation:
    """Integer bin columns of ``column``: each row's leaf is
    ``min(floor((min(max(x, low), high) − low) / width), n_bins − 1)``, ``width = (high −
    low) / n_bins`` (computed once, here, so every engine divides by the same float64), and
    each output ``(name, divisor)`` is the column ``floor(leaf / divisor)``.

    With ``log_floor`` = f > 0 the leaves are cut on the signed log scale: ``x`` is first
    replaced by ``sign(x) · max(log10(max(|x|, f)) − log10(f), 0)`` (|x| ≤ f maps to 0), so
    ``low``/``high`` are in decades above f.
    """
    if not (math.isfinite(low) and math.isfinite(high) and low < high
            and math.isfinite(high - low)):
        raise InvalidParameterError(
            f"bins need finite low < high with a finite width, got low={low}, high={high}"
        )
    if not (math.isfinite(log_floor) and log_floor >= 0.0):
        raise InvalidParameterError(f"log_floor must be finite and >= 0, got {log_floor!r}")
    x = ex.value()
    if log_floor > 0:
        x = ex.multiply(ex.sign(x), ex.greatest(
            ex.subtract(ex.log10(ex.greatest(ex.absolute(x), ex.number(log_floor))),
                        ex.number(math.log10(log_floor))),
            ex.number(0.0)))
    width = (high - low) / n_bins
    leaf = ex.least(
        ex.floor(ex.divide(ex.subtract(ex.clamp(x, low, high), ex.number(low)),
                           ex.number(width))),
        ex.number(n_bins - 1))
    return Derivation(column, tuple(
        (name, ex.integer(ex.floor(ex.divide(leaf, ex.number(divisor)))))
        for name, divisor in outputs
    ))


def _stem(column: str) -> str:
    return column.lstrip("_") or "value"


@dataclass(frozen=True, slots=True)
class Quantiles(DerivedQuery):
    """Quantiles ``qs`` of ``column`` clamped to ``bounds`` (one value per q, in order), from
    a noisy hierarchical histogram of ``bins`` leaves and branching ``branching`` (see the
    module docstring): each level a :class:`~approxdp.releases.specs.Histogram` over its
    declared domain of node indices, the levels calibrated jointly with the rest of the plan;
    every quantile read from the same tree. NULL and NaN values are left out; ±inf clamped.
    """

    qs: tuple[float, ...] = (0.25, 0.5, 0.75)
    bounds: tuple[float, float] = (0.0, 1.0)
    bins: int = 1024
    branching: int = 32

    def __post_init__(self) -> None:
        super(Quantiles, self).__post_init__()
        low, high = check_bounds("bounds", self.bounds)
        if not low < high or not math.isfinite(high - low):
            raise InvalidParameterError(
                f"bounds must satisfy low < high with a finite width for quantiles, got "
                f"bounds=({low:g}, {high:g})"
            )
        object.__setattr__(self, "bounds", (low, high))
        object.__setattr__(self, "qs", _check_qs(self.qs))
        QuantileTree(self.bins, self.branching)  # checks the shape

    @property
    def tree(self) -> QuantileTree:
        """The tree's shape."""
        return QuantileTree(self.bins, self.branching)

    def derivation(self, taken: Collection[str] = ()) -> Derivation:
        """One bin-index column per level of the tree (coarse to fine)."""
        shape = self.tree
        names = fresh_names([*taken, self.column],
                            [f"{_stem(self.column)}_tree{nodes}" for nodes in shape.levels])
        return bin_derivation(self.column, *self.bounds, shape.bins,
                              [(n, shape.bins // nodes)
                               for n, nodes in zip(names, shape.levels, strict=True)])

    def parts(self, derivation: Derivation | None = None) -> tuple[Query, ...]:
        """One histogram per level, over its declared domain of node indices."""
        names = (derivation or self.derivation()).names
        return tuple(
            Histogram((n,), {n: list(range(nodes))}, name=f"{self.label()} level {j + 1}")
            for j, (n, nodes) in enumerate(zip(names, self.tree.levels, strict=True))
        )

    def finish(self, parts: Sequence[ReleaseResult], level: float) -> ReleaseResult:
        """The quantiles read from the noisy tree (module docstring)."""
        shape, (low, high) = self.tree, self.bounds
        secure = parts[0].secure
        counts = [np.asarray(r.values, dtype=np.float64) for r in parts]
        stds = [float(np.max(r.std)) if r.std.size else 0.0 for r in parts]
        values, lo, hi = quantiles_from_tree(counts, stds, shape, self.qs, (low, high), level,
                                             secure=secure)
        z = -float(special.ndtri((1.0 - level) / 2.0))
        first = parts[0]
        level_l2 = first.sensitivity.l2
        sens = Sensitivity(
            level_l2 * math.sqrt(shape.depth), first.sensitivity.l1 * shape.depth,
            first.sensitivity.linf,
            f"{shape.depth} level(s) of a tree over {shape.bins} leaves, each a histogram "
            f"with {first.sensitivity.derivation}; together Δ2 = √D × {level_l2:.6g}",
        )
        notes: list[str] = []
        if not secure:
            notes.append(SEEDED_NOTE)
        notes += [
            f"hierarchical histogram: {shape.bins} leaves of width "
            f"{(high - low) / shape.bins:.6g} in {shape.depth} level(s) of branching "
            f"{shape.branching}, levels calibrated jointly; quantile = where the noisy rank "
            "crosses q·ñ, interpolated in its leaf",
            "interval: edges whose noisy rank is off by more than the noise's quantile at "
            f"(1 − level)/(2(B + 1)), a union bound over all {shape.bins + 1} edges "
            "(conservative)",
            f"quantiles of {self.column!r} clamped to [{low:g}, {high:g}] over non-missing "
            "values",
        ]
        # informative: the interval rules out at least half of the bounds (post-processing)
        informative = np.asarray(hi - lo < 0.5 * (high - low), dtype=bool)
        if not bool(np.all(informative)):
            total = max(float(np.sum(counts[0])), 1.0)  # the noisy count: private
            one_level = stds[0] / math.sqrt(shape.depth)
            widths = predicted_widths(total, one_level, level, 0.5)
            best = min(widths, key=lambda s: (round(widths[s], 9), s[0]))
            now = widths.get((shape.bins, shape.branching))
            if best == (shape.bins, shape.branching):
                advice = "a larger epsilon (no other tree shape is expected to do better)"
            else:
                advice = (f"a tree of {best[0]} leaves (bins={best[0]}, branching={best[1]} "
                          f"in the API; --bins {best[0]} --branching {best[1]} on the command "
                          f"line; bins = {best[0]}, branching = {best[1]} in a batch query or "
                          "the browser's wizard: "
                          f"about {widths[best]:.0%} of the bounds on evenly "
                          "spread values" + ("" if now is None else f", this tree {now:.0%}")
                          + "; clustered values do better), or a larger epsilon")
            notes.append(
                f"not informative: {int(np.sum(~informative))} of {len(informative)} "
                "interval(s) span more than half the bounds — the noise on each rank (σ = "
                f"{stds[0]:.4g} per node, summed over up to {(shape.branching - 1) * shape.depth}"
                f" nodes) is too large for about {total:.0f} values (the noisy count). The tree's "
                "shape is not chosen from the data (the number of rows is private, and the "
                f"shape is visible in the release); for this many values, use {advice}"
            )
        single = self.single
        return ReleaseResult(
            label=self.label(), kind="quantiles", columns=() if single else ("quantile",),
            keys=[()] if single else [(q,) for q in self.qs],
            values=values, std=(hi - lo) / (2.0 * z), ci_low=lo, ci_high=hi, level=level,
            mechanism=first.mechanism, method=first.method, sigma=first.sigma,
            sensitivity=sens, effective_sensitivity=first.effective_sensitivity,
            epsilon=first.epsilon, delta=first.delta, threshold=None,
            diagnostics=first.diagnostics, receipts=first.receipts, comparisons=first.comparisons,
            extra={f"level{j + 1}_counts": c for j, c in enumerate(counts)},
            notes=tuple(notes), secure=secure, informative=informative,
        )

    @property
    def single(self) -> bool:
        """One value with no key column (the median)."""
        return False


@dataclass(frozen=True, slots=True)
class Median(Quantiles):
    """The median of ``column`` clamped to ``bounds``: :class:`Quantiles` at q = 0.5, released
    as one value."""

    qs: tuple[float, ...] = (0.5,)

    def __post_init__(self) -> None:
        super(Median, self).__post_init__()
        if self.qs != (0.5,):
            raise InvalidParameterError(f"a median has qs=(0.5,), got qs={self.qs!r}; use "
                                        "Quantiles for others")

    @property
    def single(self) -> bool:
        """One value with no key column."""
        return True
