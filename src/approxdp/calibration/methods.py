"""Descriptions of the Gaussian calibration methods, for the API, the CLI and the docs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from approxdp._numerics import FloatArray
from approxdp.calibration import closed_forms as cf
from approxdp.calibration import optimal

__all__ = ["CALIBRATION_METHODS", "CalibrationMethod"]


@dataclass(frozen=True, slots=True)
class CalibrationMethod:
    """One way of choosing σ for the Gaussian mechanism.

    Attributes:
        name: the ``method=`` string.
        notion: ``"dp"`` if it targets (ε, δ)-DP, ``"pdp"`` if it targets (ε, δ)-pDP (which
            implies DP, Zhao et al. Lemma 3).
        source: where the formula comes from (paper and equation).
        closed_form: True for a formula, False for a numerical root search.
        validity: the domain on which the source proves the guarantee, in words.
        delta_below: the method is defined only for δ below this value.
        always_private: True if the guarantee holds for every ε > 0 and δ it is defined for;
            False for the classical formulas, which are checked at each call.
    """

    name: str
    notion: Literal["dp", "pdp"]
    source: str
    closed_form: bool
    validity: str
    formula: str
    sigma_unit: Callable[[FloatArray, FloatArray], FloatArray]
    delta_below: float = 1.0
    always_private: bool = True


CALIBRATION_METHODS: dict[str, CalibrationMethod] = {
    m.name: m
    for m in (
        CalibrationMethod(
            "optimal",
            "dp",
            "Zhao et al. Thm 2 / Alg. 1 (Eq. 5); Balle & Wang 2018 Thm 8",
            False,
            "all ε >= 0, 0 < δ < 1 (ε = 0: Thm 3 ①)",
            "least σ with δ_DP(ε; σ, Δ) <= δ",
            optimal.sigma_optimal_dp,
        ),
        CalibrationMethod(
            "pdp-optimal",
            "pdp",
            "Zhao et al. Thm 6 (Eq. 13a)",
            False,
            "all ε > 0, 0 < δ < 1",
            "least σ with P[|L| > ε] <= δ",
            optimal.sigma_optimal_pdp,
        ),
        CalibrationMethod(
            "zhao-m1",
            "dp",
            "Zhao et al. Thm 4 (Eq. 7a-7b), Mechanism 1",
            True,
            "all ε > 0, 0 < δ < 1",
            "(b + √(b² + ε))Δ/(ε√2), b of Eq. 7a",
            cf.sigma_zhao_m1,
        ),
        CalibrationMethod(
            "zhao-m2",
            "dp",
            "Zhao et al. Thm 5 (Eq. 9), Mechanism 2",
            True,
            "all ε > 0, 0 < δ < 1/2",
            "(c + √(c² + ε))Δ/(ε√2), c = √(ln(2/(√(16δ+1) - 1)))",
            cf.sigma_zhao_m2,
            delta_below=0.5,
        ),
        CalibrationMethod(
            "zhao-m3",
            "pdp",
            "Zhao et al. Thm 8 (Eq. 14), Mechanism 3",
            True,
            "pDP for all ε > 0, 0 < δ < 1",
            "(f + √(f² + ε))Δ/(ε√2), f = inverfc(δ)",
            cf.sigma_zhao_m3,
        ),
        CalibrationMethod(
            "zhao-m4",
            "pdp",
            "Zhao et al. Thm 9 (Eq. 15), Mechanism 4",
            True,
            "pDP for all ε > 0, 0 < δ < 1",
            "(g + √(g² + ε))Δ/(ε√2), g = √(ln(2/(√(8δ+1) - 1)))",
            cf.sigma_zhao_m4,
        ),
        CalibrationMethod(
            "dwork-2006",
            "dp",
            "Dwork et al. 2006; Zhao et al. Eq. 1; Wu's notes, Eq. 17",
            True,
            "proven for ε <= 1; not DP above G#(δ) (≈ 9.39 at δ = 1e-5)",
            "√(2 ln(2/δ)) Δ/ε",
            cf.sigma_dwork_2006,
            always_private=False,
        ),
        CalibrationMethod(
            "dwork-roth-2014",
            "dp",
            "Dwork & Roth 2014 Thm A.1; Zhao et al. Eq. 2",
            True,
            "proven for ε < 1; not DP above G*(δ) (≈ 8.42 at δ = 1e-5)",
            "√(2 ln(1.25/δ)) Δ/ε",
            cf.sigma_dwork_roth_2014,
            always_private=False,
        ),
        CalibrationMethod(
            "wang-lecture",
            "dp",
            "D. Wang's notes, Thm 5.7",
            True,
            "proven for ε <= 1",
            "√(32 ln(2/δ)/9) Δ/ε",
            cf.sigma_wang_lecture,
            always_private=False,
        ),
        CalibrationMethod(
            "zcdp",
            "dp",
            "zCDP/RDP conversion; Zhao et al. §VII",
            True,
            "all ε > 0, 0 < δ < 1",
            "(√ln(1/δ) + √(ln(1/δ) + ε)) Δ/(√2 ε)",
            cf.sigma_zcdp,
        ),
    )
}
