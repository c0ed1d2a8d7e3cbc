"""approxdp's PLDAccountant behind dp_accounting's interface, against dp_accounting's own PLD
and RDP accountants on the same DpEvents; conversion of events both ways."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

dpa = pytest.importorskip("dp_accounting")

from dp_accounting.pld import PLDAccountant as TheirPLD  # noqa: E402
from dp_accounting.rdp import RdpAccountant as TheirRDP  # noqa: E402

from approxdp.accounting import pld_epsilon  # noqa: E402
from approxdp.errors import InvalidParameterError, ParameterTypeError  # noqa: E402
from approxdp.events import (  # noqa: E402
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    SubsampledEvent,
)
from approxdp.integrations.dp_accounting import (  # noqa: E402
    PLDAccountant,
    UnsupportedDpEventError,
    from_dp_event,
    to_dp_event,
)

NR = dpa.NeighboringRelation
Q = 256 / 60000


def poisson_gaussian(q: float, sigma: float) -> Any:
    return dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))


#: (name, event, count, delta, relation): each accounted by us and by dp_accounting's PLD.
AGAINST_THEIR_PLD = [
    ("mnist dp-sgd", poisson_gaussian(Q, 1.1), 14063, 1e-5, NR.ADD_OR_REMOVE_ONE),
    ("few steps, small sigma", poisson_gaussian(0.01, 0.7), 50, 1e-6, NR.ADD_OR_REMOVE_ONE),
    ("heterogeneous", dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(poisson_gaussian(0.01, 1.0), 300),
        dpa.SelfComposedDpEvent(poisson_gaussian(0.05, 2.0), 100),
    ]), 1, 1e-6, NR.ADD_OR_REMOVE_ONE),
    ("gaussians and laplace", dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(5.0), 10), dpa.LaplaceDpEvent(4.0),
    ]), 3, 1e-5, NR.ADD_OR_REMOVE_ONE),
    ("subsampled laplace", dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)), 20, 1e-5,
     NR.ADD_OR_REMOVE_ONE),
    ("replace-one gaussian", dpa.GaussianDpEvent(3.0), 5, 1e-5, NR.REPLACE_ONE),
    # count 1: dp_accounting 0.6's PLD ignores the count of a RandomizedResponseDpEvent
    ("randomized response, k=2", dpa.RandomizedResponseDpEvent(0.5, 2), 1, 1e-5,
     NR.REPLACE_ONE),
    ("replace-special poisson", poisson_gaussian(0.02, 1.0), 200, 1e-5, NR.REPLACE_SPECIAL),
]


@pytest.mark.parametrize(("name", "event", "count", "delta", "relation"), AGAINST_THEIR_PLD,
                         ids=[row[0] for row in AGAINST_THEIR_PLD])
def test_epsilon_matches_dp_accounting_pld_and_beats_rdp(
    name: str, event: Any, count: int, delta: float, relation: Any
) -> None:
    ours = PLDAccountant(relation).compose(event, count)
    theirs = TheirPLD(relation).compose(event, count)
    g = ours.epsilon(delta)
    lower, upper = g.bracket
    their_eps = theirs.get_epsilon(delta)
    # dp_accounting's PLD (grid 1e-4) is close to the truth, which our bracket contains
    assert lower <= their_eps * (1 + 2e-3), (name, g, their_eps)
    assert upper <= their_eps * (1 + 2e-3) + 1e-9, (name, g, their_eps)
    assert ours.get_epsilon(delta) == upper
    # (dp_accounting's RDP takes a replaced record to move a Gaussian's sum by C, not 2C)
    if relation is not NR.REPLACE_ONE:
        rdp = TheirRDP(neighboring_relation=relation)
        if rdp.supports(event):
            assert upper <= rdp.compose(event, count).get_epsilon(delta) * (1 + 1e-9)
    # δ at that ε: about the δ asked for, and no looser than theirs
    d = ours.get_delta(upper)
    assert d <= delta * 1.01
    assert d <= 1.05 * max(theirs.get_delta(upper), delta)


def test_dp_sgd_summary_numbers() -> None:
    """The MNIST run: ours, dp_accounting PLD and RDP side by side (the note's table)."""
    event = poisson_gaussian(Q, 1.1)
    ours = PLDAccountant().compose(event, 14063).get_epsilon(1e-5)
    pld = TheirPLD().compose(event, 14063).get_epsilon(1e-5)
    rdp = TheirRDP().compose(event, 14063).get_epsilon(1e-5)
    assert ours == pytest.approx(2.3825, abs=1e-3)
    assert pld == pytest.approx(ours, rel=1e-3)
    assert rdp > 1.08 * ours


def test_without_replacement_both_sensitivity_conventions() -> None:
    event = dpa.SampledWithoutReplacementDpEvent(60000, 256, dpa.GaussianDpEvent(1.1))
    rdp = TheirRDP(neighboring_relation=NR.REPLACE_ONE).compose(event, 2000)
    # dp_accounting's RDP convention (a replacement moves the sum by C): ours is tighter
    as_rdp = PLDAccountant(NR.REPLACE_ONE, replace_one_sensitivity=1.0).compose(event, 2000)
    assert as_rdp.get_epsilon(1e-5) < rdp.get_epsilon(1e-5)
    # approxdp's default, Δ = 2C, is dp_accounting's RDP at half the noise multiplier
    ours = PLDAccountant(NR.REPLACE_ONE).compose(event, 2000)
    half = dpa.SampledWithoutReplacementDpEvent(60000, 256, dpa.GaussianDpEvent(0.55))
    rdp_half = TheirRDP(neighboring_relation=NR.REPLACE_ONE).compose(half, 2000)
    assert ours.get_epsilon(1e-5) < rdp_half.get_epsilon(1e-5)
    assert ours.get_epsilon(1e-5) > as_rdp.get_epsilon(1e-5)
    # and equals dpsgd_epsilon(sampling="without-replacement")
    from approxdp.accounting import dpsgd_epsilon

    ref = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=256 / 60000, steps=2000, delta=1e-5,
                        sampling="without-replacement")
    assert ours.get_epsilon(1e-5) == pytest.approx(ref.epsilon, rel=1e-9)


