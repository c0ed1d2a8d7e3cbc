"""Planning by accuracy: the least ε whose intervals are no wider than asked, and the accuracy
a budget buys. Nothing is read from the data and nothing is spent.

A plan's Gaussian parts are calibrated jointly (:mod:`approxdp.releases.plan`): at (ε, δ) query
q gets σ_q = σ*(ε, δ_G) · Δ_q √(W/w_q), with σ* the exact least σ of one Gaussian of
sensitivity 1 (:func:`~approxdp.calibration.calibrate_gaussian`, never an approximation). Its
released interval is value ± z · u_q · s, with s the scale of the released measure (1 for
counts, the bounds' largest |value − centre| for sums) and u_q the noise's interval scale —
σ_q for a seeded simulation, and for the secure lattice release the slightly larger scale of
:func:`~approxdp.releases._intervals.noise_spread` (the exact discrete noise plus rounding),
computed here exactly as the release computes it. For a query whose cells are selected
privately the number of cells (which sets the lattice) is not known before the data is read,
so the largest scale over 1 to 2^24 cells is used. Its RMSE is the noise's standard deviation
times s. Both fall as ε grows, so the least ε that meets every target is found by bisection
(to a relative 10⁻⁹, on targets shrunk by 10⁻⁹ so that a release at the returned ε is within
them whatever the last bit of σ).

A mean's interval depends on its noisy count, so its accuracy is planned for a stated number
of rows n (``rows=``): the half-width of the conservative box interval of
:class:`~approxdp.releases.specs.Mean` when ñ = n, in the worst case over the values (all at
a bound), n(h·b + a)/(n² − b²), with a and b the sum's and the count's z·u·s at level
1 − α/2 and h the half range (the whole half range if n ≤ b); its RMSE is the delta method's
√(σ_S² + h²σ_n²)/n. For a mean this is a plan, not a guarantee: a smaller noisy count widens
the released interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import special

from approxdp._validation import check_parameter
from approxdp.errors import InvalidParameterError, NotPrivateError, ParameterTypeError
from approxdp.mechanisms import GaussianMechanism
from approxdp.releases._intervals import noise_spread
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery, ReleasePlan, allocate
from approxdp.releases.specs import Mean

__all__ = ["AccuracyPlan", "QueryAccuracy", "accuracy_of", "plan_for_accuracy"]

#: Cell counts probed for a query whose cells are selected privately (secure release).
_PROBED_CELLS = tuple(2**j for j in range(0, 25, 2))
#: Targets are shrunk by this (relative) so a release at the returned ε is within them.
_TARGET_SLACK = 1e-9
_MAX_EPSILON = 1e6


@dataclass(frozen=True, slots=True)
class QueryAccuracy:
    """What one query's release will look like: σ on its scaled vector, the half-width of its
    interval and its RMSE in the value's units, and the target asked for (None if none)."""

    label: str
    kind: str
    sigma: float
    half_width: float
    rmse: float
    target_half_width: float | None = None
    target_rmse: float | None = None


@dataclass(frozen=True, slots=True)
class AccuracyPlan:
    """A budget and the per-query accuracy it buys (spends nothing).

    ``epsilon`` is the least ε meeting the targets (:func:`plan_for_accuracy`) or the ε asked
    about (:func:`accuracy_of`); release the same queries at (``epsilon``, ``delta``) with the
    same table settings and ``level`` to get these intervals.
    """

    epsilon: float
    delta: float
    level: float
    secure: bool
    queries: tuple[QueryAccuracy, ...]
    allocated: AllocatedPlan

    def explain(self) -> str:
        """One line per query: σ, interval half-width and RMSE, with the target if any."""
        noise = "secure lattice noise" if self.secure else "seeded simulation noise"
        lines = [f"plan at ε = {self.epsilon:.6g}, δ = {self.delta:g} ({self.level:.0%} "
                 f"intervals, {noise}; nothing spent)"]
        for q in self.queries:
            target = ""
            if q.target_half_width is not None:
                target = f" (asked ≤ {q.target_half_width:g})"
            elif q.target_rmse is not None:
                target = f" (asked RMSE ≤ {q.target_rmse:g})"
            lines.append(f"  {q.label}: ± {q.half_width:.6g}{target}, RMSE {q.rmse:.6g}, "
                         f"σ = {q.sigma:.6g}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _unit_spreads(
    aq: AllocatedQuery, allocated: AllocatedPlan, secure: bool, level: float
) -> tuple[float, float, float]:
    """(σ, std scale, interval scale) of one query's noise on its scaled vector, as the
    release computes them (the largest over probed cell counts where they are unknown)."""
    if aq.sigma <= 0:
        return 0.0, 0.0, 0.0
    mech = GaussianMechanism.from_sigma(  # the σ the release uses: the plan's, not recalibrated
        aq.sigma, aq.effective_sensitivity, epsilon=allocated.epsilon,
        delta=allocated.delta_gaussian, method=allocated.method,
    )
    sigma = float(mech.sigma)
    if not secure:
        return sigma, sigma, sigma
    q = aq.query
    n_meas = len(q.measures())
    if q.by and q.cell_domain is None:
        dims: Sequence[int] = [d * n_meas for d in _PROBED_CELLS]
    else:
        dims = [max(len(q.cells()), 1) * n_meas]
    spreads = [noise_spread(sigma, mech.secure_noise(d), level) for d in dims]
    return sigma, max(s for s, _ in spreads), max(c for _, c in spreads)


