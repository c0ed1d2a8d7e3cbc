"""A DP-SGD run under every accountant, or the noise multiplier for a target ε: ``approxdp
dpsgd``'s report, also shown by the browser's Compose / DP-SGD page."""

from __future__ import annotations

import time
from typing import Any

from approxdp.accounting.dpsgd.accountants import (
    DPSGD_ACCOUNTANTS,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
)
from approxdp.errors import InvalidParameterError
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

__all__ = ["dpsgd_report"]


def dpsgd_report(
    *,
    sample_rate: float,
    steps: int,
    delta: float,
    sampling: str,
    noise_multiplier: float | None,
    epsilon: float | None,
    accountants: tuple[str, ...] = DPSGD_ACCOUNTANTS,
) -> dict[str, Any]:
    """The command's JSON shape (documented in ``docs/cli.md``)."""
    base: dict[str, Any] = {
        "command": "dpsgd",
        "schema_version": JSON_SCHEMA_VERSION,
        "sample_rate": sample_rate,
        "steps": steps,
        "delta": delta,
        "sampling": sampling,
    }
    if epsilon is not None:
        start = time.perf_counter()
        sigma = calibrate_dpsgd(
            epsilon=epsilon, delta=delta, sample_rate=sample_rate, steps=steps,
            sampling=sampling,
        )
        base.update(
            mode="noise-multiplier",
            epsilon=epsilon,
            noise_multiplier=sigma,
            accountant="pld",
            seconds=time.perf_counter() - start,
        )
        return base
    if noise_multiplier is None:
        raise InvalidParameterError("give --noise-multiplier or --epsilon")
    rows = compare_dpsgd_accountants(
        noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps, delta=delta,
        sampling=sampling, accountants=accountants,
    )
    base.update(
        mode="epsilon",
        noise_multiplier=noise_multiplier,
        accountants=[
            {
                "accountant": r.accountant,
                "epsilon": float(r.guarantee.epsilon),
                "kind": r.guarantee.kind,
                "rule": r.guarantee.rule,
                "bracket": list(r.guarantee.bracket) if r.guarantee.bracket else None,
                "seconds": r.seconds,
            }
            for r in rows
        ],
    )
    return base