def test_tree_aggregation_is_one_gaussian() -> None:
    event = dpa.SingleEpochTreeAggregationDpEvent(3.0, [100, 60])
    ours = PLDAccountant(NR.REPLACE_SPECIAL).compose(event, 2)
    depth = math.ceil(math.log2(101))
    assert ours.items == [(GaussianEvent(3.0, math.sqrt(depth)), 2)]
    rdp = TheirRDP(neighboring_relation=NR.REPLACE_SPECIAL).compose(event, 2)
    assert ours.get_epsilon(1e-5) < rdp.get_epsilon(1e-5)


def test_randomized_response_counts_every_composition() -> None:
    """Ten k=2 randomized responses at p = 1/2 are ten (log 3)-DP binary pairs: below ε ≈ 10·log 3
    the all-agree outcome alone already costs δ ≈ 0.056 (dp_accounting 0.6's PLD accountant
    reports log 3, one response's ε: it drops the count)."""
    acct = PLDAccountant(NR.REPLACE_ONE).compose(dpa.RandomizedResponseDpEvent(0.5, 2), 10)
    lower, upper = acct.epsilon(1e-5).bracket
    assert 10 * math.log(3) * 0.995 < lower <= upper <= 10 * math.log(3) * 1.001


def test_no_op_non_private_and_empty() -> None:
    acct = PLDAccountant()
    assert acct.get_epsilon(1e-5) == 0.0 and acct.get_delta(1.0) == 0.0
    acct.compose(dpa.NoOpDpEvent(), 5).compose(poisson_gaussian(0.0, 1.0))
    assert acct.get_epsilon(1e-5) == 0.0
    acct.compose(dpa.NonPrivateDpEvent())
    assert acct.get_epsilon(1e-5) == math.inf and acct.get_delta(10.0) == 1.0
    zero = PLDAccountant().compose(dpa.GaussianDpEvent(0.0))
    assert zero.get_epsilon(1e-5) == math.inf
    assert PLDAccountant().compose(dpa.GaussianDpEvent(math.inf), 3).get_epsilon(1e-5) == 0.0


def test_compose_is_chainable_and_keeps_the_ledger() -> None:
    event = poisson_gaussian(0.01, 1.0)
    acct = PLDAccountant()
    assert acct.compose(event, 100).compose(event, 50) is acct
    assert acct.items == [(SubsampledEvent(GaussianEvent(1.0), 0.01), 150)]
    assert acct.ledger == dpa.SelfComposedDpEvent(event, 150)  # dp_accounting's own ledger
    once = PLDAccountant().compose(event, 150)
    assert acct.get_epsilon(1e-6) == once.get_epsilon(1e-6)
    first = acct.epsilon(1e-6)
    assert acct.epsilon(1e-6) is first  # cached
    acct.compose(event)
    assert acct.get_epsilon(1e-6) > first.epsilon


