"""Noise generation speed: secure exact samplers and the fast path versus NumPy, in one run.

Usage: ``python benchmarks/noise.py [--n 10000000] [--repeats 5]``. Reports medians over
``repeats`` of: ``numpy.random.default_rng().normal`` on an n-element float64 array (the
baseline), the fast simulation path of LaplaceMechanism/ the Gaussian float path
(``rng=Generator``), and the secure exact discrete Gaussian sampler (OS CSPRNG) at
σ = 1, 10, 1e3 plus the secure lattice release of a real-valued Gaussian query.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from approxdp.mechanisms.base import choose_path, prepare_value
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler
from approxdp.mechanisms.gaussian import secure_gaussian_noise
from approxdp.mechanisms.outputs import mark_simulated
from approxdp.mechanisms.randomness import SecureBits


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, reps = args.n, args.repeats
    zeros = np.zeros(n)
    sigma = 3.7

    def numpy_normal() -> object:
        return np.random.default_rng().normal(0.0, sigma, size=n)

    def fast_path() -> object:
        # Exactly what GaussianMechanism.release(value, rng=Generator) runs after calibration.
        _path, gen = choose_path(np.random.default_rng(), None)
        arr, scalar = prepare_value(zeros)
        assert gen is not None
        return mark_simulated(arr + gen.normal(0.0, sigma, size=arr.shape), scalar)

    base = median_time(numpy_normal, reps)
    fast = median_time(fast_path, reps)
    print(f"numpy default_rng().normal, n={n:.0e}: {base:.3f} s ({n / base:.3g} samples/s)")
    print(f"fast path (rng=Generator): {fast:.3f} s, ratio {fast / base:.3f} x numpy")
    source = SecureBits()
    m = max(n // 10, 1)
    for s in (1.0, 10.0, 1e3):
        sampler = DiscreteGaussianSampler.at_least(s)
        t = median_time(lambda sampler=sampler: sampler.sample(source, m), reps)
        print(f"secure exact N_Z(0, {s:g}^2), n={m:.0e}: {m / t:.3g} samples/s "
              f"({t / (base * m / n):.0f} x numpy time per sample)")
    noise = secure_gaussian_noise(1.0, 1e-5, 1.0, sigma, 1)
    t = median_time(lambda: noise.sampler.sample(source, m), reps)
    print(f"secure lattice Gaussian noise (sigma_L={noise.sampler.sigma:.4g} lattice units): "
          f"{m / t:.3g} samples/s")


if __name__ == "__main__":
    main()
