"""The Gaussian-DP central-limit *approximation* of DP-SGD (never a certified bound).

Bu, Dong, Long, Su 2020, "Deep Learning with Gaussian Differential Privacy"
(https://arxiv.org/abs/1911.11607, §3, the Poisson-subsampling CLT), after Dong, Roth, Su 2019,
"Gaussian Differential Privacy" (https://arxiv.org/abs/1905.02383, the CLT of §5): T steps of the
Poisson-subsampled Gaussian with noise multiplier σ and rate q are, as T → ∞ with q√T fixed,
asymptotically μ-GDP with

    μ = q · sqrt(T · (e^{1/σ²} - 1)),

and μ-GDP is exactly (ε, δ(ε))-DP for every ε >= 0 with (Dong, Roth, Su 2019, Cor. 2.13)

    δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2),

which is the Gaussian mechanism's profile with sensitivity μ and σ = 1, so both directions are
:func:`approxdp.profiles.gaussian_delta` / :func:`approxdp.profiles.gaussian_epsilon` (log-space,
rounded toward privacy) at that point.

The *limit* is the approximation: at finite T the CLT **under-reports** ε, sometimes by a
lot. For q = 256/60000, σ = 1.1, T = 14,063, δ = 1e-5 (the DP-SGD example of issue 14) it
gives ε ≈ 2.32, where the true value is ≈ 2.38 (dp_accounting's PLD) and the RDP upper bound
2.60; at one step (q = 0.01, σ = 1, δ = 1e-5) it gives 0.037 against a true 0.199 (and an RDP
bound of 0.955). Both cases are tests. Every result is labelled
``kind="approximation"``; use :func:`approxdp.accounting.rdp_dpsgd_epsilon` (or the PLD
accountant) for a guarantee.
"""

from __future__ import annotations

import math
from typing import Any

from approxdp._validation import check_interval, check_parameter
from approxdp.accounting.composition.closed_form import check_steps
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.rdp.subsampled_gaussian import _check_noise, _check_rate
from approxdp.errors import InvalidParameterError
from approxdp.profiles.gaussian import gaussian_epsilon, gaussian_log_delta

__all__ = ["gdp_clt_delta", "gdp_clt_epsilon", "gdp_clt_mu", "gdp_to_delta", "gdp_to_epsilon"]

_RULE = (
    "GDP central-limit approximation of Poisson-subsampled DP-SGD (Bu-Dong-Long-Su 2020, "
    "arXiv:1911.11607; can under-report epsilon)"
)


def _check_mu(mu: Any) -> float:
    arr = check_interval("mu", mu, 0.0, math.inf)
    if arr.ndim != 0:
        raise InvalidParameterError(
            f"mu must be a single number, got an array of shape {arr.shape}"
        )
    return float(arr)


def gdp_clt_mu(noise_multiplier: Any, sample_rate: Any, steps: Any) -> float:
    """μ of the GDP central-limit approximation of DP-SGD with Poisson sampling.

    μ = q · sqrt(T · (e^{1/σ²} - 1)) (Bu, Dong, Long, Su 2020,
    https://arxiv.org/abs/1911.11607, §3), evaluated in log space (``inf`` when it overflows).

    Args:
        noise_multiplier: σ > 0 (noise std over the clipping norm); ``inf`` gives 0.
        sample_rate: q ∈ (0, 1].
        steps: T, an integer >= 1.

    Returns:
        μ >= 0.

    Example:
        >>> round(gdp_clt_mu(1.1, 256 / 60000, 14063), 6)
        0.573601
    """
    sigma = _check_noise(noise_multiplier)
    q = _check_rate(sample_rate)
    t = check_steps("steps", steps)
    if math.isinf(sigma):
        return 0.0
    y = 1.0 / (sigma * sigma)
    if y > 30.0:
        log_expm1 = y + math.log1p(-math.exp(-y))
    elif y > 1e-10:
        log_expm1 = math.log(math.expm1(y))
    else:  # log(e^y − 1) = log y + y/2 + O(y²), with log y = −2 log σ (1/σ² may underflow)
        log_expm1 = -2.0 * math.log(sigma) + 0.5 * y
    log_mu = math.log(q) + 0.5 * (math.log(t) + log_expm1)
    return math.exp(log_mu) if log_mu < 709.0 else math.inf


