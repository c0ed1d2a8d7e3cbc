"""The Rényi share of the ``gdp`` filter (``rdp_share=``): adaptive analysts against it, with
the exact δ of their interactions computed independently; its tightness; and ledger files
written before it.

Exact δ of two adaptive spends (as in ``test_adaptive_attacks.py``): a Gaussian count
(σ₁ = 15), then a branch chosen on y₁, δ(ε) = E_{y₁~P₁}[H_{e^(ε − L₁(y₁))}(P₂ ‖ Q₂)], by
quadrature over y₁, in both neighbouring directions. A branch may be a Poisson-subsampled
Gaussian step (a DP-SGD step), whose hockey-stick divergence has a closed form here: its
likelihood ratio against N(0, s²) is monotone, (1 − q) + q·e^((2z − 1)/(2s²)).
"""

from __future__ import annotations

import itertools
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, optimize, special

from approxdp.accounting import PrivacyAccountant
from approxdp.accounting.budget.filter_state import FilterState
from approxdp.accounting.rdp import rdp_subsampled_gaussian, rdp_to_epsilon
from approxdp.errors import BudgetExceededError, InvalidParameterError
from approxdp.events import GaussianEvent, LaplaceEvent, SubsampledEvent

DATA = Path(__file__).parent / "data"


def ndtr_c(x: float) -> float:
    return float(special.ndtr(-x))


def hs_gauss(x: float, s: float) -> float:
    """H_{e^x}(N(0, s²) ‖ N(1, s²)) (symmetric in direction)."""
    mu = 1.0 / s
    a = special.log_ndtr(-x / mu + mu / 2)
    b = x + special.log_ndtr(-x / mu - mu / 2)
    return float(np.exp(a) * -np.expm1(b - a)) if a > b else 0.0


def hs_mix_vs_normal(x: float, s: float, q: float) -> float:
    """H_{e^x}(M ‖ N), M = (1 − q)N(0, s²) + qN(1, s²), N = N(0, s²): where M > γN,
    z > z* = s²·log((γ − 1 + q)/q) + 1/2 (everywhere if γ ≤ 1 − q)."""
    g = math.exp(x)
    if g <= 1.0 - q:
        return 1.0 - g
    z = s * s * math.log((g - 1.0 + q) / q) + 0.5
    return max(0.0, (1.0 - q - g) * ndtr_c(z / s) + q * ndtr_c((z - 1.0) / s))


def hs_normal_vs_mix(x: float, s: float, q: float) -> float:
    """H_{e^x}(N ‖ M): where N > γM, z < z** = s²·log((1/γ − 1 + q)/q) + 1/2 (nowhere if
    1/γ ≤ 1 − q)."""
    g = math.exp(x)
    if 1.0 / g <= 1.0 - q:
        return 0.0
    z = s * s * math.log((1.0 / g - 1.0 + q) / q) + 0.5
    return max(0.0, (1.0 - g * (1.0 - q)) * float(special.ndtr(z / s))
               - g * q * float(special.ndtr((z - 1.0) / s)))


def _hs_mp(s: float, q: float, x: float) -> tuple[float, float]:
    """(H_{e^x}(M ‖ N), H_{e^x}(N ‖ M)) by mpmath quadrature, split where M = γN (kinks found
    by mpmath's root finder, not by the closed forms)."""
    with mp.workdps(30):
        def m(z: mp.mpf) -> mp.mpf:
            return (1 - q) * mp.npdf(z, 0, s) + q * mp.npdf(z, 1, s)

        def n(z: mp.mpf) -> mp.mpf:
            return mp.npdf(z, 0, s)

        g = mp.e ** mp.mpf(x)
        kinks = []
        for t in (g, 1 / g):
            if m(-40) / n(-40) < t < m(40) / n(40):
                kinks.append(mp.findroot(lambda z, t=t: m(z) / n(z) - t, 0.5))
        pts = sorted([mp.mpf(-40), mp.mpf(40), *kinks])
        a = mp.quad(lambda z: max(mp.mpf(0), m(z) - g * n(z)), pts)
        b = mp.quad(lambda z: max(mp.mpf(0), n(z) - g * m(z)), pts)
        return float(a), float(b)


