"""Every calibration method's σ at (ε, δ, Δ) and its exact verdict: ``approxdp calibrate``'s
report, also shown by the browser's Calibrate page and ``approxdp demo``.

Each method's σ and its exact verdict come from
:func:`~approxdp.calibration.method_verdicts` (the profile of Zhao et al. Thm 2 for DP, Thm 6
for pDP); this module adds its excess over the optimum and writes the JSON rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from approxdp.calibration import (
    CALIBRATION_METHODS,
    MethodVerdict,
    calibrate_gaussian,
    method_verdicts,
)
from approxdp.errors import InvalidParameterError
from approxdp.profiles import gaussian_log_delta, gaussian_log_pdp_delta
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["NOTION_NAMES", "REFERENCE", "Notion", "calibration_report", "log_profile"]

Notion = Literal["dp", "pdp"]

#: The method whose σ is the least private one for each notion (the "optimum").
REFERENCE = {"dp": "optimal", "pdp": "pdp-optimal"}
NOTION_NAMES = {"dp": "DP", "pdp": "pDP"}


def log_profile(epsilon: Any, sigma: float, sensitivity: float, notion: Notion) -> Any:
    """Natural log of δ(ε) of the Gaussian with noise σ, DP or pDP (exact, log space)."""
    if notion == "dp":
        return gaussian_log_delta(epsilon, sigma, sensitivity)
    return gaussian_log_pdp_delta(epsilon, sigma, sensitivity)


def _method_row(verdict: MethodVerdict, reference_sigma: float) -> dict[str, Any]:
    """One method's row: its description and :class:`~approxdp.calibration.MethodVerdict`."""
    m = CALIBRATION_METHODS[verdict.method]
    sigma = verdict.sigma
    return {
        "method": m.name,
        "target_notion": m.notion,
        "closed_form": m.closed_form,
        "source": m.source,
        "defined": sigma is not None,
        "reason": verdict.reason,
        "sigma": sigma,
        "ratio_to_optimal": (sigma / reference_sigma
                             if sigma is not None and reference_sigma > 0 else None),
        "true_delta": verdict.true_delta,
        "log_true_delta": verdict.log_true_delta,
        "private": verdict.private,
        "fails_above_epsilon": verdict.fails_above_epsilon,
    }


def calibration_report(
    epsilon: float, delta: float, sensitivity: float, notion: Notion = "dp",
    methods: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``calibrate`` JSON object: every method's σ and its exact verdict at (ε, δ, Δ).

    Raises:
        ApproxDPError: ε, δ or Δ out of range (checked by the optimal calibration first).
    """
    reference = REFERENCE[notion]
    if notion == "pdp" and epsilon == 0:
        raise InvalidParameterError(
            "epsilon must be > 0 for notion 'pdp' (no Gaussian is (0, δ)-pDP for δ < 1), "
            "got epsilon=0; use --notion dp"
        )
    reference_sigma = float(calibrate_gaussian(epsilon, delta, sensitivity, method=reference))
    names = list(dict.fromkeys(methods)) if methods else list(CALIBRATION_METHODS)
    verdicts = method_verdicts(epsilon, delta, sensitivity, names, notion=notion)
    rows = [_method_row(v, reference_sigma) for v in verdicts]
    return {
        "command": "calibrate",
        "schema_version": JSON_SCHEMA_VERSION,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "notion": notion,
        "reference_method": reference,
        "reference_sigma": reference_sigma,
        "methods": rows,
    }
