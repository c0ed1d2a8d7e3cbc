"""Total privacy of a list of releases under each composition rule: ``approxdp compose``'s
report, also shown by the browser's Compose page.

Releases are written as tokens, each optionally repeated with a ``K x`` prefix:

- ``gaussian:SIGMA[:SENSITIVITY]`` — a Gaussian release (default Δ = 1);
- ``laplace:SCALE[:SENSITIVITY]`` — a Laplace release, pure (Δ/b, 0)-DP;
- ``dp:EPSILON[:DELTA]`` — any (ε, δ)-DP step (default δ = 0);
- e.g. ``100xgaussian:20`` is a hundred Gaussian releases with σ = 20.

For a total δ the command reports the least total ε each rule can certify:

- ``exact-gaussian``: the Gaussian releases compose exactly into one Gaussian (Zhao et al.
  Lemma 15);
  other steps join by the accountant's best rule (:mod:`approxdp.accounting.budget.rules`).
- ``optimal`` (Kairouz et al. 2017), ``advanced`` (Dwork & Roth 2014, Thm 3.20), ``basic``
  (Thm 3.16): each Gaussian is first converted to (ε₀, δ₀)-DP at a per-release δ₀, and the
  steps compose as generic (ε, δ)-DP mechanisms (optimal and advanced with the largest step's
  (ε, δ) when steps differ). Every δ₀ gives a valid bound; the command searches a grid of
  δ₀ and reports the best.

Cost: a ``K x`` prefix costs nothing — every rule works on (release, count) pairs, so
``1000000000xgaussian:1`` takes as long as ``gaussian:1`` — except ``optimal``, whose sums have
K + 1 terms (O(K) time and memory): it is computed for at most
:data:`~approxdp.accounting.composition.optimal.OPTIMAL_MAX_STEPS` releases in all and reported
as not computed above that.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from approxdp.accounting import advanced_composition, compose_gaussian, optimal_composition
from approxdp.accounting.budget.costs import LedgerState, check_cost, contribution
from approxdp.accounting.budget.rules import epsilon_at
from approxdp.accounting.composition.optimal import OPTIMAL_MAX_STEPS
from approxdp.errors import ApproxDPError, InvalidParameterError
from approxdp.events import EpsilonDeltaEvent, GaussianEvent, LaplaceEvent, PrivacyEvent
from approxdp.profiles import gaussian_epsilon
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["RULES", "Progress", "Release", "composition_report", "no_progress",
           "parse_release"]

#: Rules in the order they are shown (tightest first).
RULES = ("exact-gaussian", "optimal", "advanced", "basic")
_TOKEN = re.compile(r"^(?:(?P<count>\d+)x)?(?P<kind>gaussian|laplace|dp):(?P<args>.+)$")
_GRID = 24  # per-release δ₀ candidates for the generic rules
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
class Release:
    """``count`` identical releases: ``kind`` is ``gaussian`` (a = σ, b = Δ), ``laplace``
    (a = scale, b = Δ) or ``dp`` (a = ε, b = δ)."""

    kind: str
    a: float
    b: float
    count: int

    def event(self) -> PrivacyEvent:
        """The accountant's event for ONE of these releases (validated by the event class)."""
        if self.kind == "gaussian":
            return GaussianEvent(sigma=self.a, sensitivity=self.b)
        if self.kind == "laplace":
            return LaplaceEvent(scale=self.a, sensitivity=self.b)
        return EpsilonDeltaEvent(epsilon=self.a, delta=self.b)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of this entry."""
        names = {"gaussian": ("sigma", "sensitivity"), "laplace": ("scale", "sensitivity"),
                 "dp": ("epsilon", "delta")}[self.kind]
        return {"kind": self.kind, names[0]: self.a, names[1]: self.b, "count": self.count}


def parse_release(token: str) -> Release:
    """Parse one release token (see the module docstring)."""
    match = _TOKEN.match(token.strip().lower())
    usage = ("write releases as [Kx]gaussian:SIGMA[:SENSITIVITY], [Kx]laplace:SCALE"
             "[:SENSITIVITY] or [Kx]dp:EPSILON[:DELTA], e.g. 10xgaussian:4")
    if match is None:
        raise InvalidParameterError(f"cannot read release {token!r}; {usage}")
    kind, parts = match["kind"], match["args"].split(":")
    count = int(match["count"]) if match["count"] else 1
    if count < 1 or len(parts) > 2:
        raise InvalidParameterError(f"cannot read release {token!r}; {usage}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise InvalidParameterError(f"release {token!r} has a value that is not a number; "
                                    f"{usage}") from None
    default = 0.0 if kind == "dp" else 1.0
    release = Release(kind, values[0], values[1] if len(values) == 2 else default, count)
    try:  # σ > 0, ε >= 0, δ in [0, 1), a finite cost: checked by the event classes
        check_cost(release.event(), contribution(release.event()))
    except ApproxDPError as exc:
        raise InvalidParameterError(f"release {token!r}: {exc}; {usage}") from exc
    return release


def _eps_of_gaussians(gauss: Sequence[Release], delta0: np.ndarray) -> list[np.ndarray]:
    """ε₀ of each Gaussian entry at each per-release δ₀ (exact inverse, private side)."""
    return [np.atleast_1d(gaussian_epsilon(g.a, delta0, g.b)).astype(np.float64) for g in gauss]


def _generic_rows(
    releases: Sequence[Release], delta: float, rules: Sequence[str], advance: Any,
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
    gauss: Sequence[Release], steps: Sequence[tuple[float, float, int]], n_g: int,
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


def _exact_row(releases: Sequence[Release], delta: float) -> dict[str, Any]:
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
        state = state.add(contribution(r.event()), times=r.count)
    eps, rule = epsilon_at(state, delta, "auto")
    return {"rule": "exact-gaussian", "epsilon": eps, "delta": delta,
            "kind": "upper bound", "description": rule, "per_release_delta": None}


def composition_report(
    releases: Sequence[Release], delta: float, rules: Sequence[str] = RULES,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """The ``compose`` JSON object: total ε at total δ under each rule, best first.

    ``progress(description, total)`` is a context that yields ``advance(amount)`` (the
    command line's progress bar; by default nothing is shown)."""
    if not (0.0 < delta < 1.0):
        raise InvalidParameterError(f"delta must be in (0, 1), got delta={delta:g}")
    if not releases:
        raise InvalidParameterError("give at least one release, e.g. 10xgaussian:4")
    wanted = list(dict.fromkeys(rules)) if rules else list(RULES)
    rows: list[dict[str, Any]] = []
    with progress("Composing", 1 + len(wanted)) as advance:
        if "exact-gaussian" in wanted:
            rows.append(_exact_row(releases, delta))
        advance(1)
        rows += _generic_rows(releases, delta, wanted, advance)
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
    rows.sort(key=lambda r: RULES.index(r["rule"]))
    return {
        "command": "compose",
        "schema_version": JSON_SCHEMA_VERSION,
        "delta": delta,
        "releases": [r.as_dict() for r in releases],
        "count": sum(r.count for r in releases),
        "rules": rows,
    }
