"""Training-loop accounting benchmark: steps per second, and (ε, δ) on demand for any history.

Run: ``.venv/bin/python benchmarks/training_accountant.py`` (under a minute; ``--quick`` runs
fewer repetitions). Peers, measured in the same run when installed: Opacus's RDP and PRV
accountants (``step`` and ``get_epsilon`` on the same history) and Google dp_accounting's PLD
accountant (``compose`` + ``get_epsilon``). A plain ``list.append`` per step is the floor.

Histories: the MNIST run (q = 256/60000, σ = 1.1, T = 14,063) recorded step by step; a
schedule of 10 phases (σ from 2.0 down to 0.8, two batch sizes); and 50 phases (a noise
multiplier that changes every 300 steps). Each on-demand time is a cold first call (caches
cleared), the median of the repetitions; a second ask for the same δ is a cache hit.

``--fresh N`` (issue 22 §2's goal: ε or δ on demand ≤ 50 ms for any history) times instead
the first ε and the first δ of each history in a fresh process (imports not timed; CPU time,
``time.process_time``), N processes per history; with ``--baseline SRC`` (the ``src`` folder
of another checkout, e.g. ``git archive main src | tar -x -C /tmp/base``) the same calls run
against that code in processes interleaved with ours, and the ratio baseline/ours of the
medians is printed (a ratio on a shared machine is worth more than either time).

``--loop N`` times the training-loop pattern instead: one fresh process per history replays the
run chunk by chunk (a chunk is a phase; the one-phase run is cut into 10 epochs) and asks ε (or
δ) after each of the last N chunks, as a loop that reports its privacy every epoch does (CPU
ms per ask: what a run that has already answered earlier asks pays — the median, and the mean,
which carries the occasional re-planning of a running composition; ``--baseline`` as above).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld import accounting as pld_accounting

Q, SIGMA, STEPS, DELTA = 256 / 60000, 1.1, 14063, 1e-5
HISTORIES: dict[str, list[tuple[float, float, int]]] = {
    "mnist, 1 phase": [(SIGMA, Q, STEPS)],
    "10 phases": [(2.0 - 0.12 * i, Q if i < 5 else 2 * Q, 1400) for i in range(10)],
    "50 phases": [(1.5 - 0.01 * i, Q, 300) for i in range(50)],
}


def median_seconds(fn: Callable[[], Any], repeat: int, clear: bool = True) -> float:
    times = []
    for _ in range(repeat):
        if clear:
            pld_accounting.clear_caches()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def step_rates(n: int) -> dict[str, float]:
    """Steps per second of each accountant's ``step`` on n identical steps."""
    rates: dict[str, float] = {}

    def ours() -> None:
        acct = TrainingAccountant()
        for _ in range(n):
            acct.step(noise_multiplier=SIGMA, sample_rate=Q)

    def floor() -> None:
        history: list[tuple[float, float]] = []
        for _ in range(n):
            history.append((SIGMA, Q))

    rates["approxdp TrainingAccountant.step"] = n / median_seconds(ours, 3, clear=False)
    rates["list.append (floor)"] = n / median_seconds(floor, 3, clear=False)
    try:
        from opacus.accountants import PRVAccountant, RDPAccountant
    except ImportError:
        return rates
    for cls in (RDPAccountant, PRVAccountant):
        def opacus(cls: Any = cls) -> None:
            acct = cls()
            for _ in range(n):
                acct.step(noise_multiplier=SIGMA, sample_rate=Q)
        rates[f"opacus {cls.__name__}.step"] = n / median_seconds(opacus, 3, clear=False)
    return rates


