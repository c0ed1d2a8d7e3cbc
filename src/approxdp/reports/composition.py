"""Total privacy of a list of releases under each composition rule: ``approxdp compose``'s
report, also shown by the browser's Compose page.

Releases are written as tokens, each optionally repeated with a ``K x`` prefix:

- ``gaussian:SIGMA[:SENSITIVITY]`` — a Gaussian release (default Δ = 1);
- ``laplace:SCALE[:SENSITIVITY]`` — a Laplace release, pure (Δ/b, 0)-DP;
- ``dp:EPSILON[:DELTA]`` — any (ε, δ)-DP step (default δ = 0);
- e.g. ``100xgaussian:20`` is a hundred Gaussian releases with σ = 20.

For a total δ the command reports the least total ε each rule can certify for the list as
declared (computed by :func:`approxdp.accounting.composition.comparison.compare_rules`, as typed
:class:`~approxdp.accounting.composition.comparison.RuleBound` results); each row also says
whether its rule stays valid when each release's parameters are chosen after earlier outputs
(``filter``: a valid privacy filter, Rogers et al. 2016, from
:data:`approxdp.accounting.registry.ACCOUNTING_RULES`):

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

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from approxdp._validation import check_parameter
from approxdp.accounting.budget.costs import check_cost, contribution
from approxdp.accounting.composition.comparison import (
    COMPARED_RULES,
    Progress,
    compare_rules,
    no_progress,
)
from approxdp.errors import ApproxDPError, InvalidParameterError
from approxdp.events import EpsilonDeltaEvent, GaussianEvent, LaplaceEvent, PrivacyEvent
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["RULES", "Progress", "Release", "composition_report", "no_progress",
           "parse_release"]

#: Rules in the order they are shown (tightest first).
RULES = COMPARED_RULES
_TOKEN = re.compile(r"^(?:(?P<count>\d+)x)?(?P<kind>gaussian|laplace|dp):(?P<args>.+)$")


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


def composition_report(
    releases: Sequence[Release], delta: float, rules: Sequence[str] = RULES,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """The ``compose`` JSON object: total ε at total δ under each rule, best first
    (:func:`~approxdp.accounting.composition.comparison.compare_rules`).

    ``progress(description, total)`` is a context that yields ``advance(amount)`` (the
    command line's progress bar; by default nothing is shown)."""
    delta = float(check_parameter("delta", delta))
    if not releases:
        raise InvalidParameterError("give at least one release, e.g. 10xgaussian:4")
    bounds = compare_rules([(r.event(), r.count) for r in releases], delta, rules, progress)
    return {
        "command": "compose",
        "schema_version": JSON_SCHEMA_VERSION,
        "delta": delta,
        "releases": [r.as_dict() for r in releases],
        "count": sum(r.count for r in releases),
        "rules": [b.as_dict() for b in bounds],
    }
