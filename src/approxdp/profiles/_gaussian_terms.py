"""The Gaussian privacy profiles as functions of the paper's variable a (Eq. 5, Eq. 13a).

With u = Δ/σ, the privacy loss of the Gaussian mechanism is N(u²/2, u²) (D. Wang's notes
Lemma 5.13). Writing

    a = (ε/u - u/2)/√2,   b = (ε/u + u/2)/√2 = √(a² + ε),   h = b - a = u/√2,

the exact profiles are (Zhao et al. Thm 2 / Eq. 5 and Thm 6 / Eq. 13a; Balle & Wang 2018 Thm 8)

    2 δ_DP  = erfc(a) - e^ε erfc(b),
    2 δ_pDP = erfc(a) + erfc(b).

Each function below returns log(2δ) or log(2(1-δ)), with the branch for a >= 0 written through
erfcx so that nothing underflows, and the near-cancelling difference handled by
:func:`approxdp._numerics.erfcx_diff`. Each also has its first (and, for the DP profile, second)
derivative with respect to a (b and h depend on a through b² = a² + ε), used by the
calibrations. Callers guarantee 0 <= ε < inf, b > 0 and h > 0.

The branch formulas are written once, against an :class:`~approxdp._numerics.Ops` namespace, and
run on arrays (the public dispatchers, which split by the sign of a) and on Python floats (the
``*_scalar`` dispatchers of the scalar fast path).

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Eq. 5 and 13a, and https://arxiv.org/abs/1805.06530
(Balle & Wang 2018), Thm 8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from approxdp._numerics import ARRAY_OPS, SCALAR_OPS, TWO_OVER_SQRT_PI, FloatArray, Ops

__all__ = [
    "b_h_from_a",
    "dp_log2comp",
    "dp_log2comp_scalar",
    "dp_log2delta",
    "dp_log2delta_log_sigma_derivatives",
    "dp_log2delta_pos",
    "dp_log2delta_scalar",
    "pdp_log2comp",
    "pdp_log2comp_scalar",
    "pdp_log2delta",
    "pdp_log2delta_log_sigma_derivatives",
    "pdp_log2delta_scalar",
]


def b_h_from_a(a: FloatArray, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
    """b = √(a² + ε) and h = b - a, with h computed as ε/(a + b) for a >= 0 (no cancellation)."""
    b = np.sqrt(a * a + eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(a >= 0, eps / (a + b), b - a)
    return b, h


# --- branch formulas (arrays or floats) ----------------------------------------------------


def dp_log2delta_pos(a: Any, h: Any, ops: Ops) -> Any:
    """a >= 0: 2δ = e^{-a²} (erfcx(a) - erfcx(b))."""
    return -a * a + ops.log(ops.erfcx_diff(a, h))


def _dp_neg(a: Any, b: Any, eps: Any, ops: Ops) -> Any:
    """a < 0: 2δ = erf(-a) + erf(b) - e^{-a²} (1 - e^{-ε}) erfcx(b) (the last term is at most a
    third of the first two, so nothing cancels)."""
    return ops.log(ops.erf(-a) + ops.erf(b) + ops.exp(-a * a) * ops.expm1(-eps) * ops.erfcx(b))


def _dp_comp_pos(a: Any, b: Any, ops: Ops) -> Any:
    """a >= 0: 2(1 - δ) = 1 + erf(a) + e^{-a²} erfcx(b)."""
    return ops.log(1.0 + ops.erf(a) + ops.exp(-a * a) * ops.erfcx(b))


def _dp_comp_neg(a: Any, b: Any, ops: Ops) -> Any:
    """a < 0: 2(1 - δ) = e^{-a²} (erfcx(-a) + erfcx(b))."""
    return -a * a + ops.log(ops.erfcx(-a) + ops.erfcx(b))


def _pdp_pos(a: Any, b: Any, eps: Any, ops: Ops) -> Any:
    """a >= 0: 2δ = e^{-a²} (erfcx(a) + e^{-ε} erfcx(b))."""
    return -a * a + ops.log(ops.erfcx(a) + ops.exp(-eps) * ops.erfcx(b))


def _pdp_neg(a: Any, b: Any, ops: Ops) -> Any:
    """a < 0: the plain sum erfc(a) + erfc(b)."""
    return ops.log(ops.erfc(a) + ops.erfc(b))


def _pdp_comp_pos(a: Any, b: Any, ops: Ops) -> Any:
    """a >= 0: 2(1 - δ) = erf(a) + erf(b)."""
    return ops.log(ops.erf(a) + ops.erf(b))


def _pdp_comp_neg(a: Any, b: Any, eps: Any, ops: Ops) -> Any:
    """a < 0: erf(a) + erf(b) = erfc(|a|) - erfc(b)
    = e^{-a²}(erfcx(|a|) - erfcx(b) - expm1(-ε) erfcx(b)), the erfcx difference without
    cancellation."""
    an = -a
    return -an * an + ops.log(ops.erfcx_diff(an, eps / (an + b)) - ops.expm1(-eps) * ops.erfcx(b))


# --- array dispatchers ---------------------------------------------------------------------


def dp_log2delta(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 δ_DP) (Zhao et al. Eq. 5), split by the sign of a (see ``_dp_pos`` and ``_dp_neg``)."""
    out = np.empty(a.shape, dtype=np.float64)
    pos = a >= 0
    neg = ~pos
    with np.errstate(divide="ignore"):
        if np.all(pos):
            return dp_log2delta_pos(a, h, ARRAY_OPS)  # type: ignore[no-any-return]
        out[pos] = dp_log2delta_pos(a[pos], h[pos], ARRAY_OPS)
        out[neg] = _dp_neg(a[neg], b[neg], eps[neg], ARRAY_OPS)
    return out