UNSUPPORTED = [
    ("zcdp", dpa.ZCDpEvent(0.1), NR.ADD_OR_REMOVE_ONE, "ZCDpEvent"),
    ("with replacement", dpa.SampledWithReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0)),
     NR.ADD_OR_REMOVE_ONE, "SampledWithReplacementDpEvent"),
    ("unsupported", dpa.UnsupportedDpEvent(), NR.ADD_OR_REMOVE_ONE, "UnsupportedDpEvent"),
    ("mixture", dpa.dp_event.MixtureOfGaussiansDpEvent(1.0, [1.0], [1.0]),
     NR.ADD_OR_REMOVE_ONE, "MixtureOfGaussiansDpEvent"),
    ("poisson under replace-one", poisson_gaussian(0.1, 1.0), NR.REPLACE_ONE,
     "PoissonSampledDpEvent"),
    ("without replacement under add/remove",
     dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.GaussianDpEvent(1.0)),
     NR.ADD_OR_REMOVE_ONE, "SampledWithoutReplacementDpEvent"),
    ("poisson of zcdp", dpa.PoissonSampledDpEvent(0.1, dpa.ZCDpEvent(0.1)),
     NR.ADD_OR_REMOVE_ONE, "the sampled event must be"),
    ("nested", dpa.ComposedDpEvent([poisson_gaussian(0.1, 1.0), dpa.ZCDpEvent(0.1)]),
     NR.ADD_OR_REMOVE_ONE, "ZCDpEvent (inside ComposedDpEvent)"),
    ("negative noise", dpa.GaussianDpEvent(-1.0), NR.ADD_OR_REMOVE_ONE, "noise_multiplier"),
    ("nan noise", dpa.GaussianDpEvent(float("nan")), NR.ADD_OR_REMOVE_ONE, "noise_multiplier"),
    ("rate above one", poisson_gaussian(1.5, 1.0), NR.ADD_OR_REMOVE_ONE, "sampling_probability"),
    ("rr under add/remove", dpa.RandomizedResponseDpEvent(0.5, 3), NR.ADD_OR_REMOVE_ONE,
     "randomized response"),
]


@pytest.mark.parametrize(("name", "event", "relation", "message"), UNSUPPORTED,
                         ids=[row[0] for row in UNSUPPORTED])
def test_unsupported_events_are_named_and_change_nothing(
    name: str, event: Any, relation: Any, message: str
) -> None:
    acct = PLDAccountant(relation)
    assert not acct.supports(event)
    with pytest.raises(UnsupportedDpEventError, match=re.escape(message)) as info:
        acct.compose(event)
    assert isinstance(info.value, dpa.UnsupportedEventError)  # what dp_accounting users catch
    assert isinstance(info.value, ValueError)
    assert acct.items == [] and acct.ledger == dpa.NoOpDpEvent()
    with pytest.raises(UnsupportedDpEventError, match=re.escape(message)):
        from_dp_event(event, relation)


def test_bad_arguments_are_typed() -> None:
    acct = PLDAccountant()
    with pytest.raises(ParameterTypeError, match="must be a dp_accounting DpEvent"):
        acct.compose(GaussianEvent(1.0))
    with pytest.raises(ParameterTypeError, match="count must be an integer"):
        acct.compose(dpa.GaussianDpEvent(1.0), 1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="NeighboringRelation"):
        PLDAccountant("add_or_remove")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="replace_one_sensitivity"):
        PLDAccountant(replace_one_sensitivity=3.0)
    with pytest.raises(InvalidParameterError, match="precision"):
        PLDAccountant(precision=1.0)
    with pytest.raises(InvalidParameterError, match="value_discretization_interval"):
        PLDAccountant(value_discretization_interval=-1.0)
    acct.compose(dpa.GaussianDpEvent(1.0))
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        acct.get_epsilon(0.0)
    with pytest.raises(ParameterTypeError, match="target_delta must be a single number"):
        acct.get_epsilon([1e-5])  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="epsilon must be in"):
        acct.get_delta(-1.0)


def test_a_given_grid_step_is_used() -> None:
    event = poisson_gaussian(0.01, 1.0)
    fine = PLDAccountant(NR.ADD_OR_REMOVE_ONE, 1e-3).compose(event, 100)
    items = [(SubsampledEvent(GaussianEvent(1.0), 0.01), 100)]
    assert fine.get_epsilon(1e-5) == pld_epsilon(items, 1e-5, h=1e-3).epsilon


# -- conversion both ways ---------------------------------------------------------------------


