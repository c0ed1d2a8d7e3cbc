"""The pages of ``approxdp serve``, one module each: its computations (testable without a
browser), its layout (``panel``) and its outputs (``server``).

- :mod:`.calibrate` — every calibration method's σ, the privacy profile, the failure region;
- :mod:`.compose` — composition rules, DP-SGD accountants, the noise for a target ε;
- :mod:`.ledger` — the ledger, read-only, with its burn-down;
- :mod:`.wizard` — the release wizard (its steps: :mod:`approxdp.web.wizard_steps`).
"""

from __future__ import annotations

__all__: list[str] = []
