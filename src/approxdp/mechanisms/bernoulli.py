"""Exact Bernoulli(exp(-γ)) trials for rational γ, vectorized over NumPy integer arrays.

Canonne, Kamath, Steinke 2020 ("CKS20"), Algorithm 1 (von Neumann 1951; Forsythe 1972): for
γ = r/D ∈ [0, 1], draw A_K ~ Bernoulli(γ/K) for K = 1, 2, ... until the first A_K = 0; then
P[K odd] = Σ_{n odd} (γ^(n-1)/(n-1)! − γ^n/n!) = e^(−γ). For γ > 1 write γ = q + r/D and
multiply q independent Bernoulli(e^(−1)) trials with one Bernoulli(e^(−r/D)) trial.

Exactness: Bernoulli(γ/K) = Bernoulli(r/D) · Bernoulli(1/K) for independent trials, and
Bernoulli(r/D) is the integer comparison ``U < r`` with U uniform on [0, D) (exact rejection
sampling from random words, :func:`~approxdp.mechanisms.randomness.uniform_below`). No
floating-point number is ever involved. The loop index K is the same for all elements still
running, so one NumPy pass per round serves all of them; the number of rounds is a
Poisson-like tail (P[K > k] ≤ 1/k!), so a batch of any size finishes in a few dozen passes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from approxdp.mechanisms.randomness import RandomBits, uniform_below, uniform_below_int

__all__ = [
    "bernoulli_exp_fraction",
    "bernoulli_exp_fraction_int",
    "bernoulli_exp_integer",
    "bernoulli_exp_integer_int",
    "geometric_exp1",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def bernoulli_exp_fraction(source: RandomBits, r: IntArray, d: int) -> BoolArray:
    """Independent Bernoulli(exp(−r_i/d)) trials for integers 0 ≤ r_i ≤ d ≤ 2**62 (CKS20 Alg. 1)."""
    n = r.size
    result = np.empty(n, dtype=np.bool_)
    idx = np.arange(n)
    rr = r
    k = 1
    while idx.size:
        a = uniform_below(source, d, idx.size) < rr  # Bernoulli(r/d)
        if k > 1:
            a &= uniform_below(source, k, idx.size) == 0  # Bernoulli(1/k)
        result[idx[~a]] = k % 2 == 1
        idx = idx[a]
        rr = rr[a]
        k += 1
    return result


def bernoulli_exp1(source: RandomBits, n: int) -> BoolArray:
    """``n`` independent Bernoulli(e^(−1)) trials (Alg. 1 with γ = 1)."""
    return bernoulli_exp_fraction(source, np.ones(n, dtype=np.int64), 1)


def bernoulli_exp_integer(source: RandomBits, q: IntArray) -> BoolArray:
    """Independent Bernoulli(exp(−q_i)) for integers q_i ≥ 0: q_i Bernoulli(e^(−1)) all succeed."""
    ok = np.ones(q.size, dtype=np.bool_)
    idx = np.flatnonzero(q > 0)
    remaining = q[idx]
    while idx.size:
        b = bernoulli_exp1(source, idx.size)
        ok[idx[~b]] = False
        remaining = remaining - 1
        keep = b & (remaining > 0)
        idx = idx[keep]
        remaining = remaining[keep]
    return ok


def geometric_exp1(source: RandomBits, n: int) -> IntArray:
    """``n`` draws of V with P[V = v] = (1 − e^(−1)) e^(−v): successes of Bernoulli(e^(−1))
    before the first failure (CKS20 Alg. 2, step for V)."""
    v = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        b = bernoulli_exp1(source, idx.size)
        idx = idx[b]
        v[idx] += 1
    return v


def bernoulli_exp_fraction_int(source: RandomBits, r: int, d: int) -> bool:
    """Scalar Bernoulli(exp(−r/d)) with Python integers of any size, 0 ≤ r ≤ d."""
    k = 1
    while True:
        a = uniform_below_int(source, d) < r and (k == 1 or uniform_below_int(source, k) == 0)
        if not a:
            return k % 2 == 1
        k += 1


def bernoulli_exp_integer_int(source: RandomBits, n: int, d: int) -> bool:
    """Scalar Bernoulli(exp(−n/d)) for Python integers n ≥ 0, d ≥ 1 of any size."""
    q, r = divmod(n, d)
    for _ in range(q):
        if not bernoulli_exp_fraction_int(source, 1, 1):
            return False
    return bernoulli_exp_fraction_int(source, r, d)
