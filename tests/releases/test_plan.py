"""One source of truth for σ (issue 16, item 1): a release plan calibrates σ once, its spend
records it, and every query noises with exactly that σ — the mechanism is built from it
(``GaussianMechanism.from_sigma``), never calibrated again, and a mismatch raises
``InternalError`` before anything is spent."""

from __future__ import annotations

import importlib
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp import PrivateTable
from approxdp.accounting import PrivacyAccountant
from approxdp.calibration import CALIBRATION_METHODS, calibrate_gaussian, scale_sigma
from approxdp.errors import (
    InternalError,
    InvalidParameterError,
    NotPrivateError,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.events import ComposedEvent, GaussianEvent
from approxdp.mechanisms import GaussianMechanism
from approxdp.releases import Count, Histogram, Mean, Query, Sum
from approxdp.releases.noise import check_recorded_sigma, prepare_noise, recorded_unit_sigma

plan_module = importlib.import_module("approxdp.releases.plan")
mechanism_module = importlib.import_module("approxdp.mechanisms.gaussian")

DOMAIN = {"g": ["a", "b", "c"]}


def _data(n: int = 600, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "user": rng.integers(0, n // 4, n),
        "g": rng.choice(["a", "b", "c"], n),
        "x": rng.uniform(0, 10, n),
    })


# -- GaussianMechanism.from_sigma --------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(CALIBRATION_METHODS))
def test_from_sigma_is_the_calibrated_mechanism(method: str) -> None:
    """Built from the σ calibrate_gaussian gives, it equals GaussianMechanism(ε, δ, Δ) field
    for field; and that σ is the unit σ scaled (the plan's route) bit for bit."""
    for eps, dlt, sens in itertools.product((0.05, 0.5, 1.0, 4.0), (1e-9, 1e-5, 0.01),
                                            (1.0, 2.0, math.sqrt(2.0), 0.3, 17.25)):
        try:
            mech = GaussianMechanism(eps, dlt, sens, method=method)
        except NotPrivateError:
            continue  # a classical formula that is not private here
        assert mech.sigma == scale_sigma(calibrate_gaussian(eps, dlt, 1.0, method), sens)
        built = GaussianMechanism.from_sigma(mech.sigma, sens, epsilon=eps, delta=dlt,
                                             method=method)
        assert built == mech and built.event() == mech.event()


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"sigma": 0.0}, InvalidParameterError, r"sigma must be in \(0, inf\)"),
        ({"sigma": -1.0}, InvalidParameterError, "sigma"),
        ({"sigma": math.inf}, InvalidParameterError, "sigma"),
        ({"sigma": math.nan}, InvalidParameterError, "sigma"),
        ({"sigma": "3"}, ParameterTypeError, "sigma"),
        ({"sensitivity": 0.0}, InvalidParameterError, "sensitivity"),
        ({"epsilon": -1.0}, InvalidParameterError, "epsilon"),
        ({"delta": 1.0}, InvalidParameterError, "delta"),
        ({"method": "foo"}, UnknownMethodError, "method='foo'"),
        ({"method": 3}, ParameterTypeError, "method must be a string"),
        ({"sigma": 3.7}, NotPrivateError, r"not \(1, 1e-05\)-DP.*delta=1\.1456"),
    ],
)
def test_from_sigma_validates(kwargs: dict[str, Any], error: type[Exception], needle: str) -> None:
    args: dict[str, Any] = {"sigma": 4.0, "sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5,
                            **kwargs}
    with pytest.raises(error, match=needle):
        GaussianMechanism.from_sigma(args.pop("sigma"), args.pop("sensitivity"), **args)


# -- releases noise with the recorded σ --------------------------------------------------------
CASES: list[tuple[str, list[Query], dict[str, Any]]] = [
    ("count", [Count()], {}),
    ("mean (Δ = √2)", [Mean("x", (0, 10))], {}),
    ("selection", [Sum("x", (0, 10), ("g",))], {}),
    ("replace-one", [Sum("x", (-1, 10))], {"neighbouring": "replace-one"}),
    ("per-user limits", [Mean("x", (0, 10), ("g",), DOMAIN), Histogram(("g",))],
     {"privacy_unit": "user", "max_partitions": 2, "max_rows_per_partition": 3}),
    ("weighted plan", [Count(), Histogram(("g",), DOMAIN), Mean("x", (0, 10))], {}),
    ("large domain", [Histogram(("g",), DOMAIN), Mean("x", (0, 10), ("g",), DOMAIN)],
     {"large_domain_cells": 2}),
    ("zhao-m1", [Mean("x", (0, 10))], {"method": "zhao-m1"}),
]


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize(("name", "queries", "options"), CASES, ids=[c[0] for c in CASES])
def test_every_release_noises_with_the_sigma_its_spend_records(
    name: str, queries: list[Query], options: dict[str, Any], seed: int | None
) -> None:
    """σ of each result is the spend's σ* scaled to the query's effective sensitivity, bit for
    bit — and the σ the old second calibration gave (no number changes for users)."""
    t = PrivateTable(_data(), budget=(50.0, 0.5), seed=seed, **options)
    weights = [1.0, 3.0, 0.5][:len(queries)] if name == "weighted plan" else None
    allocated = t.allocate(t.plan(queries, weights), epsilon=0.7, delta=1e-6)
    results = t.execute(allocated)
    event = t.accountant.history()[-1].event
    unit = recorded_unit_sigma(event)
    assert unit == allocated.sigma_star
    for r in results:
        assert r.sigma == scale_sigma(unit, r.effective_sensitivity)
        assert r.sigma == calibrate_gaussian(0.7, allocated.delta_gaussian,
                                             r.effective_sensitivity, allocated.method)
        used = [c for c in r.comparisons if c.method == allocated.method]
        assert all(c.sigma == r.sigma and c.ratio_to_used == 1.0 and c.private for c in used)


