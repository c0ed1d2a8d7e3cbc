"""Fit the start model of approxdp.calibration._optimal_halley (prints its coefficients).

Run: ``.venv/bin/python tests/reference/make_erfcx_model.py`` (a few seconds). The model is
erfcx(x) ≈ 2/(√π (x + √(x² + q(x)))) with q(x) = (n0 + n1 x + 2 m2 x²)/(1 + m1 x + m2 x²), so
that q(∞) = 2 as for the exact q (which runs from 4/π at 0 to 2 at ∞). The coefficients are
fitted by least squares on the relative error against 30-digit mpmath values on [0, 1e4],
then re-weighted a few times toward the worst points (a cheap minimax). The committed
coefficients came from this script; the fit is only a starting point for exact Halley steps,
so nothing returned by approxdp depends on its digits, only the number of steps it takes.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
from scipy import optimize

mp.mp.dps = 30
X = np.concatenate([np.linspace(0, 3, 300), np.linspace(3, 12, 200), np.geomspace(12, 1e4, 100)])
EXACT = np.array([float(mp.erfc(mp.mpf(v)) * mp.exp(mp.mpf(v) ** 2)) for v in X])


def model(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    n0, n1, m1, m2 = p
    q = (n0 + n1 * x + 2 * m2 * x * x) / (1 + m1 * x + m2 * x * x)
    return 2 / (np.sqrt(np.pi) * (x + np.sqrt(x * x + q)))


def residual(p: np.ndarray) -> np.ndarray:
    return model(p, X) / EXACT - 1


def main() -> None:
    fit = optimize.least_squares(residual, [4 / np.pi, 1.0, 1.0, 1.0])
    best = fit.x
    for _ in range(5):
        r = np.abs(residual(fit.x))
        weights = 1 + 10 * r / r.max()
        fit = optimize.least_squares(lambda p, w=weights: residual(p) * w, fit.x)
        if np.abs(residual(fit.x)).max() < np.abs(residual(best)).max():
            best = fit.x
    n0, n1, m1, m2 = (float(v) for v in best)
    print(f"max relative error {np.abs(residual(best)).max():.2e}")
    print(f"_Q_N0 = {n0!r}\n_Q_N1 = {n1!r}\n_Q_N2 = 2.0 * {m2!r}\n_Q_M1 = {m1!r}\n_Q_M2 = {m2!r}")


if __name__ == "__main__":
    main()