def test_the_subsampled_closed_forms_match_mpmath() -> None:
    for s, q, x in ((1.0, 0.2, 0.3), (0.7, 0.5, -0.2), (2.0, 0.05, 0.01)):
        a, b = _hs_mp(s, q, x)
        assert hs_mix_vs_normal(x, s, q) == pytest.approx(a, rel=1e-8, abs=1e-15)
        assert hs_normal_vs_mix(x, s, q) == pytest.approx(b, rel=1e-8, abs=1e-15)


Branch = tuple[str, float, float]  # ("gauss", s, 1.0) | ("sub", s, q) | ("laplace", b, 1.0)
SIGMA1 = 15.0


def _h(branch: Branch | None, x: float, forward: bool) -> float:
    """H of the branch's pair in the direction of the interaction (forward: D against D',
    where D' has the extra record)."""
    if branch is None:
        return float(-math.expm1(x)) if x < 0 else 0.0
    kind, s, q = branch
    if kind == "gauss":
        return hs_gauss(x, s)
    if kind == "laplace":  # H_{e^x}(Lap(0, s) ‖ Lap(1, s)), ε = 1/s (symmetric in direction)
        eps = 1.0 / s
        return 0.0 if x >= eps else float(-math.expm1(x)) if x <= -eps else \
            float(-math.expm1((x - eps) / 2))
    return hs_normal_vs_mix(x, s, q) if forward else hs_mix_vs_normal(x, s, q)


def two_step_delta(eps: float, threshold: float, low: Branch | None, high: Branch | None,
                   forward: bool) -> float:
    """Exact δ(ε) of: y₁ ~ N(c, σ₁²), c = 0 on D and 1 on D' (forward: P is D), then ``low``
    if y₁ < threshold else ``high``; quadrature over y₁."""
    c_p, c_q = (0.0, 1.0) if forward else (1.0, 0.0)

    def f(y: float) -> float:
        loss = ((y - c_q) ** 2 - (y - c_p) ** 2) / (2 * SIGMA1**2)
        dens = math.exp(-0.5 * ((y - c_p) / SIGMA1) ** 2) / (SIGMA1 * math.sqrt(2 * math.pi))
        return dens * _h(low if y < threshold else high, eps - loss, forward)

    lo, hi = -40 * SIGMA1, 40 * SIGMA1
    # the Laplace branches' kinks: where ε − L₁(y) = ±1/b, with
    # L₁(y) = (c_q² − c_p² − 2(c_q − c_p)·y)/(2σ₁²)
    ys = [(c_q**2 - c_p**2 - 2 * SIGMA1**2 * (eps - k)) / (2 * (c_q - c_p))
          for br in (low, high) if br is not None and br[0] == "laplace"
          for k in (1.0 / br[1], -1.0 / br[1])]
    cuts = sorted({lo, hi, *(min(max(y, lo), hi) for y in (threshold, *ys))})
    total = 0.0
    for a, b in itertools.pairwise(cuts):
        part, _ = integrate.quad(f, a, b, epsabs=1e-18, epsrel=1e-11, limit=400)
        total += part
    return total


def worst_delta(eps: float, low: Branch | None, high: Branch | None) -> float:
    """The analyst's best threshold, both orders of the branches, both directions."""
    best = 0.0
    for forward in (True, False):
        for a, b in ((low, high), (high, low)):
            res = optimize.minimize_scalar(
                lambda t, a=a, b=b, fw=forward: -two_step_delta(eps, t, a, b, fw),
                bounds=(-90.0, 90.0), method="bounded", options={"xatol": 1e-2})
            best = max(best, -float(res.fun))
    return best


