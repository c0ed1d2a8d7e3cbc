"""A DP-SGD run under every accountant, δ at a given ε, or the noise multiplier for a target
ε: ``approxdp dpsgd``'s report, also shown by the browser's Compose / DP-SGD page.

A run is one phase (σ, q, T) per noise multiplier, or a schedule of phases
(:class:`~approxdp.accounting.DPSGDPhase`). ε is reported at each δ asked for, δ at each ε.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    calibrate_dpsgd,
    dpsgd_schedule_delta,
    dpsgd_schedule_epsilon,
)
from approxdp.accounting.dpsgd.phases import DPSGDPhase
from approxdp.accounting.guarantees import Guarantee
from approxdp.errors import InvalidParameterError
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["dpsgd_report", "dpsgd_reports"]


def _timed(compute: Callable[..., Guarantee], *args: Any, **kwargs: Any
           ) -> tuple[Guarantee, float]:
    start = time.perf_counter()
    g = compute(*args, **kwargs)
    return g, time.perf_counter() - start


def _row(name: str, g: Guarantee, seconds: float, solved: str) -> dict[str, Any]:
    return {
        "accountant": name,
        solved: float(g.epsilon if solved == "epsilon" else g.delta),
        "kind": g.kind,
        "rule": g.rule,
        "bracket": list(g.bracket) if g.bracket else None,
        "seconds": seconds,
    }


def _results(
    runs: Sequence[tuple[float | None, list[DPSGDPhase]]], targets: Sequence[float],
    solve: str, sampling: str, accountants: Sequence[str] | None,
) -> list[dict[str, Any]]:
    """One result per (run, target): ε at δ (``solve="epsilon"``) or δ at ε, under each
    accountant, with the time each took."""
    given = "delta" if solve == "epsilon" else "epsilon"
    out = []
    for sigma, phases in runs:
        for target in targets:
            rows = []
            for name in accountants or DPSGD_ACCOUNTANTS:
                if solve == "epsilon":
                    g, s = _timed(dpsgd_schedule_epsilon, phases, delta=target,
                                  sampling=sampling, accountant=name)
                else:
                    g, s = _timed(dpsgd_schedule_delta, phases, epsilon=target,
                                  sampling=sampling, accountant=name)
                rows.append(_row(name, g, s, solve))
            out.append({"noise_multiplier": sigma, given: target, "accountants": rows})
    return out


def dpsgd_reports(
    *,
    sampling: str,
    deltas: Sequence[float] = (),
    sample_rate: float | None = None,
    steps: int | None = None,
    noise_multipliers: Sequence[float] = (),
    epsilons: Sequence[float] = (),
    phases: Sequence[tuple[float, float, int]] = (),
    at_epsilons: Sequence[float] = (),
    accountants: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The command's JSON shape (documented in ``docs/cli.md``), for any of its modes.

    A run is ``phases`` (a schedule) or ``sample_rate`` and ``steps`` with each of
    ``noise_multipliers``; ``deltas`` asks for ε, ``at_epsilons`` for δ; ``epsilons`` (with
    ``deltas``, and no noise multiplier) asks for the least noise multiplier.
    """
    schedule = [DPSGDPhase(*p) for p in phases]
    if schedule:
        runs: list[tuple[float | None, list[DPSGDPhase]]] = [(None, schedule)]
        rates = {p.sample_rate for p in schedule}
        q_top = rates.pop() if len(rates) == 1 else None
        t_top = sum(p.steps for p in schedule)
    else:
        if sample_rate is None or steps is None:
            raise InvalidParameterError("give --sample-rate and --steps, or --phase")
        q_top, t_top = sample_rate, steps
        runs = [(s, [DPSGDPhase(s, sample_rate, steps)]) for s in noise_multipliers]
    base: dict[str, Any] = {
        "command": "dpsgd",
        "schema_version": JSON_SCHEMA_VERSION,
        "sample_rate": q_top,
        "steps": t_top,
        "sampling": sampling,
        "phases": [
            {"noise_multiplier": p.noise_multiplier, "sample_rate": p.sample_rate,
             "steps": p.steps} for p in schedule
        ],
        "deltas": list(deltas),
    }
    if epsilons:
        if runs or not deltas or at_epsilons or sample_rate is None or steps is None:
            raise InvalidParameterError(
                "--epsilon asks for the noise multiplier of one run: give it with -d and "
                "--sample-rate/--steps, without --noise-multiplier, --phase or --at-epsilon"
            )
        results = []
        for eps in epsilons:
            for delta in deltas:
                start = time.perf_counter()
                sigma = calibrate_dpsgd(epsilon=eps, delta=delta, sample_rate=sample_rate,
                                        steps=steps, sampling=sampling)
                results.append({"epsilon": eps, "delta": delta, "noise_multiplier": sigma,
                                "seconds": time.perf_counter() - start})
        first = results[0]
        base.update(mode="noise-multiplier", results=results, accountant="pld",
                    epsilon=first["epsilon"], delta=first["delta"],
                    noise_multiplier=first["noise_multiplier"], seconds=first["seconds"])
        return base
    if not runs:
        raise InvalidParameterError("give --noise-multiplier, --phase or --epsilon")
    if at_epsilons and deltas:
        raise InvalidParameterError(
            "give -d (report ε at δ) or --at-epsilon (report δ at ε), not both"
        )
    if at_epsilons:
        base.update(mode="delta", epsilons=list(at_epsilons),
                    results=_results(runs, at_epsilons, "delta", sampling, accountants))
        return base
    if not deltas:
        raise InvalidParameterError("give -d δ (ε at δ) or --at-epsilon ε (δ at ε)")
    results = _results(runs, deltas, "epsilon", sampling, accountants)
    first = results[0]
    base.update(mode="epsilon", results=results, delta=first["delta"],
                noise_multiplier=first["noise_multiplier"], accountants=first["accountants"])
    return base


def dpsgd_report(
    *,
    sample_rate: float,
    steps: int,
    delta: float,
    sampling: str,
    noise_multiplier: float | None,
    epsilon: float | None,
    accountants: tuple[str, ...] = DPSGD_ACCOUNTANTS,
) -> dict[str, Any]:
    """One run, one δ: ε under each accountant (``noise_multiplier``) or the least noise
    multiplier (``epsilon``); :func:`dpsgd_reports` with single values."""
    return dpsgd_reports(
        sampling=sampling, deltas=(delta,), sample_rate=sample_rate, steps=steps,
        noise_multipliers=() if noise_multiplier is None else (noise_multiplier,),
        epsilons=() if epsilon is None else (epsilon,), accountants=accountants,
    )
