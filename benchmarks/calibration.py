"""Calibration speed and accuracy: approxdp's exact optimum versus Google's libraries, one run.

Usage: ``python benchmarks/calibration.py [--n 1000000] [--repeats 5] [--peers DIR]``
(``make bench`` runs it). Reports medians over ``repeats`` of:

* one scalar ``calibrate_gaussian(ε, δ)`` call (``method="optimal"``), per call, at
  (1, 1e-5) (over 3 × ``repeats``) and over 64 typical points (ε log-uniform in [0.01, 10],
  δ in [1e-12, 1e-3]), with the fastest repeat beside the median, both of the same repeats (on
  a shared machine the fastest is the closest to a quiet one);
* ``n`` such pairs in one vectorized call (calibrations per second, wall and CPU time), and
  ``n`` pairs drawn from the whole contract domain (ε in [1e-12, 1e6], δ in [1e-300, 1));
* when importable, in the same run, Google's python-dp
  (``pydp.algorithms.numerical_mechanisms.GaussianMechanism(ε, δ, Δ).std``) and dp_accounting
  (``dp_accounting.get_sigma_gaussian(ε, δ)``): time per call and its ratio to approxdp's
  scalar call, and at a few points the relative noise excess σ_peer/σ_opt - 1 of each (negative:
  less noise than the optimum, i.e. not (ε, δ)-DP), with approxdp's own excess over the exact
  optimum (mpmath bisection at 50 digits) for comparison.

The peers are not project dependencies. Install them into a throwaway directory and point the
benchmark at it (it is appended to ``sys.path``, so approxdp's own NumPy/SciPy stay in use)::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install python-dp dp-accounting
    .venv/bin/python benchmarks/calibration.py --peers /tmp/peers/lib/python3.11/site-packages

(``pip install --target DIR python-dp dp-accounting`` works too; ``--peers DIR`` or the
``APPROXDP_BENCH_PEERS`` variable names the directory). Timings on a shared machine are noisy;
the ratios are measured in the same run, so contention mostly cancels.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from approxdp import calibrate_gaussian, gaussian_delta

POINTS = [(1.0, 1e-5), (0.1, 1e-10), (0.01, 1e-6), (10.0, 1e-5), (20.0, 1e-9), (2.0, 1e-100)]


def per_call(
    fn: Callable[[], object], repeats: int, budget: float = 0.05
) -> tuple[float, float]:
    """(median, fastest) over ``repeats`` of the time per call, each repeat running
    ~``budget`` seconds; both of the same repeats, so the fastest never exceeds the median."""
    times = _per_call_times(fn, repeats, budget)
    return statistics.median(times), min(times)


def _per_call_times(fn: Callable[[], object], repeats: int, budget: float) -> list[float]:
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(budget / once))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return times


def exact_optimum(eps: float, delta: float) -> float | None:
    """The least σ with δ_DP(ε; σ) <= δ by bisection in mpmath (50 digits), if installed."""
    try:
        import mpmath as mp
    except ImportError:  # pragma: no cover
        return None
    mp.mp.dps = 50
    e, d = mp.mpf(eps), mp.mpf(delta)

    def prof(s: Any) -> Any:
        return mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s)

    guess = mp.mpf(calibrate_gaussian(eps, delta))
    lo, hi = guess * (1 - mp.mpf("1e-6")), guess * (1 + mp.mpf("1e-6"))
    for _ in range(80):
        mid = (lo + hi) / 2
        if prof(mid) > d:
            lo = mid
        else:
            hi = mid
    return float(hi)


def load_peers(path: str | None) -> dict[str, Callable[[float, float], float]]:
    """The peer calibrations that import, by name."""
    if path:
        sys.path.append(path)
    peers: dict[str, Callable[[float, float], float]] = {}
    try:
        from pydp.algorithms.numerical_mechanisms import GaussianMechanism

        peers["python-dp GaussianMechanism.std"] = lambda e, d: float(
            GaussianMechanism(e, d, 1.0).std
        )
    except ImportError as exc:
        print(f"python-dp not importable ({exc}); skipped")
    try:
        from dp_accounting import get_sigma_gaussian

        peers["dp_accounting.get_sigma_gaussian"] = lambda e, d: float(get_sigma_gaussian(e, d))
    except ImportError as exc:
        print(f"dp_accounting not importable ({exc}); skipped")
    return peers


def vectorized(eps: np.ndarray, delta: np.ndarray, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of one vectorized call."""
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        calibrate_gaussian(eps, delta)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peers", default=os.environ.get("APPROXDP_BENCH_PEERS"))
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    rng = np.random.default_rng(2026)

    one, one_best = per_call(lambda: calibrate_gaussian(1.0, 1e-5), 3 * reps)
    typical = list(zip(10 ** rng.uniform(-2, 1, 64), 10 ** rng.uniform(-12, -3, 64), strict=True))
    typ_times = [
        per_call(lambda e=float(e), d=float(d): calibrate_gaussian(e, d), reps, 0.01)
        for e, d in typical
    ]
    ours_typ = statistics.median(t[0] for t in typ_times)
    typ_best = statistics.median(t[1] for t in typ_times)
    print(
        f"scalar calibrate_gaussian(1, 1e-5): {one * 1e6:.2f} us per call (median; "
        f"fastest repeat {one_best * 1e6:.2f} us)"
    )
    print(
        f"scalar, median over 64 typical points: {ours_typ * 1e6:.2f} us per call "
        f"(with each point's fastest repeat: {typ_best * 1e6:.2f} us)"
    )

    eps = 10 ** rng.uniform(-2, 1, n)
    delta = 10 ** rng.uniform(-12, -3, n)
    wall, cpu = vectorized(eps, delta, reps)
    print(
        f"vectorized, n={n:.0e} typical pairs: {wall:.3f} s wall ({n / wall:.3g} calibrations/s), "
        f"{cpu:.3f} s CPU ({n / cpu:.3g}/s)"
    )
    eps_all = 10 ** rng.uniform(-12, 6, n)
    delta_all = 10 ** rng.uniform(-300, math.log10(0.999), n)
    wall, cpu = vectorized(eps_all, delta_all, 1)
    print(
        f"vectorized, n={n:.0e} pairs over the whole contract domain: {wall:.3f} s wall "
        f"({n / wall:.3g}/s), {cpu:.3f} s CPU ({n / cpu:.3g}/s)"
    )

    peers = load_peers(args.peers)
    for name, fn in peers.items():
        t_one, t_best = per_call(lambda fn=fn: fn(1.0, 1e-5), 3 * reps)
        t_typ = statistics.median(
            per_call(lambda e=float(e), d=float(d), fn=fn: fn(e, d), reps, 0.01)[0]
            for e, d in typical[:16]
        )
        print(
            f"{name}: {t_one * 1e6:.2f} us at (1, 1e-5) ({t_one / one:.2f} x approxdp; fastest "
            f"repeat {t_best * 1e6:.2f} us, {t_best / one_best:.2f} x), "
            f"{t_typ * 1e6:.2f} us median over 16 typical points ({t_typ / ours_typ:.2f} x)"
        )

    print("relative noise excess sigma/sigma_opt - 1 (negative = not (eps, delta)-DP):")
    header = f"{'(eps, delta)':>16} {'approxdp':>11}" + "".join(f" {k[:24]:>26}" for k in peers)
    print(header)
    for e, d in POINTS:
        exact = exact_optimum(e, d)
        ours = calibrate_gaussian(e, d)
        ref = exact if exact is not None else ours
        row = f"{f'({e:g}, {d:g})':>16} {ours / ref - 1:>11.2e}"
        for fn in peers.values():
            try:
                s = fn(e, d)
            except Exception as exc:  # report whatever a peer raises
                row += f" {type(exc).__name__:>26}"
                continue
            private = gaussian_delta(e, s) <= d
            row += f" {s / ref - 1:>18.2e} {'DP' if private else 'NOT DP':>7}"
        print(row)


if __name__ == "__main__":
    main()
