"""DP-SGD accounting benchmark: ε of a run, the noise multiplier for a target ε, long runs.

Run: ``.venv/bin/python benchmarks/dpsgd.py`` (about a minute; ``--prv`` adds Microsoft's
prv_accountant, which takes minutes; ``--quick`` skips the slow peer calls). The setting is
the one practitioners ask about: Poisson sampling q = 256/60000, noise multiplier σ = 1.1,
60 epochs (T = 14,063 steps), δ = 1e-5; calibration targets ε = 3.

Every time is the median of several runs, with the discretization caches cleared before each
(a cold call: what a user pays once), and every peer is measured in the same run, so the
ratios hold on a noisy machine. Peak memory is tracemalloc's peak (NumPy's buffers included).
Peers run only when installed: Google's dp_accounting (PLD and RDP), prv_accountant.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from approxdp.accounting.dpsgd.accountants import (
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    dpsgd_epsilon,
)
from approxdp.accounting.pld import accounting as pld_accounting

Q, SIGMA, STEPS, DELTA, TARGET = 256 / 60000, 1.1, 14063, 1e-5, 3.0


def _clear() -> None:
    pld_accounting.clear_caches()


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds over ``repeat`` cold runs, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        _clear()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_mib(fn: Callable[[], Any]) -> float:
    _clear()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def ours(repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t, g = timed(
        lambda: dpsgd_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=STEPS, delta=DELTA),
        repeat,
    )
    out["eps"], out["eps_s"], out["bracket"] = g.epsilon, t, g.bracket
    t, s = timed(
        lambda: calibrate_dpsgd(epsilon=TARGET, delta=DELTA, sample_rate=Q, steps=STEPS),
        max(1, repeat // 2),
    )
    out["sigma"], out["sigma_s"] = s, t
    t, g = timed(
        lambda: dpsgd_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=10**6, delta=DELTA),
        max(1, repeat // 2),
    )
    out["eps_1e6"], out["eps_1e6_s"] = g.epsilon, t
    t, g = timed(
        lambda: dpsgd_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=10**9, delta=DELTA),
        1,
    )
    out["eps_1e9"], out["eps_1e9_s"] = g.epsilon, t
    out["peak_mib"] = max(
        peak_mib(
            lambda: dpsgd_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=STEPS, delta=DELTA)
        ),
        peak_mib(
            lambda: dpsgd_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=10**6, delta=DELTA)
        ),
    )
    return out


def dp_accounting_peer(repeat: int, quick: bool) -> dict[str, Any] | None:
    try:
        import dp_accounting
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant
        from dp_accounting.rdp import rdp_privacy_accountant
    except ImportError:
        return None

    def event(sigma: float) -> Any:
        return dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(sigma))

    def pld_eps() -> float:
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(event(SIGMA), STEPS)
        return float(acc.get_epsilon(DELTA))

    def rdp_eps() -> float:
        acc = rdp_privacy_accountant.RdpAccountant()
        acc.compose(event(SIGMA), STEPS)
        return float(acc.get_epsilon(DELTA))

    out: dict[str, Any] = {}
    out["pld_s"], out["pld_eps"] = timed(pld_eps, repeat)
    out["rdp_s"], out["rdp_eps"] = timed(rdp_eps, repeat)
    if not quick:

        def calibrate() -> float:
            return float(
                dp_accounting.calibrate_dp_mechanism(
                    pld_privacy_accountant.PLDAccountant,
                    lambda s: dp_event.SelfComposedDpEvent(event(s), STEPS),
                    TARGET,
                    DELTA,
                    dp_accounting.ExplicitBracketInterval(0.5, 2.0),
                )
            )

        out["cal_s"], out["cal_sigma"] = timed(calibrate, 1)
    return out


def prv_peer() -> dict[str, Any] | None:
    try:
        from prv_accountant import Accountant
    except ImportError:
        return None
    start = time.perf_counter()
    acc = Accountant(
        noise_multiplier=SIGMA,
        sampling_probability=Q,
        delta=DELTA,
        max_compositions=STEPS,
        eps_error=0.01,
    )
    low, est, up = acc.compute_epsilon(num_compositions=STEPS)
    return {"s": time.perf_counter() - start, "eps": est, "low": low, "up": up}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per timing (median)")
    parser.add_argument("--quick", action="store_true", help="skip dp_accounting's calibration")
    parser.add_argument("--prv", action="store_true", help="also run prv_accountant (minutes)")
    args = parser.parse_args()

    us = ours(args.repeat)
    print(f"setting: q={Q:.6g}, sigma={SIGMA}, T={STEPS}, delta={DELTA:g}; target eps={TARGET}")
    lo, hi = us["bracket"]
    print(
        f"approxdp pld  eps={us['eps']:.6f}  bracket=[{lo:.4f}, {hi:.4f}] "
        f"(width {100 * (hi - lo) / hi:.2f}%)  {1e3 * us['eps_s']:.1f} ms"
    )
    print(f"approxdp calibrate sigma={us['sigma']:.6f}  {1e3 * us['sigma_s']:.0f} ms")
    print(f"approxdp T=1e6 eps={us['eps_1e6']:.4f}  {1e3 * us['eps_1e6_s']:.0f} ms")
    print(f"approxdp T=1e9 eps={us['eps_1e9']:.2f}  {us['eps_1e9_s']:.2f} s")
    print(f"approxdp peak memory {us['peak_mib']:.0f} MiB (T = 14063 and 10^6)")
    for row in compare_dpsgd_accountants(
        noise_multiplier=SIGMA, sample_rate=Q, steps=STEPS, delta=DELTA
    ):
        print(
            f"  accountant {row.accountant:16s} eps={float(row.guarantee.epsilon):12.6f} "
            f"{row.guarantee.kind:13s} {1e3 * row.seconds:8.1f} ms"
        )
    peer = dp_accounting_peer(args.repeat, args.quick)
    if peer is None:
        print("dp_accounting not installed: no peer ratios")
    else:
        print(
            f"dp_accounting PLD eps={peer['pld_eps']:.6f}  {1e3 * peer['pld_s']:.0f} ms  "
            f"= {peer['pld_s'] / us['eps_s']:.1f}x approxdp"
        )
        print(
            f"dp_accounting RDP eps={peer['rdp_eps']:.6f}  {1e3 * peer['rdp_s']:.0f} ms  "
            f"(+{100 * (peer['rdp_eps'] / us['eps'] - 1):.1f}% eps)"
        )
        if "cal_s" in peer:
            print(
                f"dp_accounting calibrate (PLD) sigma={peer['cal_sigma']:.6f}  "
                f"{peer['cal_s']:.2f} s  = {peer['cal_s'] / us['sigma_s']:.1f}x approxdp"
            )
    if args.prv:
        prv = prv_peer()
        if prv is None:
            print("prv_accountant not installed")
        else:
            print(
                f"prv_accountant eps={prv['eps']:.6f} [{prv['low']:.4f}, {prv['up']:.4f}]  "
                f"{prv['s']:.1f} s  = {prv['s'] / us['eps_s']:.0f}x approxdp"
            )


if __name__ == "__main__":
    main()
