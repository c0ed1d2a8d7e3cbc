"""The running route's pieces: its cost model of counts, the running compositions of one
plan and the helpers that size them (moved from :mod:`approxdp.accounting.pld.incremental`,
which uses them; see there for the route itself and the sources)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from approxdp.accounting.pld.blocks import BLOCK_FROM
from approxdp.accounting.pld.discretized import (
    STABLE_FROM,
    discretized_all,
    quantize,
    rounded_all,
)
from approxdp.accounting.pld.plan import _Plan
from approxdp.accounting.pld.privacy_loss import GaussianLoss, LossSource, SubsampledLoss
from approxdp.accounting.pld.running import RunningComposition

Parts = Sequence[tuple[LossSource, int]]
#: The largest running window (points): beyond it the one-shot accountant, which composes
#: long phases in blocks, is cheaper.
_MAX_POINTS = 1 << 20
#: The route's cost model: CPU ms of each kind of ask, from counts only (parts, and parts
#: discretized afresh), so that the route — and the digits of ε — never depend on the
#: machine's speed or load. Measured once (dpguard, 2026-11-27 16:10 UTC, load ~1, 2 cores;
#: the benchmark's histories, windows of 10^4-3·10^4 points; min of 2-3 runs):
#: a one-shot answer, its discretizations cached but the newest part's: 47 ms at 4 parts,
#: 106 at 16, 225 at 32, 251 at 48 (MNIST's one part: 15-24); cold (a first ask): 548-756 ms
#: at 50 parts, 21-26 at one. A plan in one go, every part discretized afresh: 53 ms at 4
#: parts, 181 at 16, 365 at 32 (one: 27); its parts' discretizations cached: 18, 60, 129
#: (one: 12-15). Fitted: (fixed, per part, per part discretized afresh), in ms.
_ONESHOT_COST = (20.0, 5.0, 10.0)
_PLAN_COST = (5.0, 4.5, 7.0)


#: The next plan is prepared from this share of the steps the present one was planned for
#: (on the benchmark's 50-phase schedule, whose σ falls, a plan's bracket outgrew the
#: precision at 72-94 % of its steps: prepared from 71 % the next was not ready in time)
_PREPARE_FROM = 0.6
#: ... and its parts added, a few per ask, by the time the history reaches this share (the
#: 50-phase schedule's plans lost their bracket at 72-94 % of their steps: filled by 100 %,
#: the ask that switched added the rest, ~40 parts: 130-260 ms; by 70 %: 60-110)
_PREPARE_BY = 0.7
#: ... or over this many asks at least, where the present plan holds them all
_PREPARE_ASKS = 3


def _cost(parts: int, fresh: int, model: tuple[float, float, float]) -> float:
    """A cost model's (fixed, per part, per fresh part) cost of an ask of ``parts`` parts,
    ``fresh`` of them discretized afresh: a one-shot answer (:data:`_ONESHOT_COST`) or a plan
    made in one go (:data:`_PLAN_COST`)."""
    fixed, per_part, per_fresh = model
    return fixed + per_part * parts + per_fresh * fresh


@dataclass
class _Running:
    """One running composition, of which measure of its parts (``kind``: the pessimistic
    one, or the rounded loss's P- or Q-measure) on which grid, and what has been added to it
    (source → count)."""

    run: RunningComposition
    kind: int  # -1: pessimistic; 0, 1: the rounded loss's P-, Q-measure
    added: dict[LossSource, int] = field(default_factory=dict)

    def sync(self, parts: Parts, step_tail: float) -> None:
        """Add the parts that are new or have grown since the last call."""
        new = [(s, c - self.added.get(s, 0)) for s, c in parts if c > self.added.get(s, 0)]
        if not new:
            return
        h = self.run.h
        if self.kind < 0:
            measures = discretized_all(new, h, step_tail, False)
        else:
            measures = [r.as_measures()[self.kind] for r in rounded_all(new, h, step_tail, False)]
        for (s, extra), m in zip(new, measures, strict=True):
            self.run.add(m, extra)
            self.added[s] = self.added.get(s, 0) + extra


@dataclass
class _State:
    """The running compositions of one plan."""

    h: float  # the dominant direction's grid (the others', and the tests', twice as coarse)
    step_tail: float
    planned_steps: int  # the steps the windows were planned for
    uppers: dict[str, _Running]
    dominant: str
    p_low: _Running
    q_low: _Running


def _supported(plan: _Plan) -> bool:
    """Subsampled Gaussians only, each part under BLOCK_FROM steps: a longer part the
    one-shot accountant composes in blocks (√B-fold coarser windows), cheaper than one
    running window as wide as the whole sum (measured: one phase of 2·10^5 steps asked every
    2·10^4, 29 ms one-shot against 50–90 ms running)."""
    parts = [*plan.remove, *plan.add]
    return bool(parts) and plan.steps < STABLE_FROM and all(
        type(s) is SubsampledLoss and type(s.inner) is GaussianLoss and c < BLOCK_FROM
        for s, c in parts
    )


def _resized(h: float, width: float, precision: float, coarser: bool) -> float:
    """The grid step whose bracket is predicted at 0.4·``precision`` wide, from one of
    relative ``width`` at ``h`` (width ∝ h²): at most 4 times finer; coarser (at most twice)
    only if ``coarser`` — else at least a quarter octave finer. Unknown widths: h (a fresh plan
    on the same grid)."""
    if math.isnan(width):
        return h
    if not (0.0 < width < math.inf):
        return quantize(h / 2.0)
    ratio = math.sqrt(0.4 * precision / width)
    ratio = min(ratio, 2.0) if coarser else min(ratio, 2.0**-0.25)
    return quantize(h * max(ratio, 0.25))


def _scaled(parts: Parts, growth: float) -> list[tuple[LossSource, int]]:
    return [(s, max(c, math.ceil(growth * c))) for s, c in parts]
