"""Regenerate the high-precision reference tables for the Gaussian profiles and calibrations.

Run: ``.venv/bin/python tests/reference/make_gaussian_reference.py`` (about a minute). Writes
``gaussian_profile.csv`` and ``gaussian_calibration.csv`` beside this script, computed with
mpmath at 400 significant digits from the defining formulas (Zhao et al. 2019, Thm 2 and 6,
https://arxiv.org/abs/1911.12060), independently of
approxdp's code. Inputs are exact binary floats (written with ``repr``), so the tables test the
library at exactly the points it is given.
"""

from __future__ import annotations

import csv
from pathlib import Path

import mpmath as mp
import numpy as np

mp.mp.dps = 400
HERE = Path(__file__).resolve().parent


def profile(eps: float, sigma: float, pdp: bool = False) -> mp.mpf:
    """δ_DP = Φ(1/(2σ) - εσ) - e^ε Φ(-1/(2σ) - εσ), or the pDP sum (Δ = 1)."""
    e, s = mp.mpf(eps), mp.mpf(sigma)
    p = 1 / (2 * s) - e * s
    q = -1 / (2 * s) - e * s
    if pdp:
        return mp.ncdf(p) + mp.ncdf(q)
    return mp.ncdf(p) - mp.exp(e) * mp.ncdf(q)


def optimum(eps: float, delta: float, pdp: bool = False) -> mp.mpf:
    """The least σ with profile(ε, σ) <= δ, by bisection on log σ to 1e-40 relative."""
    d = mp.mpf(delta)
    lo, hi = mp.mpf(-40), mp.mpf(80)
    while hi - lo > mp.mpf("1e-40"):
        mid = (lo + hi) / 2
        if profile(eps, mp.exp(mid), pdp) > d:
            lo = mid
        else:
            hi = mid
    return mp.exp(hi)


def inverfc(y: mp.mpf) -> mp.mpf:
    return mp.erfinv(1 - mp.mpf(y))


def closed(p: mp.mpf, e: mp.mpf) -> mp.mpf:
    return (p + mp.sqrt(p * p + e)) / (e * mp.sqrt(2))


def zhao_m1(eps: float, delta: float) -> mp.mpf:
    e, d = mp.mpf(eps), mp.mpf(delta)
    s0 = 2 * d + mp.exp(e) * mp.erfc(mp.sqrt(e))
    if not 2 - mp.exp(e) * mp.erfc(mp.sqrt(e)) > 2 * d:
        return closed(mp.mpf(0), e)
    t = inverfc(s0)
    b = inverfc(2 * d / (1 - mp.exp(e) * mp.erfc(mp.sqrt(t * t + e)) / s0))
    return closed(b, e)


def closed_forms(eps: float, delta: float) -> dict[str, mp.mpf]:
    e, d = mp.mpf(eps), mp.mpf(delta)
    out = {
        "zhao-m1": zhao_m1(eps, delta),
        "zhao-m3": closed(inverfc(d), e),
        "zhao-m4": closed(mp.sqrt(mp.log(2 / (mp.sqrt(8 * d + 1) - 1))), e),
        "dwork-2006": mp.sqrt(2 * mp.log(2 / d)) / e,
        "dwork-roth-2014": mp.sqrt(2 * mp.log(mp.mpf(5) / 4 / d)) / e,
        "wang-lecture": mp.sqrt(32 * mp.log(2 / d) / 9) / e,
        "zcdp": (mp.sqrt(mp.log(1 / d)) + mp.sqrt(mp.log(1 / d) + e)) / (mp.sqrt(2) * e),
    }
    if delta < 0.5:
        out["zhao-m2"] = closed(mp.sqrt(mp.log(2 / (mp.sqrt(16 * d + 1) - 1))), e)
    return out


def main() -> None:
    rng = np.random.default_rng(20261122)
    # Profiles: log-uniform ε in [1e-12, 1e6] and σ in [1e-3, 1e6], plus hard corners.
    eps = [
        *list(10 ** rng.uniform(-12, 6, 150)),
        1e-12,
        1e-12,
        1000000.0,
        1000000.0,
        0.0,
        0.0,
        20.0,
    ]
    sig = [*list(10 ** rng.uniform(-3, 6, 150)), 100000.0, 3.0, 0.001, 0.0015, 1.0, 10000.0, 0.19]
    with open(HERE / "gaussian_profile.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", "sigma", "log_delta_dp", "log_delta_pdp"])
        for e, s in zip(eps, sig, strict=True):
            dp = profile(float(e), float(s))
            pdp = profile(float(e), float(s), pdp=True)
            w.writerow(
                [
                    repr(float(e)),
                    repr(float(s)),
                    mp.nstr(mp.log(dp), 30) if dp > 0 else "-inf",
                    mp.nstr(mp.log(pdp), 30),
                ]
            )
    # Calibrations: corners of the contract domain and a log-uniform sample.
    pts = [
        (1e-12, 1e-300),
        (1e-12, 0.999),
        (1e6, 1e-300),
        (1e6, 0.999),
        (1.0, 1e-5),
        (20.0, 1e-9),
        (0.01, 0.5),
        (1e-3, 0.1),
        (10.0, 0.01),
        (1e-12, 5.6e-7),
    ]
    pts += list(zip(10 ** rng.uniform(-12, 6, 40), 10 ** rng.uniform(-300, -1e-3, 40), strict=True))
    with open(HERE / "gaussian_calibration.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", "delta", "method", "sigma"])
        for e, d in pts:
            e, d = float(e), float(d)
            w.writerow([repr(e), repr(d), "optimal", mp.nstr(optimum(e, d), 30)])
            w.writerow([repr(e), repr(d), "pdp-optimal", mp.nstr(optimum(e, d, True), 30)])
            for name, val in closed_forms(e, d).items():
                w.writerow([repr(e), repr(d), name, mp.nstr(val, 30)])


if __name__ == "__main__":
    main()