def _edge(fits: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest σ in [lo, hi] that fits (bisection on log σ, to 1e-7 relative)."""
    while hi / lo > 1.0 + 1e-7:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


BUDGET = (1.0, 1e-6)
FIRST = GaussianEvent(sigma=SIGMA1, label="y1")
Q = 0.2


@pytest.mark.parametrize("share", [(0.5, 4e-7), BUDGET])
def test_a_subsampled_branch_from_the_renyi_share_stays_within_budget(
        share: tuple[float, float]) -> None:
    """After FIRST the analyst takes the least-noise DP-SGD step (q = 0.2) the Rényi share
    admits if y₁ is low, else the least-noise Gaussian the ledger admits (from the Gaussian-DP
    room, or — with the whole budget a Rényi share — from the share too): whatever threshold
    and direction, the interaction is within the budget."""
    acc = PrivacyAccountant(BUDGET, rdp_share=share)
    acc.spend(FIRST)
    s_sub = _edge(lambda s: acc.plan([SubsampledEvent(GaussianEvent(sigma=s), Q)]).fits,
                  0.05, 100.0)
    s_gauss = _edge(lambda s: acc.plan([GaussianEvent(sigma=s)]).fits, 0.05, 1e3)
    low: Branch = ("sub", s_sub, Q)
    high: Branch = ("gauss", s_gauss, 1.0)
    # the branches are the edges of what the ledger admits (found inside the ranges)
    assert 0.05 < s_sub < 100.0 and 0.05 < s_gauss < 1e3
    worst = worst_delta(BUDGET[0], low, high)
    print(share, s_sub, s_gauss, worst)
    assert worst <= BUDGET[1]


def test_the_renyi_share_admits_exactly_what_its_orders_certify() -> None:
    """Tightness: with the whole budget a Rényi share at one order, a DP-SGD run spent step by
    step is admitted exactly while the Rényi accountant's conversion at that order (Canonne
    et al. 2020, Prop. 12; approxdp.accounting.rdp) certifies it within the budget."""
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    budget = (2.0, 1e-5)
    acc = PrivacyAccountant(budget, rdp_share=budget, rdp_orders=[8.0])
    n = 0
    while True:
        try:
            acc.spend(step)
        except BudgetExceededError as exc:
            assert "Rényi share" in str(exc)
            break
        n += 1
    rho = float(rdp_subsampled_gaussian(1.0, 0.01, [8.0])[0])
    eps_n, _ = rdp_to_epsilon([n * rho], [8.0], budget[1])
    eps_more, _ = rdp_to_epsilon([(n + 1) * rho], [8.0], budget[1])
    assert eps_n <= budget[0] < eps_more
    # and the first step's pristine declaration did not cost the share anything extra
    assert n > 100


def test_the_mixed_history_spent_one_at_a_time_fits_with_a_renyi_share() -> None:
    """Issue 21's history, every event spent one at a time, nothing committed: refused by the
    plain default ledger at ε = 5 (its DP-SGD steps cost μ² = 1 each), admitted with the whole
    budget a Rényi share (benchmarks/accounting.py: least ε 4.74, PLD declared 3.953)."""
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    history = [GaussianEvent(sigma=5.0)] * 10 + [LaplaceEvent(scale=10.0)] * 10 + [step] * 1000
    budget = (5.0, 1e-6)
    with_share = PrivacyAccountant(budget, rdp_share=budget)
    for event in history:
        with_share.spend(event)
    assert "Rényi share" in with_share.explain()
    plain = PrivacyAccountant(budget)
    with pytest.raises(BudgetExceededError, match=r"rdp_share=\(epsilon, delta\)"):
        for event in history:
            plain.spend(event)


def test_bad_renyi_shares_are_typed_errors_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="rdp_share"):
        PrivacyAccountant(BUDGET, rdp_share=(2.0, 1e-7))  # above the budget's ε
    with pytest.raises(InvalidParameterError, match="rdp_share"):
        PrivacyAccountant(BUDGET, rdp_share=(0.5, 0.0))
    with pytest.raises(InvalidParameterError, match="rdp_share"):
        PrivacyAccountant(BUDGET, rdp_share="auto")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="rdp_orders"):
        PrivacyAccountant(BUDGET, rdp_orders=[2.0])
    with pytest.raises(InvalidParameterError, match="rdp_orders"):
        PrivacyAccountant(BUDGET, rdp_share=(0.5, 1e-7), rdp_orders=[0.5])
    with pytest.raises(InvalidParameterError, match="rdp_share"):
        PrivacyAccountant(BUDGET, composition="basic", rdp_share=(0.5, 1e-7))
    with pytest.raises(InvalidParameterError, match="rdp_share"):  # with the basic share
        PrivacyAccountant(BUDGET, basic_share=(0.0, 8e-7), rdp_share=(0.9, 5e-7))


def test_a_state_with_a_renyi_share_round_trips_and_one_without_reads_as_before() -> None:
    acc = PrivacyAccountant(BUDGET, rdp_share=(0.5, 4e-7))
    acc.spend(FIRST)
    acc.spend(SubsampledEvent(GaussianEvent(sigma=8.0), 0.05))
    state = acc._ledger.state().filter
    assert state is not None and state.rdp is not None and any(state.rdp.used)
    assert FilterState.from_json(state.to_json()) == state
    plain = PrivacyAccountant(BUDGET)
    plain.spend(FIRST)
    old = plain._ledger.state().filter
    assert old is not None
    text = old.to_json().replace(', "rdp": null', "")
    assert '"rdp"' not in text
    assert FilterState.from_json(text) == old


def test_a_ledger_file_written_before_the_renyi_share_opens_as_before(tmp_path: Path) -> None:
    """``ledger_v5_filter.sqlite`` was written by main at 2a9c498 (data/README.md, with the
    figures that code read): it opens, re-certifies and admits exactly as then."""
    path = tmp_path / "v5.sqlite"
    shutil.copy(DATA / "ledger_v5_filter.sqlite", path)
    with PrivacyAccountant(ledger=path) as acc:
        r = acc.remaining()
        assert (r.spent_epsilon, r.room, r.room_used, r.basic_share_used, r.count) == (
            0.6050556913440225, 0.49191128088784564, 0.0034696432090768337, (0.0, 2e-07), 43)
        assert acc.rdp_share is None
        assert acc.plan([GaussianEvent(sigma=1.5)]).fits
        assert not acc.plan([GaussianEvent(sigma=1.4)]).fits


def test_the_renyi_share_is_in_the_registry_as_a_valid_filter() -> None:
    from approxdp.accounting.registry import LEDGER_SHARES, rule_names

    entries = {e.name: e for e in LEDGER_SHARES}
    assert set(entries) == {"rdp-share", "sub-budgets"}
    assert all(e.filter_valid for e in LEDGER_SHARES)
    assert "Feldman & Zrnic" in entries["rdp-share"].adaptivity_source
    assert "rdp_share" in entries["rdp-share"].what
    assert "Vadhan & Zhang" in entries["sub-budgets"].adaptivity_source
    assert not set(entries) & set(rule_names("ledger"))  # shares, not composition= rules


# -- sub-budgets fixed at creation ----------------------------------------------------------------


def test_sub_budgets_are_checked_once_and_reached_by_name() -> None:
    acc = PrivacyAccountant(BUDGET, sub_budgets={
        "tables": (0.4, 3e-7), "training": {"budget": (0.3, 2e-7), "rdp_share": (0.3, 2e-7)}})
    assert acc.sub_budgets == {"tables": (0.4, 3e-7), "training": (0.3, 2e-7)}
    assert acc.sub("training").rdp_share is not None
    room_alone = PrivacyAccountant(BUDGET).remaining().room
    assert 0.0 < (acc.remaining().room or 0.0) < (room_alone or 0.0)
    acc.sub("tables").spend(LaplaceEvent(scale=4.0))
    acc.sub("training").spend(SubsampledEvent(GaussianEvent(sigma=8.0), 0.01))
    acc.spend(GaussianEvent(sigma=40.0))
    assert "sub-budget 'tables'" in acc.explain()
    with pytest.raises(Exception, match="no sub-budget 'other'"):
        acc.sub("other")
    with pytest.raises(InvalidParameterError, match="sub_budgets"):  # together over budget
        PrivacyAccountant(BUDGET, sub_budgets={"a": (0.9, 9e-7), "b": (0.5, 1e-7)})
    with pytest.raises(InvalidParameterError, match="sub_budgets"):
        PrivacyAccountant(BUDGET, sub_budgets={"a": (2.0, 1e-7)})
    with pytest.raises(InvalidParameterError, match="sub_budgets"):
        PrivacyAccountant(BUDGET, sub_budgets={"a": {"budget": (0.1, 1e-8), "ledger": "x"}})


def test_an_analyst_switching_between_sub_budgets_stays_within_budget() -> None:
    """FIRST from the main ledger; then, on y₁, the largest Laplace release sub-budget 'a'
    admits, or the least-noise Gaussian the main ledger's room admits: within the budget
    (concurrent composition of the two ledgers, checked once at creation)."""
    acc = PrivacyAccountant(BUDGET, sub_budgets={"a": (0.5, 2e-7)})
    acc.spend(FIRST)
    lo, hi = 1e-3, 10.0
    while hi - lo > 1e-7 * hi:  # the largest Laplace ε sub-budget 'a' admits
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if acc.sub("a").plan([LaplaceEvent(scale=1.0 / mid)]).fits \
            else (lo, mid)
    s_gauss = _edge(lambda s: acc.plan([GaussianEvent(sigma=s)]).fits, 0.05, 1e3)
    assert lo == pytest.approx(0.5, rel=1e-5) and s_gauss < 1e3
    worst = worst_delta(BUDGET[0], ("laplace", 1.0 / lo, 1.0), ("gauss", s_gauss, 1.0))
    assert worst <= BUDGET[1]


def test_with_the_whole_budget_a_renyi_share_a_run_can_still_be_committed() -> None:
    """The declared block has no room left (the share is the budget): a plan committed first
    is charged to the share up front, as a spend would be."""
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    acc = PrivacyAccountant((2.0, 1e-5), rdp_share=(2.0, 1e-5))
    plan = acc.commit([(step, 100)], label="run")
    assert plan.pricing == "prepaid"
    used = acc.rdp_share.used if acc.rdp_share is not None else ()
    assert any(u > 0 for u in used)
    for _ in range(100):
        acc.spend(step)
    assert acc.rdp_share is not None and acc.rdp_share.used == used  # charged once


def test_a_ledger_with_sub_budgets_fixes_its_own_block_at_creation() -> None:
    """A sub-budget may draw noise before the main ledger's first spend, so the main ledger's
    declared block cannot grow after creation: a Laplace first spend is charged to the room
    (its μ²), not declared; a plan is prepaid; an "auto" basic share is decided at once."""
    acc = PrivacyAccountant(BUDGET, sub_budgets={"a": (0.3, 2e-7)})
    acc.sub("a").spend(LaplaceEvent(scale=10.0))
    room = acc.remaining().room
    acc.spend(LaplaceEvent(scale=40.0))
    state = acc._ledger.state().filter
    assert state is not None and state.declared == () and state.gdp_used > 0.0
    assert acc.remaining().room == room
    plan = acc.commit([GaussianEvent(sigma=50.0)], label="later")
    assert plan.pricing == "prepaid"
    auto = PrivacyAccountant(BUDGET, basic_share="auto", sub_budgets={"a": (0.3, 2e-7)})
    assert auto.basic_share == (0.0, 0.2 * BUDGET[1])


def test_a_ledger_file_keeps_its_renyi_share(tmp_path: Path) -> None:
    """A file created with a Rényi share stores it (and its orders); reopened, with or without
    naming it, it keeps what each order has used; another share is refused."""
    from approxdp.accounting import read_ledger_settings
    from approxdp.errors import LedgerError

    path = tmp_path / "renyi.sqlite"
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    with PrivacyAccountant((2.0, 1e-5), ledger=path, rdp_share=(2.0, 1e-5)) as acc:
        for _ in range(50):
            acc.spend(step)
        used = acc.rdp_share.used if acc.rdp_share is not None else ()
    assert any(u > 0 for u in used)
    settings = read_ledger_settings(path)
    assert settings.rdp_share == (2.0, 1e-5) and settings.rdp_orders is not None
    with PrivacyAccountant(ledger=path) as again:
        assert again.rdp_share is not None and again.rdp_share.used == used
        again.spend(step)
    with PrivacyAccountant((2.0, 1e-5), ledger=path, rdp_share=(2.0, 1e-5)) as same:
        assert same.remaining().count == 51
    with pytest.raises(LedgerError, match="rdp_share"):
        PrivacyAccountant((2.0, 1e-5), ledger=path, rdp_share=(1.5, 1e-5))


def test_a_sub_budget_file_spending_before_the_main_ledger_stays_within_budget(
        tmp_path: Path) -> None:
    """On ledger files: FIRST is spent from sub-budget 'a' (its own file) before the main
    ledger's first spend; reopened, then, on y₁, the main ledger's least-noise Laplace release
    or its least-noise Gaussian: within the budget. (Had the main ledger's block been declared
    at its first spend, the Laplace branch would be priced by its curve after y₁ was seen.)"""
    path = tmp_path / "main.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets={"a": (0.5, 2e-7)}) as acc:
        acc.sub("a").spend(FIRST)
    with PrivacyAccountant(ledger=path) as acc:
        assert acc.sub("a").remaining().count == 1
        state = acc._ledger.state().filter
        assert state is not None and not state.pristine
        lo, hi = 1e-3, 10.0
        while hi - lo > 1e-7 * hi:  # the largest Laplace ε the main ledger admits
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if acc.plan([LaplaceEvent(scale=1.0 / mid)]).fits else (lo, mid)
        s_gauss = _edge(lambda s: acc.plan([GaussianEvent(sigma=s)]).fits, 0.05, 1e3)
        memory = PrivacyAccountant(BUDGET, sub_budgets={"a": (0.5, 2e-7)})
        memory.sub("a").spend(FIRST)
        assert memory.plan([LaplaceEvent(scale=1.0 / lo)]).fits  # as in memory
        assert not memory.plan([LaplaceEvent(scale=1.0 / hi)]).fits
    worst = worst_delta(BUDGET[0], ("laplace", 1.0 / lo, 1.0), ("gauss", s_gauss, 1.0))
    assert worst <= BUDGET[1]


def test_the_status_shows_the_renyi_share_per_order() -> None:
    """BudgetStatus reports the share's own use per order (the spent figures count the whole
    share as reserved)."""
    orders = (4.0, 8.0, 16.0)
    acc = PrivacyAccountant((2.0, 1e-5), rdp_share=(2.0, 1e-5), rdp_orders=orders)
    start = acc.remaining()
    assert start.rdp_share_pair == (2.0, 1e-5) and start.rdp_orders == orders
    assert start.rdp_used == (0.0, 0.0, 0.0) and start.rdp_used_fraction == 0.0
    for a, b in zip(orders, start.rdp_budgets, strict=True):  # B_j, rounded down
        exact = 2.0 - math.log1p(-1.0 / a) + (math.log(1e-5 / 3) + math.log(a)) / (a - 1.0)
        assert b <= exact and b == pytest.approx(exact, rel=1e-12)
    step = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
    for _ in range(100):
        acc.spend(step)
    status = acc.remaining()
    expected = 100 * np.asarray(rdp_subsampled_gaussian(1.0, 0.01, list(orders)))
    assert all(u >= e for u, e in zip(status.rdp_used, expected, strict=True))  # rounded up
    assert status.rdp_used == pytest.approx(expected, rel=1e-12)
    assert start.rdp_budgets[0] < 0.0  # α = 4 admits nothing at this δ_R: left out below
    fraction = min(u / b for u, b in zip(status.rdp_used, status.rdp_budgets, strict=True)
                   if b > 0.0)
    assert status.rdp_used_fraction == fraction and 0.0 < fraction < 1.0
    assert "per order (α: ρ used of B): 4: " in acc.explain()
    plain = PrivacyAccountant(BUDGET).remaining()
    assert plain.rdp_share_pair is None and plain.rdp_orders == ()
    assert plain.rdp_used_fraction is None