def _query_accuracy(
    aq: AllocatedQuery, allocated: AllocatedPlan, secure: bool, level: float,
    rows: int | None,
) -> tuple[float, float, float]:
    """(σ, half-width, RMSE) of one query in the units of its released value."""
    sigma, std_unit, ci_unit = _unit_spreads(aq, allocated, secure, level)
    measures = aq.query.measures()
    if isinstance(aq.query, Mean):
        if rows is None:
            raise ParameterTypeError(
                f"query {aq.query.label()!r} is a Mean, whose interval depends on its count: "
                "pass rows= (the number of rows with a value you expect) to plan it"
            )
        h = measures[0].scale
        zb = -float(special.ndtri((1.0 - level) / 4.0))
        a, b = zb * ci_unit * h, zb * ci_unit
        n = float(rows)
        half = min(n * (h * b + a) / (n * n - b * b), h) if n > b else h
        rmse = min(math.hypot(std_unit * h, h * std_unit) / n, h)
        return sigma, half, rmse
    z = -float(special.ndtri((1.0 - level) / 2.0))
    scales = [m.scale for m in measures]
    scale = max(scales) if aq.query.kind == "linearqueries" else scales[0]
    return sigma, z * ci_unit * scale, std_unit * scale


def accuracy_of(
    plan: ReleasePlan, epsilon: float, delta: float, *, method: str = "optimal",
    level: float = 0.95, secure: bool = True, rows: int | None = None,
    half_width: Sequence[float | None] | None = None,
    rmse: Sequence[float | None] | None = None,
) -> AccuracyPlan:
    """The per-query accuracy of ``plan`` released at (ε, δ) (see the module docstring)."""
    check_parameter("level", level)
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        raise InvalidParameterError(f"rows must be a positive integer, got rows={rows!r}")
    for q in plan.queries:
        if q.parts() != (q,):
            raise InvalidParameterError(
                f"query {q.label()!r}: accuracy planning covers count, sum, mean, histogram and "
                f"linear queries; a {q.kind}'s interval comes from post-processing of its "
                "noisy parts (its result reports it)"
            )
    allocated = allocate(plan, epsilon, delta, method=method)
    out = []
    for i, aq in enumerate(allocated.queries):
        sigma, half, err = _query_accuracy(aq, allocated, secure, level, rows)
        out.append(QueryAccuracy(
            aq.query.label(), aq.query.kind, sigma, half, err,
            None if half_width is None else half_width[i], None if rmse is None else rmse[i],
        ))
    return AccuracyPlan(allocated.epsilon, allocated.delta, level, secure, tuple(out),
                        allocated)


def _targets(name: str, value: float | Sequence[float | None] | None, n: int
             ) -> tuple[float | None, ...] | None:
    if value is None:
        return None
    values = [value] * n if isinstance(value, int | float) else list(value)
    if len(values) != n:
        raise InvalidParameterError(f"{name} needs one target per query ({n}), got {len(values)}")
    out: list[float | None] = []
    for v in values:
        out.append(None if v is None else float(
            check_parameter(name, v, "positive")))
    return tuple(out)


def plan_for_accuracy(
    plan: ReleasePlan, *, delta: float, half_width: float | Sequence[float | None] | None = None,
    rmse: float | Sequence[float | None] | None = None, level: float = 0.95,
    method: str = "optimal", secure: bool = True, rows: int | None = None,
) -> AccuracyPlan:
    """The least ε (at this δ) whose intervals are no wider than ``half_width`` and whose
    noise has RMSE no more than ``rmse`` — one number for every query or one per query (None:
    no target for that query) — with the accuracy it buys. Spends nothing.

    Raises:
        InvalidParameterError: No target given, a target ≤ 0, or no ε up to 10⁶ meets them.
    """
    check_parameter("delta", delta)
    n = len(plan.queries)
    widths = _targets("half_width", half_width, n)
    errors = _targets("rmse", rmse, n)
    if widths is None and errors is None:
        raise InvalidParameterError("pass half_width= or rmse= (or both): a target to plan for")

    def worst(eps: float) -> float:
        try:
            acc = accuracy_of(plan, eps, delta, method=method, level=level, secure=secure,
                              rows=rows)
        except NotPrivateError:  # so little noise the secure release has no certificate
            return math.inf
        ratio = 0.0
        for i, q in enumerate(acc.queries):
            for target, got in ((None if widths is None else widths[i], q.half_width),
                                (None if errors is None else errors[i], q.rmse)):
                if target is not None:
                    ratio = max(ratio, got / (target * (1.0 - _TARGET_SLACK)))
        return ratio

    hi = 1.0
    while worst(hi) > 1.0:
        hi *= 4.0
        if hi > _MAX_EPSILON:
            raise InvalidParameterError(
                "no epsilon up to 1e6 gives intervals this narrow (the secure release needs "
                "some noise, and a mean more rows than its count's noise); ask for wider "
                "intervals"
            )
    lo = hi / 4.0
    while worst(lo) <= 1.0 and lo > 1e-9:
        hi, lo = lo, lo / 4.0
    while hi / lo - 1.0 > 1e-9:
        mid = math.sqrt(lo * hi)
        if worst(mid) <= 1.0:
            hi = mid
        else:
            lo = mid
    return accuracy_of(plan, hi, delta, method=method, level=level, secure=secure, rows=rows,
                       half_width=widths, rmse=errors)
