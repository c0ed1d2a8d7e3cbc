"""Every calibration method's σ at (ε, δ, Δ) and its exact verdict: ``approxdp calibrate``'s
report, also shown by the browser's Calibrate page and ``approxdp demo``.

Each method's σ is checked against the exact privacy profile (Zhao et al. Thm 2 for DP, Thm 6
for pDP): whether it is really (ε, δ)-private there, its true δ, and its excess over the
optimum.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

from approxdp.calibration import (
    CALIBRATION_METHODS,
    calibrate_gaussian,
    classical_failure_threshold,
)
from approxdp.errors import InvalidParameterError, NotPrivateWarning
from approxdp.profiles import gaussian_log_delta, gaussian_log_pdp_delta
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["NOTION_NAMES", "REFERENCE", "Notion", "calibration_report", "log_profile"]

Notion = Literal["dp", "pdp"]

#: The method whose σ is the least private one for each notion (the "optimum").
REFERENCE = {"dp": "optimal", "pdp": "pdp-optimal"}
NOTION_NAMES = {"dp": "DP", "pdp": "pDP"}
_CLASSICAL = ("dwork-2006", "dwork-roth-2014", "wang-lecture")


def log_profile(epsilon: Any, sigma: float, sensitivity: float, notion: Notion) -> Any:
    """Natural log of δ(ε) of the Gaussian with noise σ, DP or pDP (exact, log space)."""
    if notion == "dp":
        return gaussian_log_delta(epsilon, sigma, sensitivity)
    return gaussian_log_pdp_delta(epsilon, sigma, sensitivity)


def _method_row(
    name: str, epsilon: float, delta: float, sensitivity: float, notion: Notion,
    reference_sigma: float,
) -> dict[str, Any]:
    m = CALIBRATION_METHODS[name]
    row: dict[str, Any] = {
        "method": name,
        "target_notion": m.notion,
        "closed_form": m.closed_form,
        "source": m.source,
        "defined": True,
        "reason": None,
        "sigma": None,
        "ratio_to_optimal": None,
        "true_delta": None,
        "log_true_delta": None,
        "private": None,
        "fails_above_epsilon": None,
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            sigma = float(calibrate_gaussian(epsilon, delta, sensitivity, method=name,
                                             allow_non_private=True))
    except InvalidParameterError as exc:  # outside the method's domain (δ too big, ε = 0)
        row.update(defined=False, reason=str(exc))
        return row
    row["sigma"] = sigma
    if reference_sigma > 0:
        row["ratio_to_optimal"] = sigma / reference_sigma
    if sensitivity == 0 or math.isinf(sigma):
        log_true = -math.inf  # nothing to hide: exactly private
    else:
        log_true = float(log_profile(epsilon, sigma, sensitivity, notion))
    row["log_true_delta"] = log_true
    row["true_delta"] = math.exp(log_true)
    row["private"] = log_true <= math.log(delta)
    if name in _CLASSICAL:
        row["fails_above_epsilon"] = float(classical_failure_threshold(delta, name, notion))
    return row


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
    rows = [_method_row(n, epsilon, delta, sensitivity, notion, reference_sigma) for n in names]
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
