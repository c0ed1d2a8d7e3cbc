"""The privacy filter's Rényi-DP share: a Rényi filter at orders fixed when the ledger is
created, for subsampled Gaussians (DP-SGD steps) spent one at a time after the first spend.

**Why.** After the first noise draw the Gaussian-DP room can charge a subsampled Gaussian only
its Gaussian's μ² (its amplified curve is not a Gaussian one; :mod:`.filter`), so a DP-SGD run
spent step by step costs T·μ². Rényi DP composes subsampled Gaussians tightly, and its natural
filter is valid.

**The Rényi filter** (Feldman & Zrnic 2021, arXiv:2008.11193, Thm 3.1): if each step t's
mechanism is (α, ρ_t)-RDP, with ρ_t chosen after the earlier outputs, and the filter admits
steps only while Σρ_t ≤ B, the whole interaction is (α, B)-RDP (a refused request is the
identity, ρ = 0).

**Several orders, the budget split** (after Lécuyer 2021, arXiv:2103.01379, Sec. 3). The share
(ε_R, δ_R) fixes k orders α_j and budgets B_j with (α_j, B_j)-RDP ⇒ (ε_R, δ_R/k)-DP, i.e.
B_j = ε_R − log1p(−1/α_j) + (log(δ_R/k) + log α_j)/(α_j − 1) (Balle et al. 2020,
arXiv:1905.09982, Thm 21, in the form of Canonne et al. 2020, arXiv:2004.00010,
Prop. 12), rounded down. A request is admitted iff afterwards *some* order is still within its
budget (Σρ(α_j) ≤ B_j; a request refused changes nothing). Proof that the share is
(ε_R, δ_R)-DP as an interactive mechanism: fix a deterministic analyst (randomized ones are
mixtures). Every run ends with some order j within its budget counting what actually ran
(sums only grow, except refunds of reservations, which only lower them); let E_j be the runs
whose first such order is j (a function of the transcript). Let system j be the same one
with the extra rule "refuse a request that takes order j past B_j": by the Rényi filter it is
(α_j, B_j)-RDP, so H_{e^ε_R}(P_j ‖ Q_j) ≤ δ_R/k. On E_j both systems admit the same requests
(each ran request kept order j within B_j, and system j refuses whatever the ledger refuses),
so their transcripts and densities agree there, and
H_{e^ε_R}(P ‖ Q) = Σ_j ∫_{E_j}(p − e^ε_R q)₊ ≤ Σ_j H_{e^ε_R}(P_j ‖ Q_j) ≤ δ_R.

**With the rest of the ledger.** The share and the Gaussian-DP filter are two interactive
mechanisms run concurrently on the same data (the ledger routes each request to one of them
from public parameters only, before its noise). Concurrent composition of f-DP interactive
mechanisms is their non-interactive composition (Vadhan & Zhang 2023, arXiv:2207.08335; with
adaptively chosen parameters inside, Haney et al. 2023, arXiv:2309.05901), so the ledger is
(T(block) ⊗ G_ν ⊗ f_{ε_R, δ_R})-DP; the share enters the declared block as an
``EpsilonDeltaEvent(ε_R, δ_R)`` whose certified PLD, with the block and the room, fits the
budget (:func:`~approxdp.accounting.budget.filter_rooms.declared_room`), fixed at creation.

**What each part costs at order α** (each rounded up; both neighbouring directions):

- a Poisson-subsampled Gaussian (noise multiplier σ/Δ, rate q): Mironov et al. 2019
  (arXiv:1908.10530), :func:`~approxdp.accounting.rdp.rdp_subsampled_gaussian`;
- a Gaussian: α·Δ²/(2σ²) (Mironov 2017, arXiv:1702.07476, Prop. 7);
- a Laplace release of ε = Δ/b: (1/(α−1))·log(α/(2α−1)·e^((α−1)ε) + (α−1)/(2α−1)·e^(−αε))
  (Mironov 2017, Prop. 6);
- any other ε-DP part: randomized response's divergence, which dominates every ε-DP pair
  (Kairouz et al. 2017: every ε-DP pair is a post-processing of its pair; data processing).

Parts with δ > 0 (no Rényi bound) and subsampled parts other than Poisson-subsampled
Gaussians are never charged here.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from approxdp.accounting.composition.filter_state import FilterState, RdpShare
from approxdp.accounting.serialization import event_from_json
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.events import (
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)

__all__ = [
    "DEFAULT_SHARE_ORDERS",
    "charge_rdp",
    "new_rdp_share",
    "part_rdp",
    "rdp_charged",
    "rdp_left",
]

#: The orders of a Rényi share by default (fixed at creation; ``rdp_orders=`` sets others):
#: spread over the range where DP-SGD runs and Gaussian releases find their best order.
DEFAULT_SHARE_ORDERS: tuple[float, ...] = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0,
                                           32.0, 64.0)
_EPS = sys.float_info.epsilon
_BIG = sys.float_info.max  # stands for +inf in stored sums (JSON has no inf)


def _budgets(eps_r: float, delta_r: float, orders: Sequence[float]) -> tuple[float, ...]:
    """B_j with (α_j, B_j)-RDP ⇒ (ε_R, δ_R/k)-DP (Canonne et al. 2020, Prop. 12), rounded
    down by the evaluation error."""
    k = len(orders)
    log_d = math.log(delta_r) - math.log(k)
    out = []
    for a in orders:
        corr = math.log1p(-1.0 / a)
        tail = (log_d + math.log(a)) / (a - 1.0)
        b = eps_r - corr + tail
        b -= 8.0 * _EPS * (abs(eps_r) + abs(corr) + abs(tail)) + sys.float_info.min
        out.append(b)
    return tuple(out)


def new_rdp_share(share: Any, orders: Any, budget: tuple[float, float]) -> RdpShare:
    """The Rényi share ``rdp_share=(ε_R, δ_R)`` at ``orders`` (default
    :data:`DEFAULT_SHARE_ORDERS`), checked (typed errors naming the option)."""
    try:
        eps_raw, delta_raw = share
        eps_r, delta_r = float(eps_raw), float(delta_raw)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"rdp_share must be an (epsilon, delta) pair, got rdp_share={share!r}"
        ) from exc
    if not (0.0 < eps_r <= budget[0]) or not (0.0 < delta_r <= budget[1]):
        raise InvalidParameterError(
            f"rdp_share must be an (epsilon, delta) with 0 < epsilon <= {budget[0]:g} and "
            f"0 < delta <= {budget[1]:g} (within the budget), got rdp_share={share!r}"
        )
    if orders is None:
        alphas: tuple[float, ...] = DEFAULT_SHARE_ORDERS
    else:
        try:
            alphas = tuple(sorted({float(a) for a in orders}))
        except (TypeError, ValueError) as exc:
            raise ParameterTypeError(
                f"rdp_orders must be a sequence of numbers, got rdp_orders={orders!r}"
            ) from exc
        if not alphas or any(not (1.0 < a <= 1024.0) for a in alphas):
            raise InvalidParameterError(
                "rdp_orders must be one or more Rényi orders in (1, 1024], got "
                f"rdp_orders={orders!r}"
            )
    budgets = _budgets(eps_r, delta_r, alphas)
    if all(b <= 0.0 for b in budgets):
        raise InvalidParameterError(
            f"rdp_share={share!r} leaves no Rényi budget at any order of {alphas} "
            "(B_j <= 0): raise its epsilon or delta"
        )
    return RdpShare(Fraction(eps_r), Fraction(delta_r), alphas, budgets,
                    tuple(0.0 for _ in alphas))


def _up(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values * (1.0 + 16.0 * _EPS) + sys.float_info.min,
                    np.inf)


def _rr_rdp(eps: float, a: np.ndarray) -> np.ndarray:
    """D_α of randomized response ε (P = (p, 1−p), Q = (1−p, p), p = e^ε/(1+e^ε))."""
    log_p = -math.log1p(math.exp(-eps))
    log_q = -eps + log_p
    return np.logaddexp(a * log_p + (1.0 - a) * log_q, a * log_q + (1.0 - a) * log_p) / (a - 1.0)


def _laplace_rdp(eps: float, a: np.ndarray) -> np.ndarray:
    """D_α of the Laplace mechanism of ε = Δ/b (Mironov 2017, Prop. 6)."""
    return np.logaddexp(np.log(a / (2.0 * a - 1.0)) + (a - 1.0) * eps,
                        np.log((a - 1.0) / (2.0 * a - 1.0)) - a * eps) / (a - 1.0)


@lru_cache(maxsize=4096)
def part_rdp(key: str, orders: tuple[float, ...]) -> tuple[float, ...] | None:
    """ρ(α_j) of one atomic part (its canonical description ``key``), rounded up; None if the
    share cannot charge it (δ > 0, or a subsampled part other than a Poisson-subsampled
    Gaussian)."""
    from approxdp.accounting.rdp import rdp_subsampled_gaussian

    event = event_from_json(key)
    a = np.asarray(orders, dtype=np.float64)
    rho: np.ndarray
    if isinstance(event, GaussianEvent):
        m = event.sensitivity / event.sigma
        rho = _up(a * (m * m) / 2.0)
    elif isinstance(event, SubsampledEvent):
        inner = event.event
        if event.sampling != "poisson" or not isinstance(inner, GaussianEvent):
            return None
        rho = np.asarray(rdp_subsampled_gaussian(inner.sigma / inner.sensitivity, event.q, a),
                         dtype=np.float64)
    elif isinstance(event, LaplaceEvent):
        rho = _up(np.minimum(_laplace_rdp(event.epsilon, a), event.epsilon))
    elif isinstance(event, EpsilonDeltaEvent) and event.delta == 0.0:
        rho = _up(np.minimum(_rr_rdp(event.epsilon, a), event.epsilon))
    else:
        return None
    return tuple(float(min(max(x, 0.0), _BIG)) for x in rho)


def _add_up(x: float, y: float) -> float:
    s = x + y
    return _BIG if not math.isfinite(s) or s > _BIG else math.nextafter(s, math.inf) \
        if y > 0.0 else s


def _times_up(r: float, count: int) -> float:
    if r == 0.0 or count == 1:
        return r
    x = r * count
    return _BIG if not math.isfinite(x) or x > _BIG else math.nextafter(x, math.inf)


def charge_rdp(state: FilterState, key: str, count: int = 1) -> FilterState | None:
    """The state with ``count`` copies of part ``key`` charged to the Rényi share, or None if
    there is no share, it cannot charge the part, or no order would stay within its budget."""
    share = state.rdp
    if share is None:
        return None
    rho = part_rdp(key, share.orders)
    if rho is None:
        return None
    used = tuple(_add_up(u, _times_up(r, count)) for u, r in zip(share.used, rho, strict=True))
    if not share.alive(used):
        return None
    return dataclasses.replace(state, rdp=dataclasses.replace(share, used=used))


def rdp_left(share: RdpShare) -> tuple[float, float, float]:
    """(order, used, budget) of the order with the most budget left, as a fraction."""
    best = max(range(len(share.orders)),
               key=lambda j: (share.budgets[j] - share.used[j]) / max(share.budgets[j], 1e-300))
    return share.orders[best], share.used[best], share.budgets[best]


def rdp_charged(old: FilterState, new: FilterState) -> tuple[tuple[float, float], ...]:
    """(order, ρ) charged to the Rényi share between two states (empty if none), the order
    with the most budget left after it first."""
    if old.rdp is None or new.rdp is None or old.rdp.used == new.rdp.used:
        return ()
    pairs = [(a, max(n - o, 0.0)) for a, o, n in
             zip(new.rdp.orders, old.rdp.used, new.rdp.used, strict=True)]
    best = rdp_left(new.rdp)[0]
    return tuple(sorted(pairs, key=lambda p: p[0] != best))