def on_demand(repeat: int) -> list[tuple[str, str, float, float]]:
    """(history, accountant, seconds, value) for each history and peer present: a cold first
    ε at δ (a new accountant, caches cleared), the same ask again (cached), δ at ε = 2."""
    rows: list[tuple[str, str, float, float]] = []
    for name, phases in HISTORIES.items():
        def cold(phases: list[tuple[float, float, int]] = phases) -> float:
            return float(TrainingAccountant(phases=phases).epsilon(DELTA).epsilon)

        def cold_delta(phases: list[tuple[float, float, int]] = phases) -> float:
            return float(TrainingAccountant(phases=phases).delta(2.0).delta)

        warm = TrainingAccountant(phases=phases)
        warm.epsilon(DELTA)
        rows.append((name, "approxdp PLD (cold)", median_seconds(cold, repeat), cold()))
        rows.append((name, "approxdp PLD (asked again)", median_seconds(
            lambda a=warm: a.epsilon(DELTA), repeat, clear=False), cold()))
        rows.append((name, "approxdp δ at ε=2 (cold)", median_seconds(cold_delta, repeat),
                     cold_delta()))
        rows.extend(_peers(name, phases, repeat))
    return rows


def _peers(name: str, phases: list[tuple[float, float, int]], repeat: int
           ) -> list[tuple[str, str, float, float]]:
    out: list[tuple[str, str, float, float]] = []
    try:
        import dp_accounting
        from dp_accounting.pld import PLDAccountant
    except ImportError:
        dp_accounting = None
    if dp_accounting is not None:
        def google() -> float:
            acct = PLDAccountant()
            for sigma, q, t in phases:
                acct.compose(dp_accounting.PoissonSampledDpEvent(
                    q, dp_accounting.GaussianDpEvent(sigma)), t)
            return float(acct.get_epsilon(DELTA))
        out.append((name, "dp_accounting PLD", median_seconds(google, max(1, repeat // 2)),
                    google()))
    try:
        from opacus.accountants import PRVAccountant, RDPAccountant
    except ImportError:
        return out
    for cls in (PRVAccountant, RDPAccountant):
        def opacus(cls: Any = cls) -> float:
            acct = cls()
            acct.history = list(phases)
            return float(acct.get_epsilon(DELTA))
        out.append((name, f"opacus {cls.__name__}", median_seconds(opacus, repeat), opacus()))
    return out


def fresh_worker(history: str, solve: str) -> dict[str, float]:
    """One first call in this (fresh) process: CPU milliseconds and the value."""
    acct = TrainingAccountant(phases=HISTORIES[history])
    start = time.process_time()
    value = (float(acct.epsilon(DELTA).epsilon) if solve == "epsilon"
             else float(acct.delta(2.0).delta))
    return {"ms": 1e3 * (time.process_time() - start), "value": value}


def _fresh(history: str, solve: str, src: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", history, solve]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def fresh(repeat: int, baseline: str | None) -> None:
    """First ε and δ of each history, each in a fresh process; baseline runs interleaved."""
    print(f"first call in a fresh process, CPU ms (median of {repeat}; min in brackets)")
    print(f"  {'history':15s} {'ask':8s} {'ours':>16s}" + (f" {'baseline':>16s}  ratio"
                                                           if baseline else ""))
    for history in HISTORIES:
        for solve in ("epsilon", "delta"):
            ours: list[float] = []
            base: list[float] = []
            values = set()
            for _ in range(repeat):
                if baseline is not None:
                    base.append(_fresh(history, solve, baseline)["ms"])
                r = _fresh(history, solve, None)
                ours.append(r["ms"])
                values.add(f"{r['value']:.6g}")
            line = (f"  {history:15s} {solve:8s} {statistics.median(ours):8.1f} "
                    f"({min(ours):5.1f})")
            if base:
                line += (f" {statistics.median(base):8.1f} ({min(base):5.1f})  "
                         f"x{statistics.median(base) / statistics.median(ours):.2f}")
            print(line + f"   {', '.join(sorted(values))}", flush=True)


def _chunks(history: str) -> list[tuple[float, float, int]]:
    """The run as the loop records it between asks: its phases, or 10 epochs of one phase."""
    phases = HISTORIES[history]
    if len(phases) > 1:
        return phases
    sigma, q, steps = phases[0]
    return [(sigma, q, steps // 10 + (1 if i < steps % 10 else 0)) for i in range(10)]


def loop_worker(history: str, solve: str, asks: str) -> dict[str, Any]:
    """Replay ``history`` chunk by chunk in this process, asking after each of the last
    ``asks`` chunks: CPU milliseconds of each ask, and the last value."""
    acct = TrainingAccountant()
    chunks = _chunks(history)
    times: list[float] = []
    value = math.nan
    for i, (sigma, q, steps) in enumerate(chunks):
        acct.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
        if i >= len(chunks) - int(asks):
            start = time.process_time()
            value = (float(acct.epsilon(DELTA).epsilon) if solve == "epsilon"
                     else float(acct.delta(2.0).delta))
            times.append(1e3 * (time.process_time() - start))
    return {"ms": times, "value": value}


def loop(asks: int, baseline: str | None) -> None:
    """Asks after each of the last ``asks`` chunks of each history (one process per history
    and code; baseline first), per-ask CPU ms."""
    print(f"asked after each of the last {asks} chunks of the run, CPU ms per ask "
          "(median / mean; max in brackets)")
    print(f"  {'history':15s} {'ask':8s} {'ours':>23s}" + (f" {'baseline':>23s}  ratio"
                                                           if baseline else ""))
    for history in HISTORIES:
        for solve in ("epsilon", "delta"):
            line = f"  {history:15s} {solve:8s}"
            runs = [(None, "ours")] + ([(baseline, "base")] if baseline else [])
            got: dict[str, list[float]] = {}
            for src, who in runs[::-1]:  # (the baseline first: it warms nothing for ours)
                env = dict(os.environ)
                if src is not None:
                    env["PYTHONPATH"] = src
                cmd = [sys.executable, str(Path(__file__).resolve()), "--loop-worker", history,
                       solve, str(asks)]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                got[who] = json.loads(done.stdout.strip().splitlines()[-1])["ms"]
            for who in ("ours", "base")[: len(runs)]:
                line += (f" {statistics.median(got[who]):7.1f} /{statistics.mean(got[who]):6.1f}"
                         f" ({max(got[who]):6.1f})")
            if baseline:
                med = statistics.median(got["base"]) / statistics.median(got["ours"])
                mean = statistics.mean(got["base"]) / statistics.mean(got["ours"])
                line += f"  x{med:.2f} / x{mean:.2f}"
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--fresh", type=int, metavar="N",
                        help="only the first ε/δ of each history, N fresh processes each")
    parser.add_argument("--baseline", metavar="SRC",
                        help="with --fresh or --loop: also time the src folder of another checkout")
    parser.add_argument("--loop", type=int, metavar="N",
                        help="asks after each of the last N chunks of each run (training loop)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--loop-worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(fresh_worker(*args.worker)))
        return
    if args.loop_worker:
        print(json.dumps(loop_worker(*args.loop_worker)))
        return
    if args.loop:
        loop(args.loop, args.baseline)
        return
    if args.fresh:
        fresh(args.fresh, args.baseline)
        return
    repeat = 3 if args.quick else 7
    rates = step_rates(200_000 if args.quick else 1_000_000)
    floor = rates["list.append (floor)"]
    print("steps per second (ratio to list.append)")
    for name, rate in rates.items():
        print(f"  {name:38s} {rate:14,.0f}   x{rate / floor:.2f}")
    print(f"\nε at δ = {DELTA:g} on demand (median of {repeat}; ratio to approxdp's cold call)")
    rows = on_demand(repeat)
    base = {h: s for h, who, s, _ in rows if who == "approxdp PLD (cold)"}
    for history, who, seconds, value in rows:
        print(f"  {history:15s} {who:28s} {1e3 * seconds:9.2f} ms  x{seconds / base[history]:7.2f}"
              f"   {value:.6g}")


if __name__ == "__main__":
    main()
