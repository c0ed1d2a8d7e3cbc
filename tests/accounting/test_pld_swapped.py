"""The other neighbouring direction read off one direction's composition
(``pld.swapped``): H_{e^ε}(Q‖P) = 1 − e^ε + e^ε·H_{e^(−ε)}(P‖Q), with the add and remove
directions of Poisson subsampling swapped pairs of each other. The bound must hold the exact
one-step profile and the other direction's own certified bracket, and the accountant must
certify the non-dominant direction with it instead of composing it (the answer unchanged)."""

from __future__ import annotations

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.dpsgd.bounds import event_of
from approxdp.accounting.dpsgd.phases import DPSGDPhase
from approxdp.accounting.pld import accounting, discretized
from approxdp.accounting.pld.lower import lower_delta
from approxdp.accounting.pld.passes import composed
from approxdp.accounting.pld.plan import _plan
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.subsampled_gaussian import subsampled_gaussian_delta
from approxdp.accounting.pld.swapped import is_swap, swapped_delta


def _directions(sigma: float, q: float, steps: int):  # type: ignore[no-untyped-def]
    plan = _plan([(event_of(DPSGDPhase(sigma, q, steps), "poisson"), steps)])
    return plan.remove, plan.add


@pytest.mark.parametrize("read", ["remove", "add"])
@pytest.mark.parametrize("epsilon", [0.02, 0.1, 0.3, 0.6])
def test_one_step_swapped_bound_holds_the_exact_profile(read: str, epsilon: float) -> None:
    """One subsampled-Gaussian step (μ = 1, q = 0.2), composed untilted on a fine grid in
    one direction: read at −ε, it bounds the *other* direction's exact δ(ε) from above,
    within 1 % (reading it at +ε instead — the direction itself — would miss by far)."""
    remove, add = _directions(1.0, 0.2, 1)
    parts, other = (remove, "add") if read == "remove" else (add, "remove")
    comp = composed(parts, 2.0**-12, 1e-12, None)
    exact = subsampled_gaussian_delta(epsilon, 1.0, 0.2, other)
    bound = swapped_delta(comp, epsilon)
    assert exact <= bound <= exact * 1.01 + 1e-9
    own = subsampled_gaussian_delta(epsilon, 1.0, 0.2, read)
    assert abs(own - exact) > 0.02 * exact  # (the directions differ: the test can tell)


@pytest.mark.parametrize("epsilon", [0.2, 0.4, 0.55])
def test_swapped_bound_counts_the_mass_between_minus_epsilon_and_zero(epsilon: float) -> None:
    """q = 0.5: the remove direction's losses lie above log(1 − q) = −0.693, so read at −ε
    the bound rests on the one-step mass between −ε and 0, which no ε ≥ 0 read looks at;
    dropping or moving down any of it would put the bound below the add direction's exact δ
    (zero from ε = log 2 on)."""
    remove, _ = _directions(1.0, 0.5, 1)
    comp = composed(remove, 2.0**-12, 1e-12, None)
    exact = subsampled_gaussian_delta(epsilon, 1.0, 0.5, "add")
    assert exact > 1e-3
    assert exact <= swapped_delta(comp, epsilon) <= exact * 1.01


def test_composed_swapped_bound_brackets_the_other_direction() -> None:
    """σ = 5, q = 1e-5, T = 1000 at ε = 4.1413e-5 (issue 22's setting #28): the remove
    direction's composition read at −ε is at least the add direction's certified lower bound
    and within 0.1 % of its certified upper bound (both on the finer grid 2^-26: what is left
    is the coarser grids' own excess)."""
    remove, add = _directions(5.0, 1e-5, 1000)
    eps = 4.141324721729236e-05
    low = lower_delta(add, eps, 2.0**-26)
    up = composed(add, 2.0**-26, 1e-10, eps).delta(eps)
    for h in (2.0**-23, 2.0**-24):
        bound = swapped_delta(composed(remove, h, 1e-9, eps), eps)
        assert low <= bound <= up * (1.0 + 1e-3)


def test_is_swap_only_for_swapped_subsampled_pairs() -> None:
    remove, add = _directions(1.0, 1e-3, 100)
    assert is_swap(remove, add) and is_swap(add, remove)
    assert not is_swap(remove, remove)
    assert not is_swap(remove, _directions(1.0, 2e-3, 100)[1])  # another q
    assert not is_swap(remove, _directions(1.0, 1e-3, 101)[1])  # another count
    gauss = ((GaussianLoss(mu=1.0), 3),)
    assert not is_swap(gauss, gauss)
    sub = SubsampledLoss(GaussianLoss(mu=1.0), 1e-3, "remove")
    assert not is_swap(((sub, 1),), gauss)


def test_blocked_or_vacuous_reads_certify_nothing() -> None:
    remove, _ = _directions(1.0, 0.2, 1)
    comp = composed(remove, 2.0**-10, 1e-12, None)
    comp.blocked = True
    assert swapped_delta(comp, 0.1) == 1.0
    comp.blocked = False
    assert swapped_delta(comp, float("inf")) == 1.0


def test_the_accountant_certifies_the_other_direction_without_composing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#28 (σ = 5, q = 1e-5, T = 1000, δ = 1e-5): the add direction is never composed (the
    remove one's windows certify it), ε and its bracket are what composing it gave, and the
    add direction's own certified δ at that ε (finer grid) is indeed at most δ."""
    seen: list[str] = []
    solve = accounting._solve

    def spy(parts, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(parts[0][0].direction)
        return solve(parts, *args, **kwargs)

    monkeypatch.setattr(accounting, "_solve", spy)
    discretized.clear_caches()
    g = dpsgd_epsilon(noise_multiplier=5.0, sample_rate=1e-5, steps=1000, delta=1e-5)
    assert seen == ["remove"]
    # (8.6e-7 lower than main 89522e9's 4.141324721729236e-05 since the round-off is
    # weighted as the masses in δ(ε): ComposedPLD._rounding)
    assert g.epsilon == pytest.approx(4.1413211766094824e-05, rel=1e-12)
    assert g.bracket is not None
    # (main 2877e1a's lower end; its tests now reuse the upper bound's window: no looser)
    assert g.bracket[0] >= 4.139129526974682e-05 * (1.0 - 1e-12)
    _, add = _directions(5.0, 1e-5, 1000)
    assert composed(add, 2.0**-26, 1e-10, g.epsilon).delta(g.epsilon) <= 1e-5
    discretized.clear_caches()
