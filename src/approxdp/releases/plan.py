"""Plan → allocate: an immutable release plan, then the split of a budget (ε, δ) across it.

All Gaussian parts of a plan are calibrated *jointly*: m Gaussian releases with sensitivities
Δ_q and noise σ_q are exactly as private as one Gaussian with σ* = (Σ Δ_q²/σ_q²)^(−1/2) and
Δ = 1 (Zhao et al. 2019, Lemma 15; https://arxiv.org/abs/1911.12060). So
σ* = calibrate_gaussian(ε, δ_G, 1) and query q, with
weight w_q (W = Σ w), gets σ_q = σ* Δ_q √(W/w_q) — no ε/δ is lost to splitting. Queries that
select cells privately take a share ``selection_fraction`` of δ for their thresholds
(:mod:`approxdp.releases.selection`); the Gaussian part gets the rest.

A statistic computed from several linear parts (a quantile tree's levels, a variance's three
sums: :class:`~approxdp.releases.derived.DerivedQuery`) enters the plan as its parts: its
weight is split evenly among them (its share of the plan is w_q/W whatever its number of
parts), and each part is calibrated to its own sensitivity like any query.

σ is calibrated here and nowhere else. The accountant records σ* (:meth:`AllocatedPlan.event`);
each query's σ_q is σ* scaled to its effective sensitivity Δ_q √(W/w_q) by
:func:`~approxdp.calibration.scale_sigma` (rounded up, so σ_q/Δ_q ≥ σ* exactly), and
that σ_q is the one its selection threshold, its noise and its result use
(:mod:`approxdp.releases.noise` checks it before the spend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from approxdp._validation import check_parameter
from approxdp.calibration import calibrate_gaussian, scale_sigma
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import ComposedEvent, EpsilonDeltaEvent, GaussianEvent, PrivacyEvent
from approxdp.releases.selection import selection_budget, selection_threshold
from approxdp.releases.sensitivity import Sensitivity, query_sensitivity
from approxdp.releases.specs import NEIGHBOURING, ContributionBounds, Neighbouring, Query

__all__ = [
    "NOISE_HEADROOM",
    "AllocatedPlan",
    "AllocatedQuery",
    "ReleasePlan",
    "allocate",
    "check_noise_fits",
]


@dataclass(frozen=True, slots=True)
class ReleasePlan:
    """What to release, under which neighbouring relation and contribution bounds.

    Args:
        queries: Query specs (:mod:`approxdp.releases.specs`, or the statistics of
            :mod:`approxdp.releases.kinds`).
        neighbouring: ``"add-remove"`` or ``"replace-one"``.
        bounds: Privacy unit and contribution caps.
        weights: Relative weights w_q (default all 1): query q's noise is ∝ 1/√w_q, its share
            of the plan w_q/W.
    """

    queries: tuple[Query, ...]
    neighbouring: Neighbouring = "add-remove"
    bounds: ContributionBounds = field(default_factory=ContributionBounds)
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        queries = tuple(self.queries)
        if not queries or not all(isinstance(q, Query) for q in queries):
            raise ParameterTypeError("queries must be a non-empty list of query specs")
        object.__setattr__(self, "queries", queries)
        if self.neighbouring not in NEIGHBOURING:
            raise InvalidParameterError(
                f"neighbouring must be one of {list(NEIGHBOURING)}, got {self.neighbouring!r}"
            )
        if not isinstance(self.bounds, ContributionBounds):
            raise ParameterTypeError("bounds must be a ContributionBounds")
        if self.weights is not None:
            w = tuple(
                float(check_parameter("weights", x, "positive"))
                for x in self.weights
            )
            if len(w) != len(queries):
                raise InvalidParameterError(
                    f"weights needs one entry per query ({len(queries)}), got {len(w)}"
                )
            object.__setattr__(self, "weights", w)
        for q in queries:
            if q.by and q.cell_domain is None and self.neighbouring == "replace-one":
                raise InvalidParameterError(
                    f"query {q.label()!r}: partition selection (no domain) supports only "
                    "neighbouring='add-remove'; declare a domain for replace-one"
                )

    def parts(self) -> tuple[tuple[int, Query], ...]:
        """Every linear part of the plan, in order, with the index of the query it belongs to
        (one part per linear query; a derived statistic's parts on its default columns)."""
        return tuple((i, part) for i, q in enumerate(self.queries) for part in q.parts())

    def sensitivities(self) -> tuple[Sensitivity, ...]:
        """Per-part sensitivities (derived, never read from data), in :meth:`parts` order."""
        return tuple(query_sensitivity(q, self.neighbouring, self.bounds)
                     for _, q in self.parts())


@dataclass(frozen=True, slots=True)
class AllocatedQuery:
    """A query with its noise: ``sigma`` on the scaled vector (0: released exactly), the plan's
    σ* scaled to ``effective_sensitivity`` (module docstring)."""

    query: Query
    sensitivity: Sensitivity
    effective_sensitivity: float
    sigma: float
    threshold: float | None


@dataclass(frozen=True, slots=True)
class AllocatedPlan:
    """A plan with its budget split: per-part σ, thresholds, and the one event to spend.

    ``queries`` are the allocated linear parts, in :meth:`ReleasePlan.parts` order (for a plan
    of linear queries, one per query); ``owners[j]`` is the index in ``plan.queries`` of the
    query part j belongs to; ``shares[i]`` is query i's share w_i/W of the Gaussian noise
    budget (0 for a query released exactly).
    """

    plan: ReleasePlan
    epsilon: float
    delta: float
    delta_gaussian: float
    delta_selection: float
    method: str
    sigma_star: float
    queries: tuple[AllocatedQuery, ...]
    owners: tuple[int, ...] = ()
    shares: tuple[float, ...] = ()

    def parts_of(self, index: int) -> tuple[AllocatedQuery, ...]:
        """The allocated parts of ``plan.queries[index]``."""
        return tuple(aq for aq, owner in zip(self.queries, self.owners, strict=True)
                     if owner == index)

    def event(self) -> PrivacyEvent | None:
        """The privacy event of the whole plan (None if nothing is noised)."""
        if not math.isfinite(self.sigma_star):
            return None
        gauss = GaussianEvent(self.sigma_star, 1.0, label=_label(self.plan))
        if self.delta_selection > 0:
            sel = EpsilonDeltaEvent(0.0, self.delta_selection, label="partition selection")
            return ComposedEvent((gauss, sel), label=_label(self.plan))
        return gauss


def _label(plan: ReleasePlan) -> str:
    return "release: " + ", ".join(q.label() for _, q in plan.parts())


def allocate(
    plan: ReleasePlan,
    epsilon: float,
    delta: float,
    *,
    method: str = "optimal",
    selection_fraction: float = 0.5,
) -> AllocatedPlan:
    """Split (ε, δ) across ``plan`` (see the module docstring).

    Args:
        plan: The release plan.
        epsilon: Total ε of the plan, > 0.
        delta: Total δ of the plan, in (0, 1).
        method: Calibration method (``approxdp.calibration.CALIBRATION_METHODS``).
        selection_fraction: Share of δ for partition-selection thresholds, in (0, 1).

    Raises:
        InvalidParameterError: A parameter is out of range, the method is not private at
            this (ε, δ) (from ``calibrate_gaussian``), or a query's bounds are so wide that its
            noise would overflow (:func:`check_noise_fits`).
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    frac = float(check_parameter("selection_fraction", selection_fraction, "probability"))
    parts = plan.parts()
    owners = tuple(i for i, _ in parts)
    sens = plan.sensitivities()
    weights = plan.weights or (1.0,) * len(plan.queries)
    selecting = [bool(q.by) and q.cell_domain is None for _, q in parts]
    d_sel = dlt * frac if any(selecting) else 0.0
    d_gauss = dlt - d_sel
    # noisy parts per query: a query's weight is split evenly among them
    n_noisy = [0] * len(plan.queries)
    for i, s in zip(owners, sens, strict=True):
        n_noisy[i] += s.l2 > 0
    total_w = sum(w for w, n in zip(weights, n_noisy, strict=True) if n)
    sigma_star = (
        float(calibrate_gaussian(eps, d_gauss, 1.0, method=method)) if total_w > 0 else math.inf
    )
    n_select = sum(selecting)
    # total selection probability p ≤ p_max keeps δ_T = p/((1-p)(1-δ_G)) ≤ d_sel; split evenly
    p_each = selection_budget(d_sel, d_gauss) / n_select if n_select else 0.0
    out = []
    for (i, q), s, sel in zip(parts, sens, selecting, strict=True):
        if s.l2 == 0:
            out.append(AllocatedQuery(q, s, 0.0, 0.0, None))
            continue
        # W/w_q per part: W·n/w for a query of n noisy parts (W/w for a linear query)
        eff = s.l2 * math.sqrt(total_w * n_noisy[i] / weights[i])
        sigma = scale_sigma(sigma_star, eff)
        check_noise_fits(q, sigma)
        threshold = None
        if sel:
            threshold = selection_threshold(
                sigma,
                plan.bounds.max_partitions,
                plan.bounds.max_rows_per_partition,
                p_each,
            )
        out.append(AllocatedQuery(q, s, eff, sigma, threshold))
    shares = tuple(w / total_w if n and total_w > 0 else 0.0
                   for w, n in zip(weights, n_noisy, strict=True))
    return AllocatedPlan(plan, eps, dlt, d_gauss, d_sel, method, sigma_star, tuple(out),
                         owners, shares)


#: The noise's standard deviation times this must stay a finite float: the release computes
#: the value, tens of standard deviations of noise, intervals and (for a mean) box corners from
#: it, and each of these must not overflow.
NOISE_HEADROOM = 2.0**20


def check_noise_fits(query: Query, sigma: float) -> None:
    """Raise :class:`InvalidParameterError` if ``query``'s noise, σ on its scaled vector times
    each measure's scale (the bounds' largest |value − centre|), would overflow float64: the
    released value, its std and interval would be ±inf (bounds of ±1e308 gave value 1e308, an
    empty interval and std = ∞). Checked when the budget is allocated, before any data is
    read or anything spent."""
    for meas in query.measures():
        std = sigma * meas.scale
        if not (math.isfinite(sigma) and std * NOISE_HEADROOM < math.inf):
            raise InvalidParameterError(
                f"query {query.label()!r}: bounds {list(meas.bounds)} need noise of standard "
                f"deviation sigma x scale = {sigma:.4g} x {meas.scale:.4g} = {std:.4g} on the "
                f"{meas.kind} of {meas.column!r}, too close to the largest float (1.8e308) for "
                "the value and its interval to be computed (they would overflow to inf); use "
                "bounds that fit the data"
            )