def dp_log2delta_scalar(a: float, b: float, h: float, eps: float) -> float:
    """:func:`dp_log2delta` for Python floats (raises ValueError where the array form is -inf)."""
    if a >= 0.0:
        return float(dp_log2delta_pos(a, h, SCALAR_OPS))
    return float(_dp_neg(a, b, eps, SCALAR_OPS))


def dp_log2delta_slope(
    a: FloatArray, b: FloatArray, h: FloatArray, log2delta: FloatArray
) -> FloatArray:
    """d/da log(2δ_DP) = -(2/√π) (h/b) e^{-a²} / (2δ)."""
    return -TWO_OVER_SQRT_PI * (h / b) * np.exp(-a * a - log2delta)


def dp_log2delta_log_sigma_derivatives(
    a: Any, b: Any, h: Any, eps: Any, diff: Any
) -> tuple[Any, Any]:
    """First and second derivatives of L = log(2δ_DP) in t = log σ, given diff = e^{a²} 2δ.

    In a (Zhao et al. Eq. 5): with P = 2δ, P' = -(2/√π) e^{-a²} h/b and P'' = (2/√π) e^{-a²}
    (2a h/b + ε/b³), so L_a = -(2/√π)(h/b)/diff and L_aa = -L_a (2a + ε/(h b²)) - L_a².
    Since da/dt = b and d²a/dt² = a: L_t = L_a b = -(2/√π) h/diff and
    L_tt = L_aa b² + L_a a = -L_a (2a b² + ε/h - a) - L_t². Arrays or floats; for the
    complement log 2(1 - δ) pass diff = -e^{a²} 2(1 - δ) (its derivatives are those of 2δ
    negated).
    """
    lt = -TWO_OVER_SQRT_PI * h / diff
    return lt, -(lt / b) * (2.0 * a * b * b + eps / h - a) - lt * lt


def dp_log2comp(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 (1 - δ_DP)), accurate when δ_DP is close to 1.

    2(1 - δ) = erfc(-a) + e^ε erfc(b): for a < 0 this is e^{-a²}(erfcx(-a) + erfcx(b)),
    for a >= 0 it is 1 + erf(a) + e^{-a²} erfcx(b). Both sums have positive terms.
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos = a >= 0
    neg = ~pos
    out[pos] = _dp_comp_pos(a[pos], b[pos], ARRAY_OPS)
    out[neg] = _dp_comp_neg(a[neg], b[neg], ARRAY_OPS)
    return out


def dp_log2comp_scalar(a: float, b: float, h: float, eps: float) -> float:
    """:func:`dp_log2comp` for Python floats."""
    if a >= 0.0:
        return float(_dp_comp_pos(a, b, SCALAR_OPS))
    return float(_dp_comp_neg(a, b, SCALAR_OPS))