def test_from_dp_event_maps_each_kind() -> None:
    event = dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(poisson_gaussian(0.01, 1.1), 10),
        dpa.LaplaceDpEvent(2.0),
        poisson_gaussian(0.01, 1.1),
        dpa.PoissonSampledDpEvent(0.5, dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), 4)),
        dpa.dp_event.DiscreteLaplaceDpEvent(0.5, 2),
        dpa.NoOpDpEvent(),
    ])
    assert from_dp_event(event) == [
        (SubsampledEvent(GaussianEvent(1.1), 0.01), 11),
        (LaplaceEvent(2.0), 1),
        (SubsampledEvent(GaussianEvent(1.0), 0.5), 1),  # four σ=2 Gaussians are one σ=1
        (EpsilonDeltaEvent(1.0), 1),
    ]
    wor = dpa.SampledWithoutReplacementDpEvent(1000, 10, dpa.GaussianDpEvent(1.5))
    assert from_dp_event(wor, NR.REPLACE_ONE) == [
        (SubsampledEvent(GaussianEvent(1.5, 2.0), 0.01, sampling="without-replacement"), 1)]
    assert from_dp_event(wor, NR.REPLACE_ONE, replace_one_sensitivity=1.0) == [
        (SubsampledEvent(GaussianEvent(1.5, 1.0), 0.01, sampling="without-replacement"), 1)]
    with pytest.raises(UnsupportedDpEventError, match="non-private"):
        from_dp_event(dpa.NonPrivateDpEvent())
    with pytest.raises(ParameterTypeError, match="DpEvent"):
        from_dp_event(GaussianEvent(1.0))


def _mu(items: list[tuple[Any, int]]) -> list[tuple[str, float, float, str, int]]:
    """A privacy-equivalence key: (kind, noise over sensitivity, q, sampling, count)."""
    out = []
    for ev, c in items:
        q, sampling = 1.0, "none"
        if isinstance(ev, SubsampledEvent):
            q, sampling, ev = ev.q, ev.sampling, ev.event
        scale = ev.sigma if isinstance(ev, GaussianEvent) else ev.scale
        out.append((type(ev).__name__, scale / ev.sensitivity, q, sampling, c))
    return out


@pytest.mark.parametrize("relation", [NR.ADD_OR_REMOVE_ONE, NR.REPLACE_ONE])
def test_round_trips_keep_the_privacy(relation: Any) -> None:
    if relation is NR.REPLACE_ONE:
        items = [(GaussianEvent(3.0, 2.0), 4), (LaplaceEvent(6.0, 2.0), 1),
                 (SubsampledEvent(GaussianEvent(1.2, 2.0), 0.25, sampling="without-replacement"),
                  10)]
    else:
        items = [(GaussianEvent(3.0, 1.5), 4), (LaplaceEvent(2.0), 1),
                 (SubsampledEvent(GaussianEvent(1.1), 0.01), 7),
                 (SubsampledEvent(LaplaceEvent(1.0), 0.1), 2)]
    dp_event = to_dp_event(items, relation, dataset_size=1000)
    back = from_dp_event(dp_event, relation)
    assert _mu(back) == _mu(items)
    assert to_dp_event(back, relation, dataset_size=1000) == dp_event
    ours = PLDAccountant(relation).compose(dp_event).get_epsilon(1e-5)
    assert ours == pytest.approx(pld_epsilon(items, 1e-5).epsilon, rel=1e-12)


def test_to_dp_event_shapes_and_refusals() -> None:
    assert to_dp_event(GaussianEvent(2.0, 0.5)) == dpa.GaussianDpEvent(4.0)
    assert to_dp_event(GaussianEvent(2.0, 0.0)) == dpa.NoOpDpEvent()
    assert to_dp_event(ComposedEvent((GaussianEvent(1.0), LaplaceEvent(1.0)))) == (
        dpa.ComposedDpEvent([dpa.GaussianDpEvent(1.0), dpa.LaplaceDpEvent(1.0)]))
    assert to_dp_event([(GaussianEvent(1.0), 3)]) == dpa.SelfComposedDpEvent(
        dpa.GaussianDpEvent(1.0), 3)
    wor = SubsampledEvent(GaussianEvent(1.0, 2.0), 0.01, sampling="without-replacement")
    with pytest.raises(InvalidParameterError, match="REPLACE_ONE"):
        to_dp_event(wor)
    with pytest.raises(InvalidParameterError, match="dataset_size"):
        to_dp_event(wor, NR.REPLACE_ONE)
    with pytest.raises(InvalidParameterError, match="not a batch size"):
        to_dp_event(wor, NR.REPLACE_ONE, dataset_size=1234)
    with pytest.raises(InvalidParameterError, match="no dp_accounting DpEvent counterpart"):
        to_dp_event(EpsilonDeltaEvent(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="ADD_OR_REMOVE_ONE"):
        to_dp_event(SubsampledEvent(GaussianEvent(1.0), 0.1), NR.REPLACE_ONE)
    with pytest.raises(ParameterTypeError, match="PrivacyEvent or"):
        to_dp_event("gaussian")  # type: ignore[arg-type]
