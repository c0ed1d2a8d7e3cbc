"""Accounting benchmark: durable spends/s, the privacy filter's spends/s and commit time,
Gaussian composition time, budget-split gain.

Usage: ``.venv/bin/python benchmarks/accounting.py [--spends 2000] [--processes 8]
[--releases 10000] [--repeat 7] [--filter-history 1000]`` (about a minute with the defaults).
Every figure is printed with its ratio to a baseline measured in the same run on the same
machine (times are medians of ``--repeat`` runs):

- spends/s under the default ledger (the ``gdp`` privacy filter) on a mixed history of 1,000
  events (Gaussian, Laplace, (ε, δ) from a basic share, DP-SGD steps from a committed run),
  in memory and durable, against the declared-sequence rules on the same history (the
  closed-form ``optimal`` and the ``pld``, both adaptivity='fixed') — target >= 2,000/s;
- committing a DP-SGD run (q = 0.01, σ = 1, T = 1000) before the first spend, cold (caches
  cleared) and warm, against one certified PLD composition of the same run — target <= 50 ms;
- what committing a plan buys: the least noise scale c at which 10 Gaussian counts (σ = c)
  and 5 Laplace sums (b = c), sensitivity 1, fit a budget of (1, 1e-6): the PLD of the plan
  declared in advance (the baseline), the default ledger with the plan committed before its
  first spend, and the same events spent one at a time (bisection to 1e-6 relative);
- what each design admits for the issue-21 history (10 Gaussian σ = 5, 10 Laplace b = 10, one
  DP-SGD run q = 0.01, σ = 1, T = 1000, at δ = 1e-6): the PLD of the sequence declared in
  advance (the baseline), the least budget ε the default ledger admits it in with the run
  committed first (target <= 1.10x the baseline), and spent one event at a time (bisection
  to 0.1 %);

- spends/s of PrivacyAccountant on a SQLite ledger (WAL, synchronous=FULL, one
  BEGIN IMMEDIATE transaction per spend) against a bare SQLite loop doing one durable
  INSERT + COMMIT per row with the same pragmas (the floor cost of a durable write);
- composing 10^4 Gaussian releases (σ* and ε(δ)) against a bare NumPy sum of Δ²/σ²;
- the per-step σ of split_budget(composition="gaussian") against the seed's rule
  ε/(2√(2k ln(1/δ'))) with the classical σ (and with the optimal σ at the seed's ε₀).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from approxdp import GaussianEvent, PrivacyAccountant, compose_gaussian, pld_epsilon, split_budget
from approxdp.accounting.budget import filter as privacy_filter
from approxdp.accounting.composition.splitting import seed_gaussian_split
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.calibration import calibrate_gaussian
from approxdp.errors import BudgetExceededError
from approxdp.events import EpsilonDeltaEvent, LaplaceEvent, PrivacyEvent, SubsampledEvent
from filter_designs import DELTA as ISSUE_DELTA
from filter_designs import RELEASES as ISSUE_RELEASES
from filter_designs import least as least_admitted

BIG_BUDGET = (1e9, 0.5)


def bare_sqlite_rate(path: Path, n: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload TEXT, rho REAL)")
    start = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (payload, rho) VALUES (?, ?)", (f"event {i}", 1e-4))
        conn.execute("COMMIT")
    rate = n / (time.perf_counter() - start)
    conn.close()
    return rate


def accountant_rate(path: Path | None, n: int) -> float:
    acc = PrivacyAccountant(budget=BIG_BUDGET, ledger=path)
    event = GaussianEvent(sigma=100.0)
    start = time.perf_counter()
    for _ in range(n):
        acc.spend(event)
    rate = n / (time.perf_counter() - start)
    acc.close()
    return rate


def _worker(path: str, n: int, barrier: mp.synchronize.Barrier) -> None:
    acc = PrivacyAccountant(budget=BIG_BUDGET, ledger=path)
    barrier.wait()
    for _ in range(n):
        acc.spend(GaussianEvent(sigma=100.0))


def multi_process_rate(path: Path, procs: int, n: int) -> float:
    ctx = mp.get_context("fork")
    PrivacyAccountant(budget=BIG_BUDGET, ledger=path).close()
    barrier = ctx.Barrier(procs + 1)
    workers = [ctx.Process(target=_worker, args=(str(path), n, barrier)) for _ in range(procs)]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    for w in workers:
        w.join()
    return procs * n / (time.perf_counter() - start)


def mixed_history_rate(path: Path, n: int, composition: str = "pld") -> float:
    """Spends/s of a history cycling through four kinds of events (the closed-form rules get
    the three they can account); declared-sequence rules, adaptivity='fixed'."""
    acc = PrivacyAccountant(budget=(1e6, 0.5), ledger=path, composition=composition,
                            adaptivity="fixed")
    kinds: list[PrivacyEvent] = [
        GaussianEvent(sigma=50.0),
        LaplaceEvent(scale=200.0),
        EpsilonDeltaEvent(0.01, 1e-9),
    ]
    if composition == "pld":
        kinds.append(SubsampledEvent(GaussianEvent(sigma=1.1), 256 / 60000))
    start = time.perf_counter()
    for i in range(n):
        acc.spend(kinds[i % len(kinds)])
    rate = n / (time.perf_counter() - start)
    acc.close()
    return rate


STEP = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
FILTER_BUDGET = (10.0, 1e-3)
FILTER_STEP = SubsampledEvent(GaussianEvent(sigma=2.0), 0.001)
MIXED: list[PrivacyEvent] = [
    GaussianEvent(sigma=100.0),
    LaplaceEvent(scale=1000.0),
    EpsilonDeltaEvent(0.001, 1e-10),
    FILTER_STEP,
]


def filter_rate(path: Path | None, history: int, timed: int, composition: str = "gdp") -> float:
    """Spends/s of the next ``timed`` spends after a ``history`` of the mixed events: under
    the default filter (a basic share for the (ε, δ) events, the DP-SGD steps from a run
    committed first), or under a declared-sequence rule (adaptivity='fixed')."""
    if composition == "gdp":
        acc = PrivacyAccountant(budget=FILTER_BUDGET, ledger=path, basic_share=(1.0, 1e-6))
        acc.commit([(FILTER_STEP, history + timed)], label="DP-SGD run")
    else:
        acc = PrivacyAccountant(budget=FILTER_BUDGET, ledger=path, composition=composition,
                                adaptivity="fixed")
    kinds = MIXED if composition != "optimal" else MIXED[:3]
    for i in range(history):
        acc.spend(kinds[i % len(kinds)])
    start = time.perf_counter()
    for i in range(timed):
        acc.spend(kinds[i % len(kinds)])
    rate = timed / (time.perf_counter() - start)
    acc.close()
    return rate


def commit_times(repeat: int) -> tuple[float, float, float]:
    """(cold commit, warm commit, one PLD composition of the run) in seconds (medians)."""

    def commit(cold: bool) -> float:
        if cold:
            clear_caches()
        privacy_filter.declared_room.cache_clear()
        acc = PrivacyAccountant(budget=(4.2, 1e-6))
        start = time.perf_counter()
        acc.commit([(STEP, 1000)], label="DP-SGD run")
        return time.perf_counter() - start

    cold = statistics.median(commit(True) for _ in range(repeat))
    warm = statistics.median(commit(False) for _ in range(repeat))
    pld = median_time(lambda: pld_epsilon([(STEP, 1000)], 1e-6, bracket=False), repeat)
    return cold, warm, pld


def compare_commits(other_src: Path, repeat: int, rounds: int = 4) -> None:
    """Cold/warm commit medians of this tree and of ``other_src``, in alternating fresh
    processes (the same machine load for both; a ratio, never an absolute claim)."""
    import subprocess
    import sys

    here = Path(__file__).resolve().parent
    code = (f"import sys; sys.path.insert(0, {str(here)!r}); import accounting as a; "
            f"c, w, p = a.commit_times({repeat}); print(c, w, p)")
    trees = {"this tree": str(here.parent / "src"), "other": str(other_src.resolve())}
    results: dict[str, list[tuple[float, ...]]] = {k: [] for k in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            env = dict(os.environ, PYTHONPATH=src)
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            results[name].append(tuple(float(x) * 1e3 for x in out))
    print("== cold commit of the DP-SGD run (q=0.01, sigma=1, T=1000), ms, alternating rounds")
    for name, rows in results.items():
        cold = ", ".join(f"{r[0]:.1f}" for r in rows)
        warm = ", ".join(f"{r[1]:.1f}" for r in rows)
        print(f"{name:10s} cold: {cold}   warm: {warm}   one PLD: {rows[0][2]:.1f}")


BATCH_BUDGET = (1.0, 1e-6)


def batch_fits(c: float, design: str) -> bool:
    """Do 10 Gaussian counts (σ = c) and 5 Laplace sums (b = c) fit BATCH_BUDGET under
    ``design`` ("declared": their PLD; "committed" or "one at a time": the default ledger)?"""
    gauss, laplace = GaussianEvent(sigma=c), LaplaceEvent(scale=c)
    if design == "declared":
        eps = pld_epsilon([(gauss, 10), (laplace, 5)], BATCH_BUDGET[1], bracket=False).epsilon
        return float(eps) <= BATCH_BUDGET[0]
    acc = PrivacyAccountant(budget=BATCH_BUDGET)
    events: list[PrivacyEvent] = [gauss] * 10 + [laplace] * 5
    try:
        if design == "committed":
            acc.commit(events, label="batch")
        for event in events:
            acc.spend(event)
    except BudgetExceededError:
        return False
    return True


def least_batch_noise(design: str) -> float:
    """The least c at which the batch fits (bisection on log c, to 1e-6 relative)."""
    lo, hi = 1.0, 1e3
    while hi / lo > 1.0 + 1e-6:
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if batch_fits(mid, design) else (mid, hi)
    return hi


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spends", type=int, default=2000,
                        help="durable spends timed in one process (default 2000)")
    parser.add_argument("--processes", type=int, default=8,
                        help="processes spending at once (default 8, 250 spends each)")
    parser.add_argument("--releases", type=int, default=10_000,
                        help="Gaussian releases composed (default 10000)")
    parser.add_argument("--mixed", type=int, default=200,
                        help="spends of the mixed-history ledger (default 200)")
    parser.add_argument("--repeat", type=int, default=7,
                        help="runs per composition timing, median reported (default 7)")
    parser.add_argument("--filter-history", type=int, default=1000,
                        help="events already in the ledger when the filter's spends are timed "
                             "(default 1000)")
    parser.add_argument("--commit-against", type=Path, default=None, metavar="SRC",
                        help="only time cold commits, alternating this tree's code with the "
                             "approxdp package under SRC (e.g. an export of main's src/), "
                             "4 rounds of separate processes")
    args = parser.parse_args()
    if args.commit_against is not None:
        compare_commits(args.commit_against, args.repeat)
        return

    h = args.filter_history
    print(f"== the default ledger (the 'gdp' privacy filter): spends after a {h}-event mixed "
          "history")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        d = Path(tmp)
        closed = filter_rate(None, h, 200, "optimal")
        pld_rate = filter_rate(None, h, 20, "pld")
        memory = filter_rate(None, h, 2000)
        durable = filter_rate(d / "filter.sqlite", h, 500)
    print(f"baseline optimal (fixed, closed form)   : {closed:9.1f} /s")
    print(f"baseline pld (fixed)                    : {pld_rate:9.1f} /s")
    print(f"gdp filter, in memory                   : {memory:9.0f} /s  ({memory / closed:.0f}x "
          f"optimal, {memory / pld_rate:.0f}x pld; target >= 2000/s)")
    print(f"gdp filter, SQLite (synchronous=FULL)   : {durable:9.0f} /s  "
          f"({durable / closed:.0f}x optimal)")
    declared = float(pld_epsilon([*ISSUE_RELEASES, (STEP, 1000)], ISSUE_DELTA,
                                 bracket=False).epsilon)
    committed = least_admitted(1000, True, declared)
    one_by_one = least_admitted(1000, False, declared)
    renyi = least_admitted(1000, False, declared, rdp=True)
    print("\n== the issue's history (10 Gaussian s=5, 10 Laplace b=10, DP-SGD q=0.01 s=1 "
          "T=1000), least eps at delta=1e-6")
    print(f"baseline: PLD, declared in advance      : {declared:9.4f}")
    print(f"default ledger, DP-SGD run committed    : {committed:9.4f}  "
          f"({committed / declared:.3f}x baseline; target <= 1.10x)")
    print(f"default ledger, one event at a time     : {one_by_one:9.1f}  "
          f"({one_by_one / declared:.0f}x baseline)")
    print(f"ledger with rdp_share=budget, one at a time: {renyi:6.4f}  "
          f"({renyi / declared:.3f}x baseline; a Rényi filter, nothing committed)")
    declared_c = least_batch_noise("declared")
    committed_c = least_batch_noise("committed")
    single_c = least_batch_noise("one at a time")
    print("\n== a plan of 10 Gaussian counts + 5 Laplace sums (sigma = b = c), budget (1, 1e-6): "
          "least noise scale c")
    print(f"baseline: PLD, declared in advance      : {declared_c:9.4f}")
    print(f"default ledger, plan committed          : {committed_c:9.4f}  "
          f"({committed_c / declared_c:.4f}x baseline)")
    print(f"default ledger, one event at a time     : {single_c:9.4f}  "
          f"({single_c / declared_c:.4f}x baseline)")
    cold, warm, pld_time = commit_times(args.repeat)
    print("\n== committing a DP-SGD run (q=0.01, sigma=1, T=1000) before the first spend "
          "(target <= 50 ms)")
    print(f"baseline: one certified PLD of the run  : {pld_time * 1e3:7.1f} ms")
    print(f"commit, caches cleared                  : {cold * 1e3:7.1f} ms  "
          f"({cold / pld_time:.1f}x baseline)")
    print(f"commit, discretization cached           : {warm * 1e3:7.1f} ms  "
          f"({warm / pld_time:.1f}x baseline)\n")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        d = Path(tmp)
        n, procs = args.spends, args.processes
        bare = bare_sqlite_rate(d / "bare.sqlite", n)
        ours = accountant_rate(d / "one.sqlite", n)
        memory = accountant_rate(None, n)
        multi = multi_process_rate(d / "multi.sqlite", procs, 250)
        print("== durable spends (SQLite WAL, synchronous=FULL, BEGIN IMMEDIATE per spend)")
        print(f"baseline bare INSERT+COMMIT   : {bare:9.0f} /s")
        print(f"accountant, 1 process         : {ours:9.0f} /s  ({ours / bare:.2f}x baseline;"
              f" target >= 1000/s)")
        print(f"accountant, {procs} processes total : {multi:9.0f} /s  "
              f"({multi / bare:.2f}x baseline)")
        print(f"accountant, in-memory ledger  : {memory:9.0f} /s")

    k = args.releases
    rng = np.random.default_rng(0)
    sigmas = rng.uniform(50.0, 500.0, k)
    sens = rng.uniform(0.5, 2.0, k)
    t_base = median_time(lambda: float(np.sum((sens / sigmas) ** 2)) ** -0.5, args.repeat)
    t_sigma = median_time(lambda: compose_gaussian(sigmas, sens).sigma, args.repeat)
    t_full = median_time(lambda: compose_gaussian(sigmas, sens).epsilon(1e-6), args.repeat)
    print(f"\n== composing {k} Gaussian releases (target <= 10 ms)")
    print(f"baseline bare numpy sum        : {t_base * 1e3:7.3f} ms")
    print(f"compose_gaussian (sigma*)      : {t_sigma * 1e3:7.3f} ms  "
          f"({t_sigma / t_base:.1f}x baseline)")
    print(f"  + exact epsilon(delta=1e-6)  : {t_full * 1e3:7.3f} ms  "
          f"({t_full / t_base:.1f}x baseline)")

    print("\n== a mixed history in a durable ledger: Gaussian, Laplace, (eps, delta) and DP-SGD "
          "steps (PLD rule)")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        mixed = mixed_history_rate(Path(tmp) / "mixed.sqlite", args.mixed)
        closed = mixed_history_rate(Path(tmp) / "closed.sqlite", args.mixed, "optimal")
    print(f"accountant, composition='optimal' (closed form, no DP-SGD steps): {closed:7.1f} "
          "spends/s")
    print(f"accountant, composition='pld' (each spend re-accounts the history): {mixed:7.1f} "
          f"spends/s ({mixed / closed:.2f}x the closed form)")

    print("\n== per-step Gaussian sigma for total (eps, delta) = (1, 1e-5) over k steps")
    print("     k   exact split   seed rule  seed/exact   seed eps0 + optimal sigma  ratio")
    for steps in (10, 100, 1000, 10_000):
        exact = split_budget(1.0, 1e-5, steps, composition="gaussian").sigma
        assert exact is not None
        e0, d0, seed = seed_gaussian_split(1.0, 1e-5, steps)
        seed_opt = float(calibrate_gaussian(e0, d0, 1.0, method="optimal"))
        print(f"{steps:6d} {exact:13.3f} {seed:11.3f} {seed / exact:10.2f}x "
              f"{seed_opt:26.3f} {seed_opt / exact:6.2f}x")


if __name__ == "__main__":
    main()
