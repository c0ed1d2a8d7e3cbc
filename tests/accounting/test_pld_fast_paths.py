"""The ε path's cheaper forms compute the same floats as what they replace: ``quiet`` (a
cheap ``np.errstate(all="ignore")``), ``check_interval``'s plain-float path, the quadrature's
``_linspace``, and ``composed_moments``' one-part path and named-tuple result."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from approxdp._validation import check_interval, check_parameter
from approxdp.accounting.pld.estimates import _linspace
from approxdp.accounting.pld.grid import discretize
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.quiet import quiet
from approxdp.accounting.pld.supports import Moments, Support, composed_moments
from approxdp.errors import InvalidParameterError


def test_quiet_silences_and_restores() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with quiet():
            over = np.exp(np.array([1000.0]))
            zero = np.log(np.array([0.0]))
            nan = np.array([np.inf]) - np.array([np.inf])
        assert over[0] == math.inf and zero[0] == -math.inf and math.isnan(nan[0])
        with pytest.raises(RuntimeWarning):  # the caller's state is back on exit
            np.exp(np.array([1000.0]))


def test_quiet_nests_and_restores_after_an_exception() -> None:
    before = np.geterr()
    with np.errstate(over="raise"):
        with pytest.raises(ValueError), quiet():
            with quiet():
                np.exp(np.array([1000.0]))  # (silenced: no FloatingPointError)
            raise ValueError
        assert np.geterr()["over"] == "raise"  # (the enclosing state, not quiet's)
        with pytest.raises(FloatingPointError):
            np.exp(np.array([1000.0]))
    assert np.geterr() == before


def test_quiet_values_are_errstate_values() -> None:
    x = np.linspace(-800.0, 800.0, 4001)
    with np.errstate(all="ignore"):
        want = (np.exp(x), np.log(np.maximum(x, 0.0)), np.expm1(x) / x)
    with quiet():
        got = (np.exp(x), np.log(np.maximum(x, 0.0)), np.expm1(x) / x)
    for a, b in zip(want, got, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("value", [1e-5, 0.5, 1e-300, 0.999999])
def test_plain_float_check_is_the_array_check(value: float) -> None:
    fast = check_parameter("delta", value)
    slow = check_parameter("delta", np.float64(value))  # (not a plain float: the array path)
    assert fast.dtype == slow.dtype == np.float64 and fast.shape == slow.shape == ()
    assert float(fast) == float(slow) == value


@pytest.mark.parametrize("value", [0.0, 1.0, -1e-5, 2.0, math.nan, math.inf])
def test_plain_float_out_of_range_still_raises(value: float) -> None:
    with pytest.raises(InvalidParameterError, match="delta must be in"):
        check_parameter("delta", value)


def test_plain_float_interval_ends() -> None:
    assert float(check_interval("x", 0.0, 0.0, 1.0)) == 0.0  # (closed end)
    assert float(check_interval("x", math.inf, 0.0, math.inf)) == math.inf
    with pytest.raises(InvalidParameterError):
        check_interval("x", 0.0, 0.0, 1.0, low_open=True)
    with pytest.raises(InvalidParameterError):
        check_interval("x", math.inf, 0.0, math.inf, high_open=True)


def test_linspace_is_numpys() -> None:
    rng = random.Random(7)
    cases = [(-7.5, 7.5, 121), (0.0, 1.0, 2), (-1e-3, 3e-3, 4097), (1.0, 1.0 + 1e-12, 5)]
    for _ in range(2000):
        lo = rng.uniform(-50.0, 50.0) * 10.0 ** rng.randint(-6, 2)
        cases.append((lo, lo + rng.uniform(1e-9, 100.0) * 10.0 ** rng.randint(-6, 2),
                      rng.randint(2, 4100)))
    for lo, hi, n in cases:
        want, got = np.linspace(lo, hi, n), _linspace(lo, hi, n)
        assert got.dtype == want.dtype and np.array_equal(got, want), (lo, hi, n)
        assert np.array_equal(np.signbit(got), np.signbit(want))


def test_linspace_special_cases_go_to_numpy() -> None:
    for lo, hi, n in [(1.0, 1.0, 5), (2.0, 1.0, 4), (0.0, 5e-324, 3)]:
        assert np.array_equal(_linspace(lo, hi, n), np.linspace(lo, hi, n))


def _support(direction: str) -> Support:
    return Support(discretize(SubsampledLoss(GaussianLoss(0.2), 1e-5, direction), 6e-8, 1e-12))


@pytest.mark.parametrize("u", [0.0, 1.0, 2526.6, -40.0, 1e5])
def test_one_part_moments_are_the_loop_sums(u: float) -> None:
    sup = _support("remove")
    got = composed_moments([(sup, 1000)], u)
    lm, m, v = sup.moments(u)
    k = mean = var = 0.0  # (the loop over parts, as for two or more)
    k += 1000 * lm
    mean += 1000 * m
    var += 1000 * v
    assert isinstance(got, Moments) and got == Moments(k, mean, var)
    assert (got.k, got.mean, got.var) == (k, mean, var)
    two = composed_moments([(sup, 600), (sup, 400)], u)
    assert math.isclose(two.k, got.k, rel_tol=1e-14) and two.var >= 0.0
