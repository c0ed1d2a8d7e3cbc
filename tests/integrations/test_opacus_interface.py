"""The Opacus accountant's interface, without Opacus or torch (the end-to-end run with real
Opacus is in test_opacus_training.py)."""

from __future__ import annotations

import json
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import pytest

import approxdp as dp
from approxdp.errors import InvalidParameterError, ParameterTypeError, UnknownMethodError
from approxdp.integrations.opacus import (
    MECHANISM,
    ApproxDPAccountant,
    get_noise_multiplier,
)

Q = 256 / 60000


def test_steps_history_and_length_as_opacus_records_them() -> None:
    acct = ApproxDPAccountant()
    assert acct.mechanism() == ApproxDPAccountant.mechanism() == MECHANISM == "approxdp"
    assert acct.history == [] and len(acct) == 0 and acct.get_epsilon(1e-5) == 0.0
    for _ in range(20):
        acct.step(noise_multiplier=1.0, sample_rate=0.01)
    acct.step(noise_multiplier=0.8, sample_rate=0.01)
    assert acct.history == [(1.0, 0.01, 20), (0.8, 0.01, 1)]
    assert len(acct) == 21  # steps (IAccountant's documented meaning)
    eps = acct.get_epsilon(delta=1e-5)
    assert eps == acct.training_accountant.epsilon(1e-5).epsilon
    assert acct.epsilon(1e-5).bracket is not None
    assert acct.get_delta(eps) <= 1.01e-5 and acct.delta(eps).kind == "upper bound"


def test_history_can_be_assigned_as_opacus_does() -> None:
    acct = ApproxDPAccountant()
    acct.history = [(1.1, Q, 14063)]  # what opacus.accountants.utils.get_noise_multiplier does
    assert round(acct.get_epsilon(1e-5), 3) == 2.382
    with pytest.raises(InvalidParameterError, match="noise_multiplier must be in"):
        acct.history = [(0.0, Q, 10)]
    assert acct.history == [(1.1, Q, 14063)]  # unchanged by the refused assignment


def test_other_accountants_options_are_accepted_anything_else_refused() -> None:
    acct = ApproxDPAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.1)
    base = acct.get_epsilon(1e-5)
    assert acct.get_epsilon(1e-5, alphas=[2, 3]) == base
    assert acct.get_epsilon(delta=1e-5, eps_error=0.01, delta_error=1e-8) == base
    with pytest.raises(ParameterTypeError, match="frobnicate"):
        acct.get_epsilon(1e-5, frobnicate=True)
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        acct.get_epsilon(2.0)


def test_the_optimizer_hook_records_one_step_per_optimizer_step() -> None:
    acct = ApproxDPAccountant()
    hook = acct.get_optimizer_hook_fn(sample_rate=0.01)
    optim = SimpleNamespace(noise_multiplier=1.2, accumulated_iterations=1)
    for _ in range(3):
        hook(optim)
    optim.accumulated_iterations = 4  # gradient accumulation: four batches in one step
    hook(optim)
    assert acct.history == [(1.2, 0.01, 3), (1.2, 0.04, 1)]


