"""Mechanism objects: shapes, marking of simulation output, events, bad-input tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp import (
    DiscreteGaussianEvent,
    DiscreteGaussianMechanism,
    EpsilonDeltaEvent,
    InvalidParameterError,
    LaplaceEvent,
    LaplaceMechanism,
    ParameterTypeError,
    SimulatedArray,
    SimulatedFloat,
    SimulatedInt,
    TruncatedLaplaceMechanism,
    is_secure,
)
from approxdp.errors import DataError
from approxdp.mechanisms.discrete_gaussian_calibration import calibrate_discrete_gaussian
from approxdp.mechanisms.gaussian import secure_gaussian_noise
from approxdp.mechanisms.teaching import catastrophe, name_and_shame
from approxdp.profiles.discrete_gaussian import zcdp_delta
from approxdp.profiles.laplace import laplace_delta

FLOAT_MECHS = [
    lambda: LaplaceMechanism(1.0, 1.0),
    lambda: TruncatedLaplaceMechanism(1.0, 1e-5, 1.0),
]


@pytest.mark.parametrize("make", FLOAT_MECHS)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0,)])
def test_release_shapes_and_marking(make, shape):
    mech = make()
    value = np.ones(shape) if shape else 1.0
    secure = mech.release(value)
    sim = mech.release(value, rng=np.random.default_rng(0))
    unseeded = mech.release(value, secure=False)
    if shape:
        assert secure.shape == shape and type(secure) is np.ndarray
        assert isinstance(sim, SimulatedArray) and sim.shape == shape
        assert isinstance(unseeded, SimulatedArray)
        assert not is_secure(sim + 1)  # marking survives arithmetic
    else:
        assert type(secure) is float
        assert isinstance(sim, SimulatedFloat) and "secure=False" in repr(sim)
        assert isinstance(unseeded, SimulatedFloat)
    assert is_secure(secure) and not is_secure(sim) and not is_secure(unseeded)


def test_seeded_paths_reproduce():
    mech = LaplaceMechanism(1.0, 1.0)
    a = mech.release(np.zeros(5), rng=np.random.default_rng(42))
    b = mech.release(np.zeros(5), rng=np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)


def test_secure_lattice_outputs_are_multiples_of_granularity():
    mech = LaplaceMechanism(1.0, 1.0)
    g = mech.secure_noise(1).lattice.g
    out = np.array([mech.release(0.123456789) for _ in range(50)])
    np.testing.assert_array_equal(out / g, np.rint(out / g))


def test_discrete_gaussian_mechanism_integer_io():
    mech = DiscreteGaussianMechanism(1.0, 1e-5, 2)
    assert type(mech.release(5)) is int
    arr = mech.release(np.arange(6).reshape(2, 3))
    assert arr.shape == (2, 3) and arr.dtype == np.int64
    sim = mech.release(5, rng=np.random.default_rng(1))
    assert isinstance(sim, SimulatedInt) and not is_secure(sim)
    assert mech.release(np.float64(3.0)) is not None  # integral floats are accepted
    assert isinstance(mech.event(), DiscreteGaussianEvent)
    assert mech.scale == mech.sigma
    h = mech.confidence_interval(0.05)
    assert h == math.floor(h) and 1.5 * mech.sigma < h < 2.5 * mech.sigma


def test_events_and_profiles():
    lap = LaplaceMechanism(2.0, 3.0)
    assert lap.event() == LaplaceEvent(scale=1.5, sensitivity=3.0)
    assert lap.privacy_profile(2.0) == 0.0
    assert lap.privacy_profile(0.0) == pytest.approx(1 - math.exp(-1.0))
    assert lap.confidence_interval(0.05) == pytest.approx(1.5 * math.log(20))
    tl = TruncatedLaplaceMechanism(1.0, 1e-3, 1.0)
    assert isinstance(tl.event(), EpsilonDeltaEvent) and tl.event().delta == 1e-3
    assert tl.confidence_interval(1e-9) <= tl.tau
    assert tl.tau >= tl.theorem_tau(1)
    assert tl.tau <= tl.theorem_tau(1) * (1 + 1e-3)


def test_laplace_profile_matches_numeric_integral():
    from scipy import integrate

    b, eps0 = 1.0, 1.0
    for eps in [0.0, 0.3, 0.9]:

        def integrand(y, eps=eps):
            p = 0.5 * math.exp(-abs(y))
            q = 0.5 * math.exp(-abs(y - 1.0))
            return max(p - math.exp(eps) * q, 0.0)

        num = integrate.quad(integrand, -50, 50, points=[0.0, 1.0], limit=200)[0]
        assert laplace_delta(eps, b, eps0) == pytest.approx(num, rel=1e-8)


def test_secure_gaussian_noise_is_at_least_continuous_multiplier():
    noise = secure_gaussian_noise(1.0, 1e-5, 1.0, 3.73, 1)
    assert noise.sigma / (noise.sensitivity * noise.lattice.g) >= 3.73 / 1.0
    assert noise.sigma <= 3.73 * (1 + 2e-3)
    vec = secure_gaussian_noise(1.0, 1e-5, 1.0, 3.73, 10_000)
    assert vec.sigma / (vec.sensitivity * vec.lattice.g) >= 3.73
    assert vec.sigma <= 3.73 * 1.2  # zCDP conversion costs a little for vectors


def test_zcdp_delta_bounds():
    # ρ-zCDP at ε: the CKS20 bound is below the classic exp(−(ε−ρ)²/(4ρ)).
    for eps, rho in [(1.0, 0.05), (2.0, 0.2), (0.5, 0.01)]:
        assert zcdp_delta(eps, rho) <= math.exp(-((eps - rho) ** 2) / (4 * rho))


def test_teaching_examples():
    rng = np.random.default_rng(5)
    records = list(range(10_000))
    shamed = name_and_shame(records, 0.01, rng)
    assert 30 < len(shamed) < 200 and set(shamed) <= set(records)
    outs = [catastrophe(records, 0.5, np.random.default_rng(s)) for s in range(40)]
    assert any(o == records for o in outs) and any(o is None for o in outs)
    assert "never" in (name_and_shame.__doc__ or "").lower()
    assert "never" in (catastrophe.__doc__ or "").lower()


BAD_CONSTRUCTIONS = [
    (LaplaceMechanism, (0.0, 1.0), InvalidParameterError, "epsilon"),
    (LaplaceMechanism, (-1.0, 1.0), InvalidParameterError, "epsilon"),
    (LaplaceMechanism, (math.inf, 1.0), InvalidParameterError, "epsilon"),
    (LaplaceMechanism, ("1", 1.0), ParameterTypeError, "epsilon"),
    (LaplaceMechanism, (1.0, 0.0), InvalidParameterError, "sensitivity"),
    (LaplaceMechanism, (1.0, math.nan), InvalidParameterError, "sensitivity"),
    (TruncatedLaplaceMechanism, (1.0, 0.6, 1.0), InvalidParameterError, "delta"),
    (TruncatedLaplaceMechanism, (1.0, 0.0, 1.0), InvalidParameterError, "delta"),
    (TruncatedLaplaceMechanism, (1.0, None, 1.0), ParameterTypeError, "delta"),
    (DiscreteGaussianMechanism, (1.0, 1e-5, 1.5), InvalidParameterError, "sensitivity"),
    (DiscreteGaussianMechanism, (1.0, 1e-5, 0), InvalidParameterError, "sensitivity"),
    (DiscreteGaussianMechanism, (1.0, 1.0, 1), InvalidParameterError, "delta"),
    (DiscreteGaussianMechanism, (1.0, True, 1), ParameterTypeError, "delta"),
]


@pytest.mark.parametrize(("cls", "args", "error", "name"), BAD_CONSTRUCTIONS)
def test_bad_constructions(cls, args, error, name):
    with pytest.raises(error, match=name):
        cls(*args)


BAD_RELEASES = [
    (lambda: LaplaceMechanism(1.0).release(math.nan), InvalidParameterError, "value"),
    (lambda: LaplaceMechanism(1.0).release("3"), ParameterTypeError, "value"),
    (lambda: LaplaceMechanism(1.0).release(1.0, rng=42), ParameterTypeError, "rng"),
    (
        lambda: LaplaceMechanism(1.0).release(1.0, rng=np.random.default_rng(), secure=True),
        InvalidParameterError,
        "secure",
    ),
    (lambda: LaplaceMechanism(1.0).release(1.0, secure="yes"), ParameterTypeError, "secure"),
    (lambda: LaplaceMechanism(1.0).release(1e300), DataError, "value"),
    (lambda: DiscreteGaussianMechanism(1.0, 1e-5).release(1.5), InvalidParameterError, "integer"),
    (lambda: LaplaceMechanism(1.0).confidence_interval(0.0), InvalidParameterError, "alpha"),
    (lambda: name_and_shame([1], 1.0), InvalidParameterError, "delta"),
    (lambda: calibrate_discrete_gaussian(1.0, 1e-5, 1.5), InvalidParameterError, "sensitivity"),
    (lambda: calibrate_discrete_gaussian(0.0, 1e-5, 1), InvalidParameterError, "epsilon"),
]


@pytest.mark.parametrize(("call", "error", "name"), BAD_RELEASES)
def test_bad_releases(call, error, name):
    with pytest.raises(error, match=name):
        call()
