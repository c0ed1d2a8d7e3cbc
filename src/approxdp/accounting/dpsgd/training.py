"""Accounting inside a training loop: one cheap call per step, (ε, δ) whenever asked.

A DP-SGD run is a sequence of steps, each a subsampled Gaussian mechanism with noise
multiplier σ and sampling rate q (Abadi et al. 2016, https://arxiv.org/abs/1607.00133). The
:class:`TrainingAccountant` records it as *phases* — runs of consecutive steps with the same
(σ, q) — so that :meth:`~TrainingAccountant.step` is O(1) (it extends the last phase, or opens a
new one) and a schedule of any length costs memory in the number of (σ, q) changes only.

(ε, δ) is computed on demand by
:func:`~approxdp.accounting.dpsgd.accountants.dpsgd_schedule_epsilon` and
:func:`~approxdp.accounting.dpsgd.accountants.dpsgd_schedule_delta` (PLD by default: each
distinct (σ, q) discretized once and raised to its number of steps by FFT; Koskela et al.
2021, https://arxiv.org/abs/2006.07134; Doroshenko et al. 2022,
https://arxiv.org/abs/2207.04380). Answers for one target are cached until the next step.

A loop that asks ε at the same δ as the run grows (every epoch or phase) is answered from the
second such ask on by a running composition
(:class:`~approxdp.accounting.pld.incremental.IncrementalEpsilon`): each phase is discretized
and transformed once, an ask costs an inverse FFT per composition, and the windows are planned
for twice the steps so far (planned again when the run outgrows them, where the plan is
predicted by a cost model of counts — parts, parts new — to cost no more than the one-shot
route's dearest ask; a clock is never read, so the route and the digits of every answer do not
depend on the machine or its load — only on the history, the asks, and what the process has
already computed: its caches of discretizations can move the last digits). Its answers are
certified upper bounds whose own certified bracket is within ``precision`` (else the one-shot
accountant answers): another bound on the same truth as the schedule functions', as tight.

Sampling and neighbours are those of :func:`~approxdp.accounting.dpsgd_epsilon`:
``"poisson"`` (add/remove neighbours, as Opacus and dp_accounting) or
``"without-replacement"`` (substitution neighbours, sensitivity 2C: μ = 2/σ per step; Zhu,
Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 10).

A checkpoint holds the phases: :meth:`~TrainingAccountant.state_dict` is a plain dict of
numbers and strings (JSON- and ``torch.save``-able), and
:meth:`~TrainingAccountant.load_state_dict` checks every field before it replaces anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from approxdp._validation import is_scalar
from approxdp.accounting.dpsgd.accountants import dpsgd_schedule_delta, dpsgd_schedule_epsilon
from approxdp.accounting.dpsgd.bounds import (
    RDP_TOO_FROM,
    event_of,
    live_phases,
    total_variation,
)
from approxdp.accounting.dpsgd.phases import (
    MAX_STEPS,
    DPSGDPhase,
    check_noise_multiplier,
    check_phases,
    check_sample_rate,
    check_sampling,
    check_steps,
)
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import DEFAULT_PRECISION, check_precision
from approxdp.accounting.pld.incremental import IncrementalEpsilon
from approxdp.accounting.pld.incremental_delta import IncrementalDelta
from approxdp.accounting.pld.plan import _plan
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import PrivacyEvent

__all__ = ["STATE_FORMAT", "TrainingAccountant"]

#: The ``format`` field of a state dict (with ``version``: what load_state_dict reads).
STATE_FORMAT: Final = "approxdp.training-accountant"
_STATE_VERSION: Final = 1
_CACHE_SIZE: Final = 64
#: δ (or ε) values whose ε (or δ) is kept running (the most recently asked)
_RUNNING: Final = 4
#: Types whose equality with the last step's (σ, q) is an exact float comparison.
_PLAIN: Final = (float, int, np.float64)


class TrainingAccountant:
    """The privacy of a DP-SGD run as it trains: O(1) per step, (ε, δ) on demand.

    Args:
        sampling: ``"poisson"`` (default; add/remove neighbours, Opacus's and dp_accounting's
            setting) or ``"without-replacement"`` (fixed batches, substitution neighbours).
        precision: the PLD's target relative excess of ε over the true value (default 1e-3).
        phases: a run so far, as :class:`~approxdp.accounting.DPSGDPhase` objects or
            (σ, q, steps) triples (Opacus's ``history``).

    Example:
        >>> acct = TrainingAccountant()
        >>> for _ in range(1000):
        ...     acct.step(noise_multiplier=1.1, sample_rate=256 / 60000)
        >>> acct.step(noise_multiplier=0.9, sample_rate=256 / 60000, steps=500)
        >>> acct.history
        [(1.1, 0.004266666666666667, 1000), (0.9, 0.004266666666666667, 500)]
        >>> g = acct.epsilon(1e-5)
        >>> round(g.epsilon, 2), g.kind
        (0.9, 'upper bound')
    """

    __slots__ = (
        "_cache",
        "_cache_state",
        "_counts",
        "_epoch",
        "_last_rate",
        "_last_sigma",
        "_precision",
        "_rates",
        "_running",
        "_sampling",
        "_sigmas",
    )

    def __init__(
        self,
        *,
        sampling: str = "poisson",
        precision: float = DEFAULT_PRECISION,
        phases: Iterable[DPSGDPhase | Sequence[Any]] = (),
    ) -> None:
        self._sampling = check_sampling(sampling)
        self._precision = check_precision(precision)
        self._sigmas: list[float] = []
        self._rates: list[float] = []
        self._counts: list[int] = []
        self._last_sigma = math.nan  # compares unequal to everything: the first step is slow
        self._last_rate = math.nan
        self._epoch = 0  # bumped when the run is replaced (reset, load_state_dict)
        self._cache: dict[tuple[Any, ...], Guarantee] = {}
        self._cache_state: tuple[int, int, int] = (-1, 0, 0)
        # per δ: where it was last asked (the state key), and its running composition once
        # it has been asked at two different histories (a training loop's pattern)
        # (the running composition is made at the first ask, to learn the one-shot's cost)
        self._running: dict[tuple[str, float],
                            tuple[tuple[int, int, int], IncrementalEpsilon, bool]] = {}
        for item in _checked(phases):
            self._append(item.noise_multiplier, item.sample_rate, item.steps)

    # -- recording ------------------------------------------------------------------------

    def _append(self, sigma: float, rate: float, steps: int) -> None:
        total = sum(self._counts) + steps
        if total > MAX_STEPS:
            raise InvalidParameterError(
                f"the run would hold {total} steps; at most 1e12 are accounted"
            )
        if self._counts and sigma == self._last_sigma and rate == self._last_rate:
            self._counts[-1] += steps
        else:
            self._sigmas.append(sigma)
            self._rates.append(rate)
            self._counts.append(steps)
            self._last_sigma = sigma
            self._last_rate = rate

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Record ``steps`` steps (default one) with noise multiplier σ and sampling rate q.

        O(1): a step with the previous step's (σ, q) extends the current phase; another
        opens a new one. Nothing is computed until (ε, δ) is asked for.

        Raises:
            InvalidParameterError: σ not in (0, ∞], q not in (0, 1], steps not an integer in
                [1, 1e12] (nothing is recorded).
            ParameterTypeError: a value that is not a number.
        """
        if (
            noise_multiplier == self._last_sigma
            and sample_rate == self._last_rate
            and steps == 1
            and type(noise_multiplier) in _PLAIN
            and type(sample_rate) in _PLAIN
            and type(steps) is int
        ):  # the hot path: the same (σ, q) as the last step (NaN never gets here)
            self._counts[-1] += 1
            return
        sigma = check_noise_multiplier(noise_multiplier)
        rate = check_sample_rate(sample_rate)
        self._append(sigma, rate, check_steps(steps))

    def add_phase(self, *, noise_multiplier: float, sample_rate: float, steps: int) -> None:
        """Record a whole phase: ``steps`` steps at (σ, q) (a schedule, or a planned run)."""
        self.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)

    def reset(self) -> None:
        """Forget every step."""
        self._sigmas.clear()
        self._rates.clear()
        self._counts.clear()
        self._last_sigma = self._last_rate = math.nan
        self._epoch += 1
        self._cache.clear()
        self._running.clear()

    # -- what was recorded ----------------------------------------------------------------

    @property
    def sampling(self) -> str:
        """``"poisson"`` or ``"without-replacement"``."""
        return self._sampling

    @property
    def precision(self) -> float:
        """The PLD's target relative excess of ε (see :func:`~approxdp.accounting.pld_epsilon`)."""
        return self._precision

    @property
    def phases(self) -> tuple[DPSGDPhase, ...]:
        """The run so far, one :class:`~approxdp.accounting.DPSGDPhase` per run of equal
        (σ, q)."""
        return tuple(
            DPSGDPhase(s, q, c) for s, q, c in zip(self._sigmas, self._rates, self._counts,
                                               strict=True)
        )

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """The run as Opacus records it: a list of (noise_multiplier, sample_rate, steps)."""
        return list(zip(self._sigmas, self._rates, self._counts, strict=True))

    @property
    def steps(self) -> int:
        """The number of steps recorded."""
        return sum(self._counts)

    def __len__(self) -> int:
        return sum(self._counts)

    def __repr__(self) -> str:
        return (f"TrainingAccountant(sampling={self._sampling!r}, steps={len(self)}, "
                f"phases={len(self._counts)})")

    # -- checkpoints ----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The accountant's whole state as plain numbers and strings (a checkpoint entry).

        Keys: ``format`` and ``version`` (what wrote it), ``sampling``, ``precision`` and
        ``phases`` (a list of [noise_multiplier, sample_rate, steps]).
        """
        return {
            "format": STATE_FORMAT,
            "version": _STATE_VERSION,
            "sampling": self._sampling,
            "precision": self._precision,
            "phases": [[s, q, c] for s, q, c in self.history],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the recorded run by the one in ``state`` (from :meth:`state_dict`).

        Every field is checked before anything changes. The sampling must match this
        accountant's (a run's neighbouring relation is not changed by reloading it).

        Raises:
            InvalidParameterError, ParameterTypeError: a state that is not one this class
                wrote, a different sampling, or an invalid phase.
        """
        if not isinstance(state, Mapping):
            raise ParameterTypeError(
                f"state must be a mapping from state_dict(), got {type(state).__name__}"
            )
        if state.get("format") != STATE_FORMAT:
            raise InvalidParameterError(
                f"state is not a TrainingAccountant state (format={state.get('format')!r}, "
                f"expected {STATE_FORMAT!r})"
            )
        version = state.get("version")
        if version != _STATE_VERSION:
            raise InvalidParameterError(
                f"state version {version!r} is not one this approxdp reads "
                f"(it reads {_STATE_VERSION})"
            )
        missing = [k for k in ("sampling", "precision", "phases") if k not in state]
        if missing:
            raise InvalidParameterError(f"state lacks {', '.join(missing)}")
        sampling = check_sampling(state["sampling"])
        if sampling != self._sampling:
            raise InvalidParameterError(
                f"the state is of a run with sampling={sampling!r}; this accountant has "
                f"sampling={self._sampling!r} (build TrainingAccountant(sampling={sampling!r}) "
                "to load it)"
            )
        precision = check_precision(state["precision"])
        phases = _checked(state["phases"])
        self.reset()
        self._precision = precision
        for p in phases:
            self._append(p.noise_multiplier, p.sample_rate, p.steps)

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> TrainingAccountant:
        """A new accountant holding the run in ``state`` (its sampling included)."""
        if not isinstance(state, Mapping):
            raise ParameterTypeError(
                f"state must be a mapping from state_dict(), got {type(state).__name__}"
            )
        acct = cls(sampling=check_sampling(state.get("sampling")))
        acct.load_state_dict(state)
        return acct

    # -- (ε, δ) ---------------------------------------------------------------------------

    def events(self) -> list[tuple[PrivacyEvent, int]]:
        """The run as a PLD history of (event, steps) pairs, one per phase, e.g. to compose it
        with other runs or releases on the same data by :func:`~approxdp.accounting.pld_epsilon`.
        """
        return [(event_of(p, self._sampling), p.steps) for p in self.phases]

    def epsilon(self, delta: Any, *, accountant: str = "pld") -> Guarantee:
        """ε of the run so far at δ (see
        :func:`~approxdp.accounting.dpsgd.accountants.dpsgd_schedule_epsilon`).

        Args:
            delta: δ in (0, 1), or an array of them.
            accountant: ``"pld"`` (certified, tight; default), ``"rdp"`` (certified, looser),
                ``"gdp-clt"`` (an approximation; may be below the true ε) or
                ``"amplify+compose"`` (certified, loose).

        Returns:
            A :class:`~approxdp.accounting.Guarantee`; the PLD's carries a certified
            ``bracket`` (lower, upper) around the true ε (arrays for an array of δ).
        """
        return self._answer("epsilon", delta, accountant)

    def delta(self, epsilon: Any, *, accountant: str = "pld") -> Guarantee:
        """δ of the run so far at ε (ε ≥ 0, or an array of them); see :meth:`epsilon`."""
        return self._answer("delta", epsilon, accountant)

    def get_epsilon(self, delta: Any) -> Any:
        """The PLD's ε at δ as a plain float (an array for an array of δ), as Opacus's
        accountants return it: a certified upper bound."""
        return self.epsilon(delta).epsilon

    def get_delta(self, epsilon: Any) -> Any:
        """The PLD's δ at ε as a plain float (an array for an array of ε): an upper bound."""
        return self.delta(epsilon).delta

    def _answer(self, solve: str, given: Any, accountant: str) -> Guarantee:
        """The answer for the run as it is now; one number asked before comes from the cache
        (arrays are solved afresh)."""
        # every change appends a phase or lengthens the last one, or replaces the run
        state = (self._epoch, len(self._counts), self._counts[-1] if self._counts else 0)
        if self._cache_state != state:
            self._cache.clear()
            self._cache_state = state
        one = is_scalar(given) and not isinstance(given, bool) and isinstance(accountant, str)
        key = (solve, accountant, float(given)) if one else None
        if key is not None and key in self._cache:
            return self._cache[key]
        phases = self.phases or (DPSGDPhase(math.inf, 1.0, 1),)  # no step: no privacy loss
        g = None
        if key is not None and accountant == "pld":
            g = self._running_answer(phases, solve, float(given), state)
        if g is not None:
            pass  # (the running composition answered)
        elif solve == "epsilon":
            g = dpsgd_schedule_epsilon(phases, delta=given, sampling=self._sampling,
                                       accountant=accountant, precision=self._precision)
        else:
            g = dpsgd_schedule_delta(phases, epsilon=given, sampling=self._sampling,
                                     accountant=accountant, precision=self._precision)
            held = self._running.get(("delta", float(given))) if key is not None else None
            if held is not None and isinstance(held[1], IncrementalDelta):
                held[1].last = float(g.delta)  # (it sizes the running windows)
        if key is not None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = g
        return g

    def _running_answer(
        self, phases: tuple[DPSGDPhase, ...], solve: str, target: float,
        state: tuple[int, int, int],
    ) -> Guarantee | None:
        """ε at δ (``solve="epsilon"``) or δ at ε from the running composition kept for that
        target, once it was asked at an earlier history (a first ask takes the one-shot
        accountant: cheaper for a history seen once), for subsampled steps under
        RDP_TOO_FROM whose total variation exceeds δ (else the one-shot
        answer is exact, capped by it, or mixes in RDP). None: the one-shot accountant
        answers."""
        if not (0.0 < target < 1.0 if solve == "epsilon" else 0.0 <= target < math.inf):
            return None  # (the one-shot path raises the typed error)
        key = (solve, target)
        before = self._running.get(key)
        if before is None or (not before[2] and before[0] == state):
            if len(self._running) >= _RUNNING and before is None:
                self._running.pop(next(iter(self._running)))
            inc = before[1] if before is not None else (
                IncrementalEpsilon(target, self._precision) if solve == "epsilon"
                else IncrementalDelta(target, self._precision))
            if before is None:  # the one-shot route answers this first ask (cold caches):
                # the running route's budget for a plan made in one go (a cost model of
                # counts, never a clock: the route is the same on any machine)
                inc.note_oneshot(len(live_phases(phases)))
            self._running[key] = (state, inc, False)
            return None
        inc = before[1]
        self._running[key] = (state, inc, True)
        live = live_phases(phases)
        steps = sum(p.steps for p in live)
        if (not live or steps >= RDP_TOO_FROM or steps == 1
                or all(p.sample_rate == 1.0 for p in live)):
            # (schedules of several sample rates too: a plan scaled from the present phases
            # is outgrown by one of larger q sooner, but the next one is prepared over the
            # asks before and the failed plan re-planned on its own grid; the 10-phase
            # benchmark's asks 6-10: ε 30 / 43 ms median / mean against the one-shot's 53 /
            # 61, δ(2) 8-10: 23-92 against 130-190)
            return None
        tv = total_variation(live, self._sampling)
        if solve == "epsilon" and tv <= target:
            return None
        g = inc.answer(_plan([(event_of(p, self._sampling), p.steps) for p in live]))
        if g is not None and solve == "delta" and float(g.delta) > tv:
            return None  # (the one-shot route answers with the total variation's bound)
        return g


def _checked(phases: Any) -> tuple[DPSGDPhase, ...]:
    """``phases`` checked as a schedule (an empty run allowed)."""
    if isinstance(phases, list | tuple) and not phases:
        return ()
    return check_phases(phases)
