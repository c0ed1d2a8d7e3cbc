"""DP-SGD accounting benchmark: a sweep of settings against the peers, and calibration.

Run: ``.venv/bin/python benchmarks/dpsgd.py`` (about half an hour: every call runs alone in a
fresh process) or ``--quick`` (a dozen settings, no prv_accountant, a few minutes).

1. **The sweep** (issue 22 §1): 34 settings over σ ∈ [0.4, 5], q ∈ [1e-5, 0.5], T ∈ [1, 1e7],
   δ ∈ [1e-12, 1e-3], the issue's hard cases among them. For each, in a fresh process (the
   first call for its setting: imports are not timed, everything else is), ε by approxdp's
   PLD accountant (the default), by Google's dp_accounting PLD (its default settings) and RDP,
   and by Microsoft's prv_accountant (eps_error 0.01, delta_error δ/1000, as in its README).
   Printed: each ε and time, the speed-up over dp_accounting's PLD, our certified bracket
   (lower, upper): (upper − lower)/lower bounds how far our ε can be above the truth; and the
   peak resident memory of our process (``ru_maxrss``, imports included).
2. **Calibration**: ``calibrate_dpsgd`` in a fresh process per setting, up to T = 10^12, with
   a check that the σ it returns is certified by ``dpsgd_epsilon`` and that 0.1 % less is not.

Peers run only when installed (both are in the development environment). A peer that fails or
runs past ``--timeout`` seconds is shown as such. Goals (issue 22): every ε call ≤ 250 ms and
≥ 2x faster than dp_accounting's PLD, median ≥ 10x; peak memory ≤ 300 MB; calibration ≤ 1 s
and within 0.1 % of the least certified σ.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: (σ, q, T, δ): the issue's cases first, then corners and typical runs.
SWEEP: list[tuple[float, float, int, float]] = [
    (0.5, 1e-4, 100_000, 1e-5),
    (0.595, 2.3e-4, 130, 1e-5),
    (0.5, 1e-5, 1000, 1e-5),
    (1.1, 256 / 60000, 14063, 1e-5),
    (0.4, 1e-5, 10_000, 1e-8),
    (0.4, 1e-3, 1000, 1e-6),
    (0.4, 0.5, 1, 1e-5),
    (0.45, 1e-4, 1_000_000, 1e-5),
    (0.6, 3e-4, 2000, 1e-5),
    (0.7, 2e-3, 5000, 1e-5),
    (0.8, 0.01, 500, 1e-8),
    (0.5, 1e-3, 1000, 1e-5),
    (1.0, 1e-3, 1000, 1e-5),
    (1.0, 0.01, 10_000, 1e-6),
    (1.0, 1e-4, 10_000_000, 1e-5),
    (1.2, 0.02, 2000, 1e-9),
    (1.5, 0.05, 1000, 1e-12),
    (2.0, 0.05, 2000, 1e-10),
    (2.0, 1e-3, 10_000_000, 1e-6),
    (1.0, 0.1, 100, 1e-3),
    (0.9, 4e-3, 100_000, 1e-12),
    (1.3, 1e-5, 1_000_000, 1e-8),
    (3.0, 0.1, 10_000, 1e-5),
    (3.0, 0.5, 10, 1e-3),
    (4.0, 0.01, 1_000_000, 1e-9),
    (5.0, 0.3, 100, 1e-4),
    (5.0, 0.5, 1000, 1e-12),
    (5.0, 0.01, 10_000_000, 1e-12),
    (5.0, 1e-5, 1000, 1e-5),
    (0.7, 0.01, 2, 1e-6),
    (1.5, 0.2, 5, 1e-9),
    (2.5, 0.05, 1, 1e-12),
    (0.8, 1e-4, 50, 1e-3),
    (1.0, 1e-3, 1_000_000, 1e-12),
]
QUICK = [0, 1, 2, 3, 6, 7, 14, 16, 20, 26, 27, 33]

#: (target ε, δ, q, T) for calibrate_dpsgd: the issue's cases (T = 10^12, q = 1e-5) and more.
CALIBRATIONS: list[tuple[float, float, float, int]] = [
    (3.0, 1e-5, 256 / 60000, 14063),
    (3.0, 1e-5, 256 / 60000, 10**12),
    (3.0, 1e-5, 1e-5, 1000),
    (1.0, 1e-6, 0.01, 100_000),
    (0.5, 1e-8, 0.1, 10_000),
    (2.0, 1e-12, 1e-3, 10**8),
    (8.0, 1e-5, 0.5, 1000),
    (1.0, 1e-5, 1e-4, 10**10),
]
METHODS = ("approxdp", "dp_accounting PLD", "dp_accounting RDP", "prv_accountant")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(method: str, sigma: float, q: float, steps: int, delta: float) -> dict[str, Any]:
    """One ε call, timed, in this (fresh) process."""
    if method == "approxdp":
        from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon

        start = time.perf_counter()
        g = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta)
        seconds = time.perf_counter() - start
        lo, hi = g.bracket if g.bracket is not None else (None, None)
        return {"eps": float(g.epsilon), "s": seconds, "lo": lo, "hi": hi, "rss": _rss_mb(),
                "kind": g.kind}
    if method.startswith("dp_accounting"):
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant
        from dp_accounting.rdp import rdp_privacy_accountant

        start = time.perf_counter()
        acc: Any = (
            pld_privacy_accountant.PLDAccountant()
            if method.endswith("PLD")
            else rdp_privacy_accountant.RdpAccountant()
        )
        acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        eps = float(acc.get_epsilon(delta))
        return {"eps": eps, "s": time.perf_counter() - start, "rss": _rss_mb()}
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    start = time.perf_counter()
    prv = PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)
    acc = PRVAccountant(prvs=[prv], max_self_compositions=[steps], eps_error=0.01,
                        delta_error=delta / 1000)
    low, est, up = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
    return {"eps": float(est), "lo": float(low), "hi": float(up),
            "s": time.perf_counter() - start, "rss": _rss_mb()}


def calibration_worker(eps: float, delta: float, q: float, steps: int) -> dict[str, Any]:
    from approxdp.accounting.dpsgd.accountants import calibrate_dpsgd, dpsgd_epsilon

    start = time.perf_counter()
    sigma = calibrate_dpsgd(epsilon=eps, delta=delta, sample_rate=q, steps=steps)
    seconds = time.perf_counter() - start
    rss = _rss_mb()
    at = float(dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps,
                             delta=delta).epsilon)
    below = float(dpsgd_epsilon(noise_multiplier=sigma / 1.001, sample_rate=q, steps=steps,
                                delta=delta).epsilon)
    return {"sigma": sigma, "s": seconds, "rss": rss, "eps_at": at, "eps_below": below}


def _run(args: list[str], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:60]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _fmt_eps(r: dict[str, Any]) -> str:
    return f"{r['eps']:.6g}" if "eps" in r else r.get("error", "-")


def _fmt_ms(r: dict[str, Any]) -> str:
    return f"{1e3 * r['s']:.0f}" if "s" in r else "-"


def sweep(indices: list[int], methods: tuple[str, ...], timeout: float) -> None:
    print("| # | σ | q | T | δ | approxdp ε | bracket width | ms | MB | dp_acc PLD ε | ms | "
          "speed-up | dp_acc RDP ε | ms | prv ε | ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: list[float] = []
    ours_ms: list[float] = []
    rss: list[float] = []
    for i in indices:
        sigma, q, steps, delta = SWEEP[i]
        rows = {
            m: _run([m, repr(sigma), repr(q), str(steps), repr(delta)], timeout)
            if m in methods else {"error": "skipped"}
            for m in METHODS
        }
        ours, pld = rows["approxdp"], rows["dp_accounting PLD"]
        width = "-"
        if ours.get("lo") is not None and ours.get("hi") is not None and ours["lo"] > 0:
            width = f"{100 * (ours['hi'] - ours['lo']) / ours['lo']:.3f}%"
        elif ours.get("lo") == 0.0 and ours.get("hi") == 0.0:
            width = "exact"
        ratio = "-"
        if "s" in ours and "s" in pld:
            ratios.append(pld["s"] / ours["s"])
            ratio = f"{ratios[-1]:.1f}x"
        elif "s" in ours and "error" in pld and "timeout" in pld["error"]:
            ratio = f">{timeout / ours['s']:.0f}x"
        if "s" in ours:
            ours_ms.append(1e3 * ours["s"])
            rss.append(ours["rss"])
        print(
            f"| {i} | {sigma:g} | {q:.3g} | {steps:.0e} | {delta:.0e} | {_fmt_eps(ours)} | "
            f"{width} | {_fmt_ms(ours)} | {ours.get('rss', 0):.0f} | {_fmt_eps(pld)} | "
            f"{_fmt_ms(pld)} | {ratio} | {_fmt_eps(rows['dp_accounting RDP'])} | "
            f"{_fmt_ms(rows['dp_accounting RDP'])} | {_fmt_eps(rows['prv_accountant'])} | "
            f"{_fmt_ms(rows['prv_accountant'])} |",
            flush=True,
        )
    if ratios:
        print(
            f"\nspeed-up over dp_accounting PLD: min {min(ratios):.1f}x, median "
            f"{statistics.median(ratios):.1f}x, max {max(ratios):.1f}x ({len(ratios)} settings)"
        )
    if ours_ms:
        print(f"approxdp time: max {max(ours_ms):.0f} ms, median {statistics.median(ours_ms):.0f}"
              f" ms; peak RSS max {max(rss):.0f} MB (imports included)")


def calibration(timeout: float) -> None:
    print("\n| ε | δ | q | T | σ | ms | MB | ε at σ | ε at σ/1.001 | within 0.1 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for eps, delta, q, steps in CALIBRATIONS:
        r = _run(["calibrate", repr(eps), repr(delta), repr(q), str(steps)], timeout)
        if "error" in r:
            print(f"| {eps:g} | {delta:.0e} | {q:.3g} | {steps:.0e} | {r['error']} |")
            continue
        ok = r["eps_at"] <= eps < r["eps_below"]
        print(
            f"| {eps:g} | {delta:.0e} | {q:.3g} | {steps:.0e} | {r['sigma']:.6g} | "
            f"{1e3 * r['s']:.0f} | {r['rss']:.0f} | {r['eps_at']:.6g} | {r['eps_below']:.6g} | "
            f"{'yes' if ok else 'NO'} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a dozen settings, no prv")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per peer call")
    parser.add_argument("--no-calibration", action="store_true", help="skip the calibrations")
    parser.add_argument("--no-sweep", action="store_true", help="skip the ε sweep")
    parser.add_argument("--methods", help="comma-separated subset of " + ", ".join(METHODS))
    parser.add_argument("--settings", help="comma-separated sweep indices (default: all)")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, *rest = args.worker
        if name == "calibrate":
            out = calibration_worker(float(rest[0]), float(rest[1]), float(rest[2]),
                                     int(rest[3]))
        else:
            out = worker(name, float(rest[0]), float(rest[1]), int(rest[2]), float(rest[3]))
        print(json.dumps(out))
        return
    indices = QUICK if args.quick else list(range(len(SWEEP)))
    methods = METHODS[:3] if args.quick else METHODS
    if args.settings:
        indices = [int(i) for i in args.settings.split(",")]
    if args.methods:
        methods = tuple(m.strip() for m in args.methods.split(","))
        unknown = set(methods) - set(METHODS)
        if unknown:
            parser.error(f"unknown methods {sorted(unknown)}; known: {', '.join(METHODS)}")
    if not args.no_sweep:
        sweep(indices, methods, args.timeout)
    if not args.no_calibration:
        calibration(args.timeout)


if __name__ == "__main__":
    main()
