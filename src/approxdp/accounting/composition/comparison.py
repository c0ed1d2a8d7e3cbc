"""Total privacy of a list of steps under each composition rule, side by side: the least
total ε each rule certifies at a total δ (``approxdp compose`` and the browser's Compose page
show it; :mod:`approxdp.reports.composition` reads their release tokens).

- ``exact-gaussian``: the Gaussian steps compose exactly into one Gaussian (Zhao et al. 2019,
  https://arxiv.org/abs/1805.06530, Lemma 15); other steps join by the accountant's best rule
  (:mod:`approxdp.accounting.composition.rules`).
- ``optimal`` (Kairouz, Oh, Viswanath 2017, https://arxiv.org/abs/1311.0776), ``advanced``
  (Dwork & Roth 2014, Thm 3.20), ``basic`` (Thm 3.16): each Gaussian is first converted to
  (ε₀, δ₀)-DP at a per-step δ₀, and the steps compose as generic (ε, δ)-DP mechanisms (optimal
  and advanced with the largest step's (ε, δ) when steps differ). Every δ₀ gives a valid bound;
  a grid of δ₀ is searched and the best reported.

Every rule works on (event, count) pairs, so a count costs nothing — except ``optimal``, whose
sums have k + 1 terms (O(k)): it is computed for at most
:data:`~approxdp.accounting.composition.optimal.OPTIMAL_MAX_STEPS` steps in all and reported as
not computed above that.

>>> from approxdp.events import GaussianEvent
>>> bounds = compare_rules([(GaussianEvent(sigma=4.0), 10)], 1e-5)
>>> bounds[0].rule, bounds[0].kind, bounds[1].rule, bounds[1].kind
('exact-gaussian', 'exact', 'optimal', 'upper bound')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from approxdp._validation import check_parameter
from approxdp.accounting.composition.closed_form import advanced_composition
from approxdp.accounting.composition.costs import LedgerState, contribution
from approxdp.accounting.composition.gaussian import compose_gaussian
from approxdp.accounting.composition.optimal import OPTIMAL_MAX_STEPS, optimal_composition
from approxdp.accounting.composition.rules import epsilon_at
from approxdp.accounting.registry import accounting_rule, rule_names
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import EpsilonDeltaEvent, GaussianEvent, LaplaceEvent, PrivacyEvent
from approxdp.profiles import gaussian_epsilon

__all__ = ["COMPARED_RULES", "Progress", "RuleBound", "compare_rules", "no_progress"]

#: The rules compared, in the order they are shown (tightest first).
COMPARED_RULES = rule_names("compose")
_GRID = 24  # per-step δ₀ candidates for the generic rules
_FULL_GRID_STEPS = 10_000  # above, optimal is searched on the grid by ternary search
_BASIC = "basic composition (Dwork-Roth Thm 3.16)"

#: ``progress(description, total)``: a context yielding ``advance(amount)`` (a progress bar).
Progress = Callable[[str, float | None], AbstractContextManager[Callable[[float], None]]]


@contextmanager
def no_progress(
    description: str, total: float | None = None
) -> Iterator[Callable[[float], None]]:
    """A :data:`Progress` that shows nothing."""
    yield lambda amount: None


@dataclass(frozen=True, slots=True)
class RuleBound:
    """What one composition rule certifies for the steps at the total δ.

    Attributes:
        rule: one of :data:`COMPARED_RULES`.
        epsilon: the total ε (``inf``: no ε reaches the total δ; None: not computed or not
            applicable, ``kind == "n/a"``).
        delta: the total δ it holds at (None when not computed).
        kind: ``"exact"`` (the true ε of the composition), ``"upper bound"`` or ``"n/a"``.
        description: the theorem used, or why there is no number.
        per_release_delta: the per-step δ₀ a generic rule converted each Gaussian at.
        ratio_to_best: ε over the least finite ε of all rules compared (None without one).
        filter: whether the rule, as applied here, stays valid when each step's parameters are
            chosen after earlier outputs (a valid privacy filter:
            :data:`approxdp.accounting.registry.ACCOUNTING_RULES`); ``exact-gaussian`` of a
            mixed list is not (the other steps join by the smallest bound).
    """

    rule: str
    epsilon: float | None
    delta: float | None
    kind: Literal["exact", "upper bound", "n/a"]
    description: str
    per_release_delta: float | None
    ratio_to_best: float | None = None
    filter: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (``approxdp compose``'s ``rules`` entries)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class _Step:
    """``count`` identical steps: ``kind`` is ``gaussian`` (a = σ, b = Δ), ``laplace`` (a =
    scale, b = Δ) or ``dp`` (a = ε, b = δ); ``event`` is one of them."""

    kind: str
    a: float
    b: float
    count: int
    event: PrivacyEvent


def _step(event: object, count: object) -> _Step:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidParameterError(f"count must be an integer >= 1, got count={count!r}")
    if isinstance(event, GaussianEvent):
        return _Step("gaussian", event.sigma, event.sensitivity, count, event)
    if isinstance(event, LaplaceEvent):
        return _Step("laplace", event.scale, event.sensitivity, count, event)
    if isinstance(event, EpsilonDeltaEvent):
        return _Step("dp", event.epsilon, event.delta, count, event)
    raise ParameterTypeError(
        "compare_rules takes GaussianEvent, LaplaceEvent and EpsilonDeltaEvent steps, got "
        f"{type(event).__name__}"
    )


def _eps_of_gaussians(gauss: Sequence[_Step], delta0: np.ndarray) -> list[np.ndarray]:
    """ε₀ of each Gaussian entry at each per-release δ₀ (exact inverse, private side)."""
    return [np.atleast_1d(gaussian_epsilon(g.a, delta0, g.b)).astype(np.float64) for g in gauss]


def _generic_rows(
    releases: Sequence[_Step], delta: float, rules: Sequence[str], advance: Any,
) -> list[dict[str, Any]]:
    gauss = [r for r in releases if r.kind == "gaussian"]
    steps = [(r.a, r.b, r.count) if r.kind == "dp" else (r.b / r.a, 0.0, r.count)
             for r in releases if r.kind != "gaussian"]
    n_g = sum(g.count for g in gauss)
    k = n_g + sum(c for _, _, c in steps)
    eps_steps = max((e for e, _, _ in steps), default=0.0)
    delta_steps = max((d for _, d, _ in steps), default=0.0)
    delta_sum = math.fsum(d * c for _, d, c in steps)
    rows: list[dict[str, Any]] = []
    if "basic" in rules:
        rows.append(_basic_row(gauss, steps, n_g, delta, delta_sum))
    advance(1)
    # Per-release δ₀ for the Gaussians: a log grid over (0, δ/k); without Gaussians, none.
    if n_g:
        delta0 = delta / k * np.logspace(-8, math.log10(0.999), _GRID)
        eps_g = np.max(np.vstack(_eps_of_gaussians(gauss, delta0)), axis=0)
    else:
        delta0 = np.zeros(1)
        eps_g = np.zeros(1)
    eps_m = np.maximum(eps_g, eps_steps)
    delta_m = np.maximum(delta0, delta_steps)
    slack = delta - k * delta_m
    ok = slack > 0
    for rule in ("advanced", "optimal"):
        if rule not in rules:
            continue
        if not np.any(ok):
            rows.append(_infeasible(rule, delta, f"the (ε, δ) steps alone need δ >= {k} × "
                                    f"{delta_steps:g} = {k * delta_steps:g}"))
            continue
        if rule == "advanced":
            g = advanced_composition(eps_m[ok], delta_m[ok], k, slack[ok])
            eps_all = np.atleast_1d(g.epsilon)
            dl_all = np.atleast_1d(g.delta)
            i = int(np.argmin(eps_all))
            best_eps, best_delta, description = float(eps_all[i]), float(dl_all[i]), g.rule
        else:
            if k > OPTIMAL_MAX_STEPS:
                rows.append(_not_computed(
                    "optimal", f"not computed: optimal composition sums k + 1 terms (O(k)) and "
                    f"is limited to k <= {OPTIMAL_MAX_STEPS:,} releases; here k = {k:,}"))
                advance(1)
                continue
            best_eps, best_delta, description, i = _best_optimal(
                eps_m[ok], delta_m[ok], slack[ok], k)
        heterogeneous = len({(r.kind, r.a, r.b) for r in releases}) > 1
        rows.append({
            "rule": rule,
            "epsilon": best_eps,
            "delta": best_delta,
            "kind": "upper bound",
            "description": description + (" over the largest step" if heterogeneous else ""),
            "per_release_delta": float(delta0[ok][i]) if n_g else None,
        })
        advance(1)
    return rows


def _best_optimal(
    eps: np.ndarray, deltas: np.ndarray, slack: np.ndarray, k: int
) -> tuple[float, float, str, int]:
    """The least optimal-composition ε over the δ₀ grid (every point is a valid bound). Each
    evaluation is O(k): above a few thousand steps the grid is searched by ternary search
    (ε is unimodal along it: the δ₀ term falls as the slack term rises), about 8 points."""
    cache: dict[int, tuple[float, float, str]] = {}

    def at(j: int) -> float:
        if j not in cache:
            g = optimal_composition(float(eps[j]), float(deltas[j]), k, float(slack[j]))
            cache[j] = (float(g.epsilon), float(g.delta), g.rule)
        return cache[j][0]

    if k <= _FULL_GRID_STEPS:
        for j in range(eps.size):
            at(j)
    else:
        lo, hi = 0, eps.size - 1
        while hi - lo > 2:
            m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
            if at(m1) <= at(m2):
                hi = m2
            else:
                lo = m1
        for j in range(lo, hi + 1):
            at(j)
    best = min(cache, key=lambda j: cache[j][0])
    return (*cache[best], best)


def _not_computed(rule: str, why: str) -> dict[str, Any]:
    return {"rule": rule, "epsilon": None, "delta": None, "kind": "n/a", "description": why,
            "per_release_delta": None}


def _infeasible(rule: str, delta: float, why: str) -> dict[str, Any]:
    return {"rule": rule, "epsilon": math.inf, "delta": delta, "kind": "upper bound",
            "description": f"no ε reaches total δ = {delta:g}: {why}", "per_release_delta": None}


def _basic_row(
    gauss: Sequence[_Step], steps: Sequence[tuple[float, float, int]], n_g: int,
    delta: float, delta_sum: float,
) -> dict[str, Any]:
    left = delta - delta_sum
    if left < 0 or (n_g and left <= 0):
        return _infeasible("basic", delta, f"the (ε, δ) steps already sum to δ = {delta_sum:g}")
    budgets = [(e, d, c) for e, d, c in steps]  # (ε, δ, count): Σ count·ε, O(1) in counts
    delta0 = None
    if n_g:
        # ε₀ falls as δ₀ grows, so basic composition wants the largest δ₀ that fits.
        delta0 = math.nextafter(left / n_g * (1 - 1e-12), 0.0)
        for entry, eps in zip(gauss, _eps_of_gaussians(gauss, np.array([delta0])), strict=True):
            budgets.append((float(eps[0]), delta0, entry.count))
    eps_total = _sum_up(sum((Fraction(e) * c for e, _, c in budgets), Fraction(0)))
    delta_total = min(1.0, _sum_up(sum((Fraction(d) * c for _, d, c in budgets), Fraction(0))))
    return {"rule": "basic", "epsilon": eps_total, "delta": delta_total,
            "kind": "upper bound", "description": _BASIC, "per_release_delta": delta0}


def _sum_up(total: Fraction) -> float:
    """An exact rational sum as a float rounded up (inf beyond the largest float)."""
    try:
        out = float(total)
    except OverflowError:
        return math.inf
    return math.nextafter(out, math.inf) if Fraction(out) < total else out


def _exact_row(releases: Sequence[_Step], delta: float) -> dict[str, Any]:
    gauss = [r for r in releases if r.kind == "gaussian"]
    if not gauss:
        return {"rule": "exact-gaussian", "epsilon": None, "delta": None, "kind": "n/a",
                "description": "no Gaussian releases to compose exactly",
                "per_release_delta": None}
    if len(gauss) == len(releases):
        composed = compose_gaussian([g.a for g in gauss], [g.b for g in gauss],
                                    counts=[g.count for g in gauss])  # O(1) in the counts
        guarantee = composed.guarantee(delta=delta)
        return {"rule": "exact-gaussian", "epsilon": float(guarantee.epsilon), "delta": delta,
                "kind": "exact",
                "description": f"{guarantee.rule}: one Gaussian with σ* = {composed.sigma:.6g}",
                "per_release_delta": None}
    state = LedgerState()  # the accountant's sufficient statistic, built in O(len(releases))
    for r in releases:
        state = state.add(contribution(r.event), times=r.count)
    eps, rule = epsilon_at(state, delta, "auto")
    return {"rule": "exact-gaussian", "epsilon": eps, "delta": delta, "filter": False,
            "kind": "upper bound", "description": rule, "per_release_delta": None}


def compare_rules(
    steps: Sequence[tuple[PrivacyEvent, int]], delta: float,
    rules: Sequence[str] = COMPARED_RULES, progress: Progress = no_progress,
) -> tuple[RuleBound, ...]:
    """The total ε at total ``delta`` of ``steps`` ((event, count) pairs: Gaussian, Laplace
    and (ε, δ) steps) under each of ``rules``, in the order of :data:`COMPARED_RULES`.

    ``progress(description, total)`` is a context that yields ``advance(amount)`` (the
    command line's progress bar; by default nothing is shown).

    Raises:
        InvalidParameterError: δ outside (0, 1), no steps, an unknown rule or a bad count.
        ParameterTypeError: an event of another kind.
    """
    delta = float(check_parameter("delta", delta))
    parsed = [_step(event, count) for event, count in steps]
    if not parsed:
        raise InvalidParameterError("give at least one step to compose")
    unknown = [r for r in rules if r not in COMPARED_RULES]
    if unknown:
        raise InvalidParameterError(
            f"rules must be among {list(COMPARED_RULES)}, got {unknown[0]!r}")
    wanted = list(dict.fromkeys(rules)) if rules else list(COMPARED_RULES)
    rows: list[dict[str, Any]] = []
    with progress("Composing", 1 + len(wanted)) as advance:
        if "exact-gaussian" in wanted:
            rows.append(_exact_row(parsed, delta))
        advance(1)
        rows += _generic_rows(parsed, delta, wanted, advance)
    finite = [r["epsilon"] for r in rows
              if r["epsilon"] is not None and math.isfinite(r["epsilon"])]
    best = min(finite, default=None)
    for row in rows:
        eps = row["epsilon"]
        if eps is None or best is None:
            row["ratio_to_best"] = None
        elif best > 0:
            row["ratio_to_best"] = eps / best
        else:
            row["ratio_to_best"] = 1.0 if eps == best else None
    rows.sort(key=lambda r: COMPARED_RULES.index(r["rule"]))
    for row in rows:
        row.setdefault("filter", accounting_rule(row["rule"], "compose").filter_valid)
    return tuple(RuleBound(**row) for row in rows)
