"""Regenerate the high-precision reference table for the subsampled Gaussian's Rényi DP.

Run: ``.venv/bin/python tests/reference/make_rdp_reference.py`` (a few minutes). Writes
``subsampled_gaussian_rdp.csv`` beside this script, computed with mpmath at 40 significant
digits from the definition, independently of approxdp's code: for μ₀ = N(0, σ²) and the mixture
μ = (1 - q) N(0, σ²) + q N(1, σ²),

    A_α = ∫ μ₀ (μ/μ₀)^α        (D_α(μ‖μ₀) = log A_α / (α - 1), the "remove" direction),
    B_α = ∫ μ₀ (μ/μ₀)^(1-α)    (D_α(μ₀‖μ) = log B_α / (α - 1), the "add" direction),

by tanh-sinh quadrature of A_α - 1 and B_α - 1 (integrand φ_σ(z)·expm1(p·log1p(q·expm1(w))),
w = (2z - 1)/(2σ²), so that tiny divergences keep their digits), split at 0, z₀ and α. At integer
orders A_α is also summed exactly from the binomial expansion and the two must agree to 1e-25
relative (a check of the quadrature). Columns: the inputs as exact binary floats (``repr``),
then rdp_remove and rdp_add as decimal strings.
"""

from __future__ import annotations

import csv
from pathlib import Path

import mpmath as mp

mp.mp.dps = 40
HERE = Path(__file__).resolve().parent

RATES = [1e-4, 256 / 60000, 0.01, 0.1, 0.5, 0.9, 0.999]
SIGMAS = [0.5, 1.1, 3.0, 10.0]
ORDERS = [1.1, 1.5, 2.0, 2.5, 3.7, 8.1, 10.9, 32.0, 63.5, 128.0, 1024.0]


def divergence_minus_1(q: float, sigma: float, alpha: float, power_of: str) -> mp.mpf:
    """∫ μ₀ ((μ/μ₀)^p - 1) with p = α (A) or 1 - α (B), by quadrature."""
    qq, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    p = a if power_of == "A" else 1 - a

    def integrand(z: mp.mpf) -> mp.mpf:
        w = (2 * z - 1) / (2 * s * s)
        return mp.npdf(z, 0, s) * mp.expm1(p * mp.log1p(qq * mp.expm1(w)))

    z0 = s * s * mp.log(1 / qq - 1) + mp.mpf(1) / 2 if qq < 1 else mp.mpf(0)
    points = {mp.mpf(0), z0, a, a - 5 * s, a + 5 * s, 5 * s, -5 * s, 20 * s, -20 * s}
    if power_of == "B":
        points |= {p, p - 5 * s}
    pts = [-mp.inf, *sorted(points), mp.inf]
    value, error = mp.quad(integrand, pts, error=True, maxdegree=10)
    assert error < mp.mpf(10) ** -30 * max(abs(value), mp.mpf(10) ** -300), (q, sigma, alpha)
    return value


def exact_a_minus_1(q: float, sigma: float, alpha: int) -> mp.mpf:
    """A_α - 1 = Σ_k C(α, k) (1-q)^(α-k) q^k (e^{k(k-1)/(2σ²)} - 1) (integer α)."""
    qq, s = mp.mpf(q), mp.mpf(sigma)
    return mp.fsum(
        mp.binomial(alpha, k) * (1 - qq) ** (alpha - k) * qq**k
        * mp.expm1(k * (k - 1) / (2 * s * s))
        for k in range(2, alpha + 1)
    )


def main() -> None:
    rows = []
    for q in RATES:
        for sigma in SIGMAS:
            for alpha in ORDERS:
                integer = float(alpha).is_integer()
                if integer:
                    am1 = exact_a_minus_1(q, sigma, int(alpha))
                    if alpha <= 128:
                        quad = divergence_minus_1(q, sigma, alpha, "A")
                        assert abs(quad - am1) <= mp.mpf(10) ** -25 * am1, (q, sigma, alpha)
                else:
                    am1 = divergence_minus_1(q, sigma, alpha, "A")
                rdp_remove = mp.log1p(am1) / (mp.mpf(alpha) - 1)
                rdp_add = ""
                if alpha <= 128:
                    bm1 = divergence_minus_1(q, sigma, alpha, "B")
                    rdp_add = mp.nstr(mp.log1p(bm1) / (mp.mpf(alpha) - 1), 30)
                rows.append([repr(q), repr(sigma), repr(alpha), mp.nstr(rdp_remove, 30), rdp_add])
                print(*rows[-1], flush=True)
    with open(HERE / "subsampled_gaussian_rdp.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["sample_rate", "noise_multiplier", "order", "rdp_remove", "rdp_add"])
        writer.writerows(rows)


if __name__ == "__main__":
    main()
