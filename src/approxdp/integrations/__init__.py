"""Drop-in accountants for the DP ecosystem, backed by approxdp's certified PLD accountant.

- :mod:`approxdp.integrations.dp_accounting`:
  :class:`~approxdp.integrations.dp_accounting.PLDAccountant`, Google dp_accounting's
  ``PrivacyAccountant`` interface over its ``DpEvent`` trees (what TF Privacy and JAX Privacy
  take), and conversion both ways between ``DpEvent`` and
  :mod:`approxdp.events`. Needs ``pip install 'approxdp[dp-accounting]'``.
- :mod:`approxdp.integrations.opacus`: an Opacus accountant
  (:class:`~approxdp.integrations.opacus.ApproxDPAccountant`), registered with Opacus's
  ``PrivacyEngine(accountant="approxdp")``, and the noise-multiplier search Opacus users call.
  Needs Opacus only to register (``pip install 'approxdp[opacus]'``).

Nothing here is imported by ``import approxdp``: each module loads its framework when imported
and says what to install when it is missing.
"""

from __future__ import annotations

__all__: list[str] = []
