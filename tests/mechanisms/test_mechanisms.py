"""Mechanism objects: shapes, marking of simulation output, events, bad-input tables."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

from approxdp import (
    ComposedGaussian,
    DiscreteGaussianEvent,
    DiscreteGaussianMechanism,
    EpsilonDeltaEvent,
    GaussianMechanism,
    InvalidParameterError,
    LaplaceEvent,
    LaplaceMechanism,
    ParameterTypeError,
    SimulatedArray,
    SimulatedFloat,
    SimulatedInt,
    TruncatedLaplaceMechanism,
    UnknownMethodError,
    is_secure,
)
from approxdp.calibration import calibrate_discrete_gaussian
from approxdp.errors import DataError
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


@pytest.mark.parametrize(("make", "scalar", "array"), [
    (lambda: GaussianMechanism(1.0, 1e-5), float, np.float64),
    (lambda: LaplaceMechanism(1.0, 1.0), float, np.float64),
    (lambda: TruncatedLaplaceMechanism(1.0, 1e-5, 1.0), float, np.float64),
    (lambda: DiscreteGaussianMechanism(1.0, 1e-5, 2), int, np.int64),
])
def test_release_returns_what_its_overloads_declare(make, scalar, array):
    """Issue 25: @overload where the return type follows the input — a number gives a number,
    an array an array — and the runtime agrees with the declaration."""
    mech = make()
    declared = [o.__annotations__["return"] for o in typing.get_overloads(type(mech).release)]
    assert declared == [scalar.__name__, f"npt.NDArray[np.{array.__name__}]"]
    assert isinstance(mech.release(3), scalar)
    out = mech.release([1, 2, 3])
    assert isinstance(out, np.ndarray) and out.dtype == array


def test_composed_gaussian_profile_returns_what_its_overloads_declare():
    composed = ComposedGaussian(2.0, 3)
    for method, value in ((composed.delta, 1.0), (composed.epsilon, 1e-5),
                          (composed.pdp_delta, 1.0)):
        declared = [o.__annotations__["return"]
                    for o in typing.get_overloads(getattr(ComposedGaussian, method.__name__))]
        assert declared == ["float", "npt.NDArray[np.float64]"]
        assert type(method(value)) is float
        assert isinstance(method([value, value]), np.ndarray)


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
    assert lap.confidence_interval(0.05, secure=False) == pytest.approx(1.5 * math.log(20))
    g = lap.secure_noise(1).lattice.g
    assert 0 <= lap.confidence_interval(0.05) - 1.5 * math.log(20) <= 3 * g
    tl = TruncatedLaplaceMechanism(1.0, 1e-3, 1.0)
    assert isinstance(tl.event(), EpsilonDeltaEvent) and tl.event().delta == 1e-3
    assert tl.confidence_interval(1e-9) <= tl.tau
    assert tl.tau >= tl.theorem_tau()
    assert tl.tau <= tl.theorem_tau() * (1 + 1e-3)


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
    noise = secure_gaussian_noise(1.0, 3.73, 1)
    assert noise.sigma / (noise.sensitivity * noise.lattice.g) >= 3.73 / 1.0
    assert noise.sigma <= 3.73 * (1 + 2e-3)
    vec = secure_gaussian_noise(1.0, 3.73, 10_000)
    assert vec.sigma / (vec.sensitivity * vec.lattice.g) >= 3.73
    assert vec.sigma <= 3.73 * (1 + 2e-3)  # dominance, not a zCDP conversion: no loss
    assert vec.certificate.mu < 1.0 / 3.73


def test_zcdp_delta_bounds():
    # ρ-zCDP at ε: the Canonne et al. 2020 bound is below the classic exp(−(ε−ρ)²/(4ρ)).
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


# (constructor, args, error, pattern): the pattern names the parameter and the bad value.
BAD_CONSTRUCTIONS = [
    (LaplaceMechanism, (0.0, 1.0), InvalidParameterError, r"epsilon.*epsilon=0"),
    (LaplaceMechanism, (-1.0, 1.0), InvalidParameterError, r"epsilon.*-1"),
    (LaplaceMechanism, (math.inf, 1.0), InvalidParameterError, r"epsilon.*inf"),
    (LaplaceMechanism, ("1", 1.0), ParameterTypeError, r"epsilon.*'1'"),
    (LaplaceMechanism, (1.0, 0.0), InvalidParameterError, r"sensitivity.*=0"),
    (LaplaceMechanism, (1.0, math.nan), InvalidParameterError, r"sensitivity.*nan"),
    (TruncatedLaplaceMechanism, (1.0, 0.6, 1.0), InvalidParameterError, r"delta.*0\.5\].*0\.6"),
    (TruncatedLaplaceMechanism, (1.0, 0.0, 1.0), InvalidParameterError, r"delta.*=0"),
    (TruncatedLaplaceMechanism, (1.0, None, 1.0), ParameterTypeError, r"delta.*None"),
    (DiscreteGaussianMechanism, (1.0, 1e-5, 0.5), InvalidParameterError, r"sensitivity.*0\.5"),
    (DiscreteGaussianMechanism, (1.0, 1e-5, 0), InvalidParameterError, r"sensitivity.*=0"),
    (DiscreteGaussianMechanism, (1.0, 1e-5, 2.0**31), InvalidParameterError, r"sensitivity"),
    (DiscreteGaussianMechanism, (1.0, 1.0, 1), InvalidParameterError, r"delta.*=1"),
    (DiscreteGaussianMechanism, (1.0, True, 1), ParameterTypeError, r"delta.*True"),
    (GaussianMechanism, (1.0, 1e-5, 1.0, "foo"), UnknownMethodError, r"method='foo'"),
    (GaussianMechanism, (1.0, 1e-5, 1.0, 3), ParameterTypeError, r"method.*3"),
    (GaussianMechanism, (1.0, 0.0), InvalidParameterError, r"delta.*=0"),
    (GaussianMechanism, (1.0, 1e-5, -2.0), InvalidParameterError, r"sensitivity.*-2"),
]


@pytest.mark.parametrize(("cls", "args", "error", "pattern"), BAD_CONSTRUCTIONS)
def test_bad_constructions(cls, args, error, pattern):
    with pytest.raises(error, match=pattern):
        cls(*args)


BAD_CALLS = [
    (lambda: LaplaceMechanism(1.0).release(math.nan), InvalidParameterError, r"value=nan"),
    (lambda: GaussianMechanism(1.0, 1e-5).release([1.0, math.inf]), InvalidParameterError,
     r"value=inf"),
    (lambda: LaplaceMechanism(1.0).release("3"), ParameterTypeError, r"value.*'3'"),
    (lambda: LaplaceMechanism(1.0).release(1.0, rng=42), ParameterTypeError, r"rng.*42"),
    (
        lambda: LaplaceMechanism(1.0).release(1.0, rng=np.random.default_rng(), secure=True),
        InvalidParameterError,
        r"secure=True",
    ),
    (lambda: LaplaceMechanism(1.0).release(1.0, secure="yes"), ParameterTypeError,
     r"secure.*'yes'"),
    (lambda: LaplaceMechanism(1.0).release(1e300), DataError, r"value=1e\+300"),
    (lambda: DiscreteGaussianMechanism(1.0, 1e-5).release([1, 1.5]), InvalidParameterError,
     r"integer.*value=1\.5"),
    (lambda: DiscreteGaussianMechanism(1.0, 1e-5).release(2**63 - 1), InvalidParameterError,
     r"2\^62"),
    (lambda: LaplaceMechanism(1.0).confidence_interval(0.0), InvalidParameterError, r"alpha=0"),
    (lambda: GaussianMechanism(1.0, 1e-5).confidence_interval(1.5), InvalidParameterError,
     r"alpha=1\.5"),
    (lambda: GaussianMechanism(1.0, 1e-5).confidence_interval(0.1, secure=1), ParameterTypeError,
     r"secure=1"),
    (lambda: LaplaceMechanism(1.0).secure_noise(0), InvalidParameterError, r"dimension=0"),
    (lambda: GaussianMechanism(1.0, 1e-5).secure_noise(2.5), ParameterTypeError,
     r"dimension.*2\.5"),
    (lambda: TruncatedLaplaceMechanism(1.0, 1e-3).confidence_interval(0.1, dimension=-1),
     InvalidParameterError, r"dimension=-1"),
    (lambda: DiscreteGaussianMechanism(1.0, 1e-5).sampler(0), InvalidParameterError,
     r"dimension=0"),
    (lambda: TruncatedLaplaceMechanism(1.0, 1e-3).privacy_profile(-1.0), InvalidParameterError,
     r"epsilon=-1"),
    (lambda: GaussianMechanism(1.0, 1e-5).privacy_profile("x"), ParameterTypeError,
     r"epsilon.*'x'"),
    (lambda: name_and_shame([1], 1.0), InvalidParameterError, r"delta=1"),
    (lambda: catastrophe([1], 0.1, rng=3), ParameterTypeError, r"rng.*3"),
    (lambda: calibrate_discrete_gaussian(1.0, 1e-5, -1.0), InvalidParameterError,
     r"sensitivity=-1"),
    (lambda: calibrate_discrete_gaussian(0.0, 1e-5, 1), InvalidParameterError, r"epsilon=0"),
    (lambda: calibrate_discrete_gaussian(1.0, 1e-5, 1, dimension=True), ParameterTypeError,
     r"dimension.*True"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), BAD_CALLS)
def test_bad_calls(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize("eps", [1e-6, 0.01, 1.0, 1.0001, 3.0, 50.0, 700.0, 709.0, 800.0, 1e4])
@pytest.mark.parametrize("delta", [0.5, 0.1, 1e-5, 1e-300, 5e-324])
def test_truncated_laplace_tau_is_finite_and_rounded_up(eps: float, delta: float) -> None:
    import mpmath as mp

    from approxdp.profiles.laplace import truncated_laplace_tau

    with mp.workdps(50):
        exact = mp.mpf(1) / eps * mp.log(1 + mp.expm1(eps) / (2 * mp.mpf(delta)))
        tau = truncated_laplace_tau(eps, delta)
        assert math.isfinite(tau)
        assert exact <= tau <= exact * (1 + 1e-11)


def test_truncated_laplace_at_huge_epsilon_builds() -> None:
    mech = TruncatedLaplaceMechanism(800.0, 1e-5)
    assert math.isfinite(mech.tau) and mech.tau > 0
