"""What the Calibrate, Compose / DP-SGD and Ledger pages compute, without a browser.

Each function takes the text of the page's fields, reads it with :mod:`.forms` and calls the
same report functions as the matching command (``approxdp calibrate``, ``compose``, ``dpsgd``,
``ledger``), so the page and the command line cannot disagree. Errors are the API's typed
errors; :func:`on_field` tags the ones that belong to a field the message does not name.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from approxdp.accounting import DPSGD_ACCOUNTANTS, PrivacyAccountant, read_ledger_settings
from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.cli.calibration_commands import calibration_report
from approxdp.cli.composition_commands import composition_report, parse_release
from approxdp.cli.dpsgd_command import dpsgd_report
from approxdp.cli.release_views import budget_dict, spend_dict
from approxdp.cli.web.forms import integer, number, on_field
from approxdp.errors import ApproxDPError, InvalidParameterError
from approxdp.events import SAMPLINGS
from approxdp.profiles import gaussian_epsilon, gaussian_log_delta, gaussian_log_pdp_delta

__all__ = [
    "BURN_DOWN_MAX_SPENDS",
    "calibrate_view",
    "compose_view",
    "dpsgd_view",
    "epsilon_curve",
    "ledger_view",
    "noise_view",
    "profile_curve",
]

#: The burn-down chart replays at most this many spends (the table lists them all).
BURN_DOWN_MAX_SPENDS = 2000
_NOTIONS = ("dp", "pdp")


def _choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidParameterError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


# -- Calibrate -------------------------------------------------------------------------------
def calibrate_view(
    epsilon: object, delta: object, sensitivity: object, notion: object = "dp"
) -> dict[str, Any]:
    """``approxdp calibrate``'s report for the typed (ε, δ, Δ): every method's σ, its ratio to
    the optimum, its true δ and whether it is private."""
    eps = number("epsilon", epsilon, 0.0, math.inf, high_open=True)
    dlt = number("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    sens = number("sensitivity", sensitivity, 0.0, math.inf, high_open=True)
    kind = _choice("notion", notion, _NOTIONS)
    return calibration_report(eps, dlt, sens, "pdp" if kind == "pdp" else "dp")


def profile_curve(
    sigma: float, sensitivity: float, notion: str = "dp", epsilon: float = 0.0,
    points: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """(ε grid, δ(ε)) of Gaussian noise σ: from 0 to past both ``epsilon`` and the ε where the
    profile falls to 1e-12 (or 1 when that is not finite)."""
    top = float(gaussian_epsilon(sigma, 1e-12, sensitivity, "pdp" if notion == "pdp" else "dp"))
    if not (math.isfinite(top) and top > 0):
        top = 1.0
    top = max(top, 1.25 * epsilon)
    grid = np.linspace(0.0, top, points)
    log = (gaussian_log_pdp_delta if notion == "pdp" else gaussian_log_delta)(
        grid, sigma, sensitivity
    )
    return grid, np.exp(np.asarray(log, dtype=np.float64))


# -- Compose / DP-SGD ------------------------------------------------------------------------
def compose_view(releases: object, delta: object) -> dict[str, Any]:
    """``approxdp compose``'s report: releases written as the command's tokens (one per line,
    or separated by spaces or commas), total ε at total δ under each rule."""
    tokens = [t for t in re.split(r"[\s,;]+", str(releases or "")) if t]
    with on_field("releases"):
        if not tokens:
            raise InvalidParameterError("give at least one release, e.g. 10xgaussian:4")
        parsed = [parse_release(t) for t in tokens]
    dlt = number("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return composition_report(parsed, dlt)


def _run(sample_rate: object, steps: object, delta: object, sampling: object,
         ) -> tuple[float, int, float, str]:
    q = number("sample_rate", sample_rate, 0.0, 1.0, low_open=True)
    t = integer("steps", steps, 1, 10**12)
    d = number("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return q, t, d, _choice("sampling", sampling, SAMPLINGS)


def dpsgd_view(
    sample_rate: object, noise_multiplier: object, steps: object, delta: object,
    sampling: object = "poisson",
) -> dict[str, Any]:
    """``approxdp dpsgd``'s report: ε of T steps under every accountant, each labelled."""
    q, t, d, how = _run(sample_rate, steps, delta, sampling)
    sigma = number("noise_multiplier", noise_multiplier, 0.0, math.inf, low_open=True)
    return dpsgd_report(sample_rate=q, steps=t, delta=d, sampling=how,
                        noise_multiplier=sigma, epsilon=None)


def noise_view(
    target_epsilon: object, sample_rate: object, steps: object, delta: object,
    sampling: object = "poisson",
) -> dict[str, Any]:
    """``approxdp dpsgd --epsilon``: the least noise multiplier the PLD accountant certifies."""
    q, t, d, how = _run(sample_rate, steps, delta, sampling)
    eps = number("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                 high_open=True)
    with on_field("target_epsilon"):
        return dpsgd_report(sample_rate=q, steps=t, delta=d, sampling=how,
                            noise_multiplier=None, epsilon=eps)


def epsilon_curve(
    sample_rate: float, noise_multiplier: float, steps: int, delta: float,
    sampling: str = "poisson", points: int = 8,
) -> dict[str, Any]:
    """ε against the number of steps (log-spaced from 1 to ``steps``) under every accountant;
    NaN where an accountant has no answer."""
    grid = np.unique(np.round(np.geomspace(1, max(steps, 1), points)).astype(np.int64))
    curves: dict[str, list[float]] = {}
    for name in DPSGD_ACCOUNTANTS:
        values = []
        for t in grid:
            try:
                g = dpsgd_epsilon(noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                                  steps=int(t), delta=delta, sampling=sampling, accountant=name)
                values.append(float(g.epsilon))
            except ApproxDPError:
                values.append(math.nan)
        curves[name] = values
    return {"steps": [int(t) for t in grid], "epsilon": curves}


# -- Ledger ------------------------------------------------------------------------------------
def ledger_view(path: Path) -> dict[str, Any]:
    """``approxdp ledger``'s report (budget, rule, every spend, what remains), plus the
    burn-down: the ε and δ spent after each spend, by replaying the spends in order on an
    in-memory accountant with the same budget and rule (the file is only read)."""
    settings = read_ledger_settings(path)
    accountant = PrivacyAccountant(settings.budget, ledger=path,
                                   composition=settings.composition)
    try:
        records = accountant.history()
        status = accountant.remaining()
    finally:
        accountant.close()
    replay = PrivacyAccountant(settings.budget, composition=settings.composition)
    burn: list[dict[str, Any]] = []
    for record in records[:BURN_DOWN_MAX_SPENDS]:
        try:
            replay.spend(record.event)
        except ApproxDPError:  # the ledger admitted it; a replay refusing it ends the chart
            break
        now = replay.remaining()
        burn.append({"index": record.index, "timestamp": record.timestamp,
                     "spent_epsilon": now.spent_epsilon, "spent_delta": now.spent_delta,
                     "remaining_epsilon": now.remaining_epsilon})
    return {
        "file": str(path),
        "budget": {"epsilon": settings.budget[0], "delta": settings.budget[1]},
        "composition": settings.composition,
        "spends": [spend_dict(r) for r in records],
        "status": budget_dict(status),
        "burn_down": burn,
    }
