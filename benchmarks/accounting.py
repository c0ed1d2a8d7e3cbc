"""Accounting benchmark: durable spends/s, Gaussian composition time, budget-split gain.

Usage: ``.venv/bin/python benchmarks/accounting.py [--spends 2000] [--processes 8]
[--releases 10000] [--repeat 7]`` (about 15 s with the defaults). Every figure is printed with
its ratio to a baseline measured in the same run on the same machine (times are medians of
``--repeat`` runs):

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

from approxdp import GaussianEvent, PrivacyAccountant, compose_gaussian, split_budget
from approxdp.accounting.composition.splitting import seed_gaussian_split
from approxdp.calibration import calibrate_gaussian
from approxdp.events import EpsilonDeltaEvent, LaplaceEvent, PrivacyEvent, SubsampledEvent

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
    the three they can account)."""
    acc = PrivacyAccountant(budget=(1e6, 0.5), ledger=path, composition=composition)
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
    args = parser.parse_args()
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