def test_state_dict_round_trip_and_opacus_checkpoints() -> None:
    acct = ApproxDPAccountant(precision=2e-3)
    for _ in range(50):
        acct.step(noise_multiplier=1.0, sample_rate=0.02)
    state = acct.state_dict()
    assert isinstance(state, OrderedDict)
    assert state["history"] == [(1.0, 0.02, 50)] and state["mechanism"] == "approxdp"
    back = ApproxDPAccountant()
    back.load_state_dict(json.loads(json.dumps(state)))  # lists instead of tuples: fine
    assert back.history == acct.history and back.get_epsilon(1e-5) == acct.get_epsilon(1e-5)
    assert back.training_accountant.precision == 2e-3
    into: dict[str, Any] = {"other": 1}
    assert acct.state_dict(into) is into and into["other"] == 1
    # a run checkpointed with Opacus's RDP or PRV accountant continues here
    for mechanism in ("rdp", "prv", "gdp"):
        fresh = ApproxDPAccountant()
        fresh.load_state_dict({"history": [(1.0, 0.02, 50)], "mechanism": mechanism})
        assert fresh.history == [(1.0, 0.02, 50)]


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({}, "empty"),
        ({"mechanism": "approxdp"}, "history"),
        ({"history": []}, "mechanism"),
        ({"history": [], "mechanism": "moments"}, "cannot be loaded"),
        ({"history": [(1.0, 2.0, 5)], "mechanism": "rdp"}, "sample_rate must be in"),
        ({"history": [(1.0, 0.5, 6)], "mechanism": "approxdp",
          "approxdp": ApproxDPAccountant().state_dict()["approxdp"]}, "disagree"),
        ({"history": [], "mechanism": "approxdp",
          "approxdp": ApproxDPAccountant(sampling="without-replacement").state_dict()[
              "approxdp"]}, "sampling"),
    ],
)
def test_bad_state_dicts_change_nothing(state: dict[str, Any], message: str) -> None:
    acct = ApproxDPAccountant()
    acct.step(noise_multiplier=2.0, sample_rate=0.5)
    with pytest.raises(ValueError, match=message):
        acct.load_state_dict(state)
    assert acct.history == [(2.0, 0.5, 1)]


def test_an_opacus_history_needs_poisson_sampling() -> None:
    acct = ApproxDPAccountant(sampling="without-replacement")
    with pytest.raises(InvalidParameterError, match="Poisson"):
        acct.load_state_dict({"history": [(1.0, 0.02, 5)], "mechanism": "rdp"})


def test_get_noise_multiplier_is_calibrate_dpsgd() -> None:
    sigma = get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5, sample_rate=Q,
                                 steps=14063)
    assert sigma == dp.calibrate_dpsgd(epsilon=3.0, delta=1e-5, sample_rate=Q, steps=14063)
    acct = ApproxDPAccountant()
    acct.history = [(sigma, Q, 14063)]
    assert acct.get_epsilon(1e-5) <= 3.0


def test_epochs_become_steps_without_losing_one_to_rounding() -> None:
    q = 1 / 105  # 105 batches an epoch
    assert int(1 / q) == 104  # float: Opacus's int(epochs / sample_rate) loses a step here
    by_epochs = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=q,
                                     epochs=1)
    by_steps = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=q,
                                    steps=105)
    assert by_epochs == by_steps
    half = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.3,
                                epochs=1)  # 3.33 steps: 4 are run
    assert half == get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5,
                                        sample_rate=0.3, steps=4)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"steps": 10, "epochs": 1}, InvalidParameterError, "exactly one of"),
        ({}, InvalidParameterError, "exactly one of"),
        ({"steps": 10, "accountant": "rdp"}, UnknownMethodError, "opacus.accountants"),
        ({"epochs": -1}, InvalidParameterError, "epochs must be"),
        ({"steps": 10, "epsilon_tolerance": 0}, InvalidParameterError, "epsilon_tolerance"),
        ({"steps": 10, "bogus": 1}, ParameterTypeError, "bogus"),
        ({"steps": 10, "sample_rate": 0.0}, InvalidParameterError, "sample_rate must be in"),
    ],
)
def test_get_noise_multiplier_bad_input(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    args: dict[str, Any] = {"target_epsilon": 1.0, "target_delta": 1e-5, "sample_rate": 0.01,
                            **kwargs}
    with pytest.raises(error, match=message):
        get_noise_multiplier(**args)


def test_register_says_what_to_install_without_opacus(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from approxdp.integrations import opacus as ours

    monkeypatch.setitem(sys.modules, "opacus", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "opacus.accountants", None)
    with pytest.raises(dp.MissingDependencyError, match=r"approxdp\[opacus\]"):
        ours.register()
