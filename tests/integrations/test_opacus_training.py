"""End to end with real Opacus on CPU: PrivacyEngine(accountant="approxdp") trains a tiny model,
and its ε is compared with Opacus's own PRV and RDP accountants on the same history.

Needs torch (pinned: ``pip install torch==2.13.0``, a local CPU build) and Opacus; the
project's environment (``scripts/_venv.py``) installs both. Without them the tests skip, except
in CI (``APPROXDP_REQUIRE_OPACUS=1``), where they fail.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("APPROXDP_REQUIRE_OPACUS") == "1":
    import opacus  # noqa: F401  - CI must run these: fail, not skip, when missing
    import torch
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("opacus")

from opacus import PrivacyEngine
from opacus.accountants import (
    IAccountant,
    PRVAccountant,
    RDPAccountant,
    create_accountant,
)

from approxdp.integrations.opacus import (
    ApproxDPAccountant,
    get_noise_multiplier,
    register,
)

N, BATCH, FEATURES = 200, 20, 5

#: torch's note that the tiny model's inputs need no gradient (Opacus's hooks still fire)
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")


@pytest.fixture(scope="module", autouse=True)
def registered() -> None:
    register()


def _data() -> Any:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, FEATURES, generator=gen)
    y = (x.sum(dim=1) > 0).long()
    return torch.utils.data.TensorDataset(x, y)


def _train(engine: PrivacyEngine, steps: int, **private: Any) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(_data(), batch_size=BATCH)
    make = engine.make_private_with_epsilon if "target_epsilon" in private else (
        engine.make_private)
    model, optimizer, loader = make(module=model, optimizer=optimizer, data_loader=loader,
                                    max_grad_norm=1.0, **private)
    done = 0
    while done < steps:
        for x, y in loader:
            if done == steps:
                break
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            done += 1
    return model, optimizer, loader


def _engine() -> PrivacyEngine:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Secure RNG turned off": fine for a test
        return PrivacyEngine(accountant="approxdp")


def test_registered_and_an_iaccountant() -> None:
    assert isinstance(create_accountant("approxdp"), ApproxDPAccountant)
    assert isinstance(ApproxDPAccountant(), IAccountant)
    register()  # again: harmless


def test_training_is_accounted_and_matches_opacus_prv_and_rdp() -> None:
    engine = _engine()
    assert isinstance(engine.accountant, ApproxDPAccountant)
    _train(engine, steps=25, noise_multiplier=1.0)
    q = BATCH / N
    assert engine.accountant.history == [(1.0, q, 25)]
    ours = engine.get_epsilon(1e-5)
    prv, rdp = PRVAccountant(), RDPAccountant()
    prv.history = rdp.history = engine.accountant.history
    prv_eps, rdp_eps = prv.get_epsilon(1e-5), rdp.get_epsilon(1e-5)
    lower, upper = engine.accountant.epsilon(1e-5).bracket
    assert upper == ours
    assert ours < rdp_eps  # RDP's conversion is loose
    assert lower <= prv_eps + 0.01  # PRV's estimate is within eps_error (0.01) of the truth
    assert abs(ours - prv_eps) <= 0.01 + 2e-3 * ours


def test_make_private_with_epsilon_through_opacus_search() -> None:
    """Opacus's own bisection (make_private_with_epsilon) runs on our accountant; our search
    gives the least σ, at most Opacus's (whose ε is within its tolerance below the target)."""
    engine = _engine()
    q = BATCH / N
    _, optimizer, _ = _train(engine, steps=20, target_epsilon=4.0, target_delta=1e-5, epochs=2)
    theirs = optimizer.noise_multiplier
    ours = get_noise_multiplier(target_epsilon=4.0, target_delta=1e-5, sample_rate=q, epochs=2)
    assert ours <= theirs * (1 + 1e-9)
    assert engine.get_epsilon(1e-5) <= 4.0
    check = ApproxDPAccountant()
    check.history = [(ours, q, 20)]
    assert 4.0 * 0.99 <= check.get_epsilon(1e-5) <= 4.0


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    engine = _engine()
    model, optimizer, _ = _train(engine, steps=7, noise_multiplier=1.3)
    path = tmp_path / "ckpt.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)
    again = _engine()
    model2, optimizer2, _ = _train(again, steps=1, noise_multiplier=1.3)
    again.load_checkpoint(path=path, module=model2, optimizer=optimizer2)
    assert again.accountant.history == engine.accountant.history == [(1.3, BATCH / N, 7)]
    assert again.get_epsilon(1e-5) == engine.get_epsilon(1e-5)
