"""Noise generation speed: secure exact samplers and the fast path versus NumPy, in one run.

Usage: ``python benchmarks/noise.py [--n 10000000] [--repeats 5]``. Reports medians over
``repeats`` of: ``numpy.random.default_rng().normal`` on an n-element float64 array (the
baseline); ``GaussianMechanism.release(x, rng=Generator)`` on the same array (the fast
simulation path, public API, validation and output marking included); the secure exact
discrete Gaussian sampler (OS CSPRNG) at σ = 1, 10, 1e3 on n/10 draws; the secure default
``GaussianMechanism.release(x)`` of an n/10-element query (lattice rounding, exact noise from
the OS CSPRNG, mapping back); and a scalar secure release.

Each line gives wall-clock medians; the secure lines also give samples per second of CPU time
(``time.process_time``, user + system, which includes the kernel's CSPRNG work). On a shared
machine the CPU-time rate is the fairer figure: wall time there also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from approxdp import GaussianMechanism
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.randomness import SecureBits


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``fn`` over ``repeats`` runs."""
    return median_times(fn, repeats)[0]


def median_times(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU (user + system) seconds of ``fn`` over ``repeats`` runs."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    zeros = np.zeros(n)
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    sigma = mech.sigma

    def numpy_normal() -> object:
        return np.random.default_rng().normal(0.0, sigma, size=n)

    def fast_path() -> object:
        return mech.release(zeros, rng=np.random.default_rng())

    # Interleaved, so that a change in the machine's load hits both alike.
    pairs = [(median_times(numpy_normal, 1), median_times(fast_path, 1)) for _ in range(reps)]
    base = statistics.median(b[0] for b, _ in pairs)
    base_cpu = statistics.median(b[1] for b, _ in pairs)
    fast = statistics.median(f[0] for _, f in pairs)
    fast_cpu = statistics.median(f[1] for _, f in pairs)
    print(f"numpy default_rng().normal, n={n:.0e}: {base:.3f} s ({n / base:.3g} samples/s)")
    print(f"fast path GaussianMechanism.release(rng=Generator): {fast:.3f} s, "
          f"ratio {fast / base:.3f} x numpy (CPU time ratio {fast_cpu / base_cpu:.3f})")
    source = SecureBits()
    m = max(n // 10, 1)
    for s in (1.0, 10.0, 1e3):
        sampler = DiscreteGaussianSampler.at_least(s)
        t, c = median_times(lambda sampler=sampler: sampler.sample(source, m), reps)
        print(f"secure exact N_Z(0, {s:g}^2), n={m:.0e}: {m / t:.3g} samples/s wall, "
              f"{m / c:.3g} samples/s CPU ({c / (base_cpu * m / n):.0f} x numpy CPU time "
              "per sample)")
    query = np.zeros(m)
    mech.release(query)  # build the lattice parameters once (cached per dimension)
    t, c = median_times(lambda: mech.release(query), reps)
    noise = mech.secure_noise(m)
    print(f"secure default GaussianMechanism.release, n={m:.0e} (sigma_L="
          f"{noise.sampler.sigma:.4g} lattice units): {m / t:.3g} samples/s wall, "
          f"{m / c:.3g} samples/s CPU")
    k = 2000
    t, c = median_times(lambda: [mech.release(0.0) for _ in range(k)], reps)
    print(f"secure scalar release: {t / k * 1e6:.0f} us per call wall, {c / k * 1e6:.0f} us CPU")


if __name__ == "__main__":
    main()