def _fake_calibration(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """calibrate_gaussian as seen by the plan and the mechanisms: right the first time, 1.5×
    too large every time after. Returns the list of σ it handed out."""
    real = calibrate_gaussian
    given: list[float] = []

    def drifting(*args: Any, **kwargs: Any) -> Any:
        sigma = real(*args, **kwargs)
        sigma = sigma if not given else sigma * 1.5
        given.append(float(sigma))
        return sigma

    monkeypatch.setattr(plan_module, "calibrate_gaussian", drifting)
    monkeypatch.setattr(mechanism_module, "calibrate_gaussian", drifting)
    return given


@pytest.mark.parametrize("large", [False, True])
def test_a_second_calibration_cannot_change_the_noise(
    monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """A calibration that drifts between calls: the release still noises with the σ its spend
    recorded, because σ is calibrated once (before, the mechanism calibrated again and noised
    with the drifted σ)."""
    given = _fake_calibration(monkeypatch)
    t = PrivateTable(_data(), budget=(50.0, 0.5), seed=3, large_domain_cells=2 if large
                     else 10**6)
    r = t.mean("x", (0, 10), by=["g"], domain=DOMAIN, epsilon=0.7, delta=1e-6)
    event = t.accountant.history()[-1].event
    assert isinstance(event, GaussianEvent) and given == [event.sigma]
    assert r.sigma == scale_sigma(event.sigma, r.effective_sensitivity)


@pytest.mark.parametrize("large", [False, True])
def test_noise_other_than_the_recorded_raises_before_the_spend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """The plan's σ_q made one ulp larger than its spend's σ* implies: InternalError, and the
    ledger is unchanged."""
    monkeypatch.setattr(plan_module, "scale_sigma",
                        lambda s, d: math.nextafter(scale_sigma(s, d), math.inf))
    acc = PrivacyAccountant((50.0, 0.5), ledger=tmp_path / "ledger.sqlite")
    t = PrivateTable(_data(), accountant=acc, large_domain_cells=2 if large else 10**6)
    with pytest.raises(InternalError, match=r"mean\(x\): the release would add noise other"):
        t.mean("x", (0, 10), by=["g"], domain=DOMAIN, epsilon=0.7, delta=1e-6)
    assert acc.history() == ()


def test_a_mechanism_with_other_noise_raises_before_the_spend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = GaussianMechanism.from_sigma

    def off(sigma: float, sensitivity: float = 1.0, **kwargs: Any) -> GaussianMechanism:
        return real(sigma * 2.0, sensitivity, **kwargs)

    monkeypatch.setattr(GaussianMechanism, "from_sigma", off)
    t = PrivateTable(_data(), budget=(50.0, 0.5), seed=1)
    with pytest.raises(InternalError, match=r"count: the release would add noise other"):
        t.count(epsilon=0.7, delta=1e-6)
    assert t.accountant.history() == ()


def test_the_recorded_sigma_is_read_from_the_event() -> None:
    t = PrivateTable(_data(), budget=(50.0, 0.5), seed=1)
    allocated = t.allocate(t.plan([Count(), Mean("x", (0, 10))]), epsilon=0.7, delta=1e-6)
    noises = [prepare_noise(aq, allocated, True, 1) for aq in allocated.queries]
    event = allocated.event()
    check_recorded_sigma(allocated, event, noises)  # the plan's own event: fine
    assert recorded_unit_sigma(None) is None
    bad: list[Any] = [
        None,  # nothing recorded for noised queries
        GaussianEvent(math.nextafter(allocated.sigma_star, 0.0), 1.0),
        ComposedEvent((GaussianEvent(allocated.sigma_star), GaussianEvent(1.0))),
    ]
    for other in bad:
        with pytest.raises(InternalError):
            check_recorded_sigma(allocated, other, noises)