def gdp_to_epsilon(mu: Any, delta: Any) -> float:
    """The least ε for which μ-GDP implies (ε, δ)-DP (exact; Dong, Roth, Su 2019,
    https://arxiv.org/abs/1905.02383, Cor. 2.13).

    Solves δ = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) for ε through the Gaussian profile
    (:func:`approxdp.profiles.gaussian_epsilon` with sensitivity μ and σ = 1), rounded up.

    Args:
        mu: μ >= 0 (``inf`` gives ``inf``).
        delta: δ ∈ (0, 1).

    Returns:
        ε >= 0.

    Example:
        >>> round(gdp_to_epsilon(1.0, 1e-5), 6)
        4.377178
    """
    m = _check_mu(mu)
    d = float(check_parameter("delta", delta))
    if math.isinf(m):
        return math.inf
    return float(gaussian_epsilon(1.0, d, sensitivity=m))


def gdp_to_delta(mu: Any, epsilon: Any) -> float:
    """δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2): μ-GDP as (ε, δ)-DP (exact; Dong, Roth, Su
    2019, https://arxiv.org/abs/1905.02383, Cor. 2.13), by the log-space Gaussian profile.

    Args:
        mu: μ >= 0 (``inf`` gives 1).
        epsilon: ε >= 0.

    Returns:
        δ ∈ [0, 1].

    Example:
        >>> f"{gdp_to_delta(1.0, 4.377178):.4e}"
        '1.0000e-05'
    """
    m = _check_mu(mu)
    e = float(check_parameter("epsilon", epsilon, "epsilon_unbounded"))
    if math.isinf(m):
        return 0.0 if math.isinf(e) else 1.0
    return math.exp(float(gaussian_log_delta(e, 1.0, sensitivity=m)))


def gdp_clt_epsilon(noise_multiplier: Any, sample_rate: Any, steps: Any, delta: Any) -> Guarantee:
    """ε of DP-SGD (Poisson sampling) by the GDP central-limit **approximation**.

    ε solves δ = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) with μ = q·sqrt(T(e^{1/σ²} - 1)) (Bu,
    Dong, Long, Su 2020, https://arxiv.org/abs/1911.11607, §3; Dong, Roth, Su 2019,
    https://arxiv.org/abs/1905.02383, Cor. 2.13). Exact only in the limit T → ∞: at finite T it
    can be **below the true ε** (see the module docstring), so the result is labelled
    ``kind="approximation"`` and is never a default.

    Args:
        noise_multiplier: σ > 0 (noise std over the clipping norm).
        sample_rate: q ∈ (0, 1].
        steps: T, an integer >= 1.
        delta: δ ∈ (0, 1).

    Returns:
        Guarantee (approximation) ``(epsilon, delta)``.

    Example:
        >>> g = gdp_clt_epsilon(1.1, 256 / 60000, 14063, 1e-5)
        >>> round(g.epsilon, 4), g.kind
        (2.3244, 'approximation')
    """
    mu = gdp_clt_mu(noise_multiplier, sample_rate, steps)
    d = float(check_parameter("delta", delta))
    return Guarantee(gdp_to_epsilon(mu, d), d, "approximation", _RULE)


def gdp_clt_delta(noise_multiplier: Any, sample_rate: Any, steps: Any, epsilon: Any) -> Guarantee:
    """δ of DP-SGD (Poisson sampling) at ε by the GDP central-limit **approximation**
    (:func:`gdp_to_delta` at :func:`gdp_clt_mu`; can under-report δ).

    Args:
        noise_multiplier: σ > 0.
        sample_rate: q ∈ (0, 1].
        steps: T, an integer >= 1.
        epsilon: ε >= 0 (finite).

    Returns:
        Guarantee (approximation) ``(epsilon, delta)``.

    Example:
        >>> f"{gdp_clt_delta(1.1, 256 / 60000, 14063, 2.3244).delta:.3e}"
        '9.997e-06'
    """
    mu = gdp_clt_mu(noise_multiplier, sample_rate, steps)
    e = float(check_parameter("epsilon", epsilon))
    return Guarantee(e, gdp_to_delta(mu, e), "approximation", _RULE)