def dp_log2comp_slope(
    a: FloatArray, b: FloatArray, h: FloatArray, log2comp: FloatArray
) -> FloatArray:
    """d/da log(2(1 - δ_DP)) = +(2/√π) (h/b) e^{-a²} / (2(1 - δ))."""
    return TWO_OVER_SQRT_PI * (h / b) * np.exp(-a * a - log2comp)


def pdp_log2delta(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 δ_pDP) (Zhao et al. Eq. 13a): 2δ = erfc(a) + erfc(b).

    a >= 0: e^{-a²}(erfcx(a) + e^{-ε} erfcx(b)); a < 0: the plain sum.
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos = a >= 0
    neg = ~pos
    out[pos] = _pdp_pos(a[pos], b[pos], eps[pos], ARRAY_OPS)
    out[neg] = _pdp_neg(a[neg], b[neg], ARRAY_OPS)
    return out


def pdp_log2delta_scalar(a: float, b: float, h: float, eps: float) -> float:
    """:func:`pdp_log2delta` for Python floats."""
    if a >= 0.0:
        return float(_pdp_pos(a, b, eps, SCALAR_OPS))
    return float(_pdp_neg(a, b, SCALAR_OPS))


def pdp_log2comp_scalar(a: float, b: float, h: float, eps: float) -> float:
    """:func:`pdp_log2comp` for Python floats."""
    if a >= 0.0:
        return float(_pdp_comp_pos(a, b, SCALAR_OPS))
    return float(_pdp_comp_neg(a, b, eps, SCALAR_OPS))


def pdp_log2delta_log_sigma_derivatives(
    a: Any, b: Any, eps: Any, diff: Any, exp: Any
) -> tuple[Any, Any]:
    """First and second derivatives of L = log(2δ_pDP) in t = log σ, given diff = e^{a²} 2δ.

    P = erfc(a) + erfc(b) with da/dt = b, db/dt = a (and d²a/dt² = a, d²b/dt² = b), and
    e^{-b²} = e^{-a²} e^{-ε}: P_t = -(2/√π) e^{-a²} (b + e^{-ε} a) and
    P_tt = -(2/√π) e^{-a²} ((a - 2ab²) + e^{-ε} (b - 2a²b)); L_t = P_t/P,
    L_tt = P_tt/P - L_t². Arrays or floats (``exp`` is np.exp or math.exp); for the
    complement pass diff = -e^{a²} 2(1 - δ).
    """
    w = exp(-eps)
    lt = -TWO_OVER_SQRT_PI * (b + w * a) / diff
    ltt = -TWO_OVER_SQRT_PI * ((a - 2.0 * a * b * b) + w * (b - 2.0 * a * a * b)) / diff - lt * lt
    return lt, ltt


def pdp_log2delta_slope(
    a: FloatArray, b: FloatArray, eps: FloatArray, log2delta: FloatArray
) -> FloatArray:
    """d/da log(2δ_pDP) = -(2/√π)(1 + e^{-ε} a/b) e^{-a²} / (2δ)."""
    return -TWO_OVER_SQRT_PI * (1.0 + np.exp(-eps) * a / b) * np.exp(-a * a - log2delta)


def pdp_log2comp(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 (1 - δ_pDP)) = log(erf(a) + erf(b)), without cancellation for a < 0."""
    out = np.empty(a.shape, dtype=np.float64)
    pos = a >= 0
    neg = ~pos
    out[pos] = _pdp_comp_pos(a[pos], b[pos], ARRAY_OPS)
    with np.errstate(divide="ignore"):
        out[neg] = _pdp_comp_neg(a[neg], b[neg], eps[neg], ARRAY_OPS)
    return out


def pdp_log2comp_slope(
    a: FloatArray, b: FloatArray, eps: FloatArray, log2comp: FloatArray
) -> FloatArray:
    """d/da log(2(1 - δ_pDP)) = +(2/√π)(1 + e^{-ε} a/b) e^{-a²} / (2(1 - δ))."""
    return TWO_OVER_SQRT_PI * (1.0 + np.exp(-eps) * a / b) * np.exp(-a * a - log2comp)
