"""Exact Bernoulli(exp(-γ)) trials for rational γ, vectorized over NumPy integer arrays.

Canonne et al. 2020 (https://arxiv.org/abs/2004.00010), Algorithm 1 (von Neumann 1951; Forsythe
1972): for γ = r/D ∈ [0, 1], draw A_K ~ Bernoulli(γ/K) for K = 1, 2, ... until the first A_K = 0;
then P[K odd] = Σ_{n odd} (γ^(n-1)/(n-1)! − γ^n/n!) = e^(−γ). For γ > 1 write γ = q + r/D and
multiply q independent Bernoulli(e^(−1)) trials with one Bernoulli(e^(−r/D)) trial.

Exactness: Bernoulli(γ/K) = Bernoulli(r/D) · Bernoulli(1/K) for independent trials, and
Bernoulli(r/D) is the integer comparison ``U < r`` with U uniform on [0, D) (exact rejection
sampling from random words, decided lazily from U's top bits by
:func:`~approxdp.mechanisms.randomness.bernoulli_ratio`). No
floating-point number is ever involved. The loop index K is the same for all elements still
running, so one NumPy pass per round serves all of them; the number of rounds is a
Poisson-like tail (P[K > k] ≤ 1/k!), so a batch of any size finishes in a few dozen passes.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from approxdp.mechanisms.randomness import (
    RandomBits,
    bernoulli_ratio,
    uniform_below,
    uniform_below_int,
)

__all__ = [
    "bernoulli_exp_fraction",
    "bernoulli_exp_fraction_int",
    "bernoulli_exp_integer",
    "bernoulli_exp_integer_int",
    "geometric_exp1",
    "geometric_exp1_int",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_FACT_N = 12


def bernoulli_exp_fraction(source: RandomBits, r: IntArray, d: int) -> BoolArray:
    """Independent Bernoulli(exp(−r_i/d)) trials for integers 0 ≤ r_i ≤ d ≤ 2**62 (Canonne et al.
    2020, Alg. 1)."""
    a = bernoulli_ratio(source, r, d)  # round K = 1, on the whole array
    result = ~a
    idx = np.flatnonzero(a)
    rr = r[idx]
    k = 2
    while idx.size:
        a = bernoulli_ratio(source, rr, d)  # Bernoulli(r/d)
        a &= uniform_below(source, k, idx.size) == 0  # Bernoulli(1/k)
        result[idx[~a]] = k % 2 == 1
        idx = idx[a]
        rr = rr[a]
        k += 1
    return result


_FACT = math.factorial(_FACT_N)
# K > k iff U < 12!/k! for U uniform on [0, 12!), k ≤ 12: ascending thresholds 12!/k!.
_THRESHOLDS = np.array([_FACT // math.factorial(k) for k in range(_FACT_N, 0, -1)], np.int64)


def bernoulli_exp1(source: RandomBits, n: int) -> BoolArray:
    """``n`` independent Bernoulli(e^(−1)) trials (Alg. 1 with γ = 1), from one draw each.

    With γ = 1 the loop index K of Alg. 1 has P[K > k] = 1/k!, and the result is [K odd].
    For U uniform on [0, 12!), the events {U < 12!/k!} (k = 1..12) have exactly these
    probabilities and are nested, so K = 1 + #{k ≤ 12 : U < 12!/k!} unless U = 0
    (K > 12, probability 1/12!), where the loop of Alg. 1 continues from k = 13.
    """
    u = uniform_below(source, _FACT, n)
    k = 1 + (_FACT_N - np.searchsorted(_THRESHOLDS, u, side="right"))
    result: BoolArray = k % 2 == 1
    for i in np.flatnonzero(u == 0).tolist():  # K > 12: continue Alg. 1 with Python ints
        kk = _FACT_N + 1
        while uniform_below_int(source, kk) == 0:
            kk += 1
        result[i] = kk % 2 == 1
    return result


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
    before the first failure (Canonne et al. 2020 Alg. 2, step for V)."""
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


def geometric_exp1_int(source: RandomBits) -> int:
    """One draw of V with P[V = v] = (1 − e^(−1)) e^(−v) (scalar twin of geometric_exp1)."""
    v = 0
    while bernoulli_exp_fraction_int(source, 1, 1):
        v += 1
    return v
