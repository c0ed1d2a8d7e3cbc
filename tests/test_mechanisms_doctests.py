"""The docstring examples of the mechanisms and their profiles and calibration run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "approxdp.calibration.discrete_gaussian",
    "approxdp.mechanisms.discrete_gaussian",
    "approxdp.mechanisms.gaussian",
    "approxdp.mechanisms.truncated_laplace",
    "approxdp.profiles.discrete_gaussian",
    "approxdp.profiles.laplace",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
