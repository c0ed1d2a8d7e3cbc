"""An Opacus accountant backed by approxdp's certified PLD accountant.

:class:`ApproxDPAccountant` has the interface of Opacus's accountants (``IAccountant``:
``history``, ``step(noise_multiplier=, sample_rate=)``, ``get_epsilon(delta)``, ``__len__``,
``mechanism()``, ``state_dict()`` / ``load_state_dict()`` and the optimizer hook
``get_optimizer_hook_fn``). :func:`register` adds it to Opacus's registry under the name
``"approxdp"``, so that ``PrivacyEngine(accountant="approxdp")`` uses it, checkpoints included.
:func:`get_noise_multiplier` is the search Opacus users call before training, answered by
:func:`~approxdp.accounting.calibrate_dpsgd`: the least σ whose certified ε is at most the
target (Opacus's bisection stops within ``epsilon_tolerance`` of it).

Steps are recorded by :class:`~approxdp.accounting.dpsgd.training.TrainingAccountant` (O(1) a
step, phases of equal (σ, q)); ε is the PLD accountant's, never below the true ε and within
about 0.1 % of it (Doroshenko et al. 2022, https://arxiv.org/abs/2207.04380), where Opacus's
RDP accountant is 5–10 % above it and its PRV accountant's ``eps_error`` is 0.01 absolute.

This module does not import Opacus (nor torch) until :func:`register` is called.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any, Final

from approxdp.accounting.dpsgd.accountants import calibrate_dpsgd
from approxdp.accounting.dpsgd.phases import check_sample_rate
from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.pld.accounting import DEFAULT_PRECISION
from approxdp.errors import (
    InvalidParameterError,
    MissingDependencyError,
    ParameterTypeError,
    UnknownMethodError,
)

__all__ = ["MECHANISM", "ApproxDPAccountant", "get_noise_multiplier", "register"]

#: The name ``PrivacyEngine(accountant=...)`` takes once :func:`register` has run.
MECHANISM: Final = "approxdp"
#: Mechanisms whose state dicts hold the same history, (σ, q, steps) of Poisson-sampled steps:
#: a run checkpointed with Opacus's own accountants continues here.
_OPACUS_MECHANISMS: Final = ("rdp", "prv", "gdp")
#: Tuning options of Opacus's accountants, accepted by :meth:`ApproxDPAccountant.get_epsilon`
#: and unused (the PLD accountant is tuned by ``precision``).
_FOREIGN_OPTIONS: Final = frozenset({"alphas", "eps_error", "delta_error"})


class ApproxDPAccountant:
    """Opacus's accountant interface on approxdp's training accountant.

    Args:
        sampling: ``"poisson"`` (default: Opacus's DPDataLoader samples each example with
            probability q; add/remove neighbours) or ``"without-replacement"`` (substitution
            neighbours, sensitivity 2C).
        precision: the PLD's target relative excess of ε over the true value (default 1e-3).

    Example:
        >>> acct = ApproxDPAccountant()
        >>> for _ in range(14063):
        ...     acct.step(noise_multiplier=1.1, sample_rate=256 / 60000)
        >>> round(acct.get_epsilon(delta=1e-5), 3), len(acct), acct.mechanism()
        (2.382, 14063, 'approxdp')
    """

    def __init__(self, *, sampling: str = "poisson",
                 precision: float = DEFAULT_PRECISION) -> None:
        self._acct = TrainingAccountant(sampling=sampling, precision=precision)

    @classmethod
    def mechanism(cls) -> str:
        """The accounting mechanism's name, ``"approxdp"``."""
        return MECHANISM

    @property
    def training_accountant(self) -> TrainingAccountant:
        """The underlying :class:`~approxdp.accounting.dpsgd.training.TrainingAccountant`."""
        return self._acct

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """The run as Opacus records it: [(noise_multiplier, sample_rate, steps), ...]. A copy:
        assign a new list to replace the run (as Opacus's ``get_noise_multiplier`` does)."""
        return self._acct.history

    @history.setter
    def history(self, value: Sequence[Sequence[Any]]) -> None:
        replacement = TrainingAccountant(
            sampling=self._acct.sampling, precision=self._acct.precision, phases=value
        )  # validated whole before anything changes
        self._acct = replacement

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimizer step (O(1)); see
        :meth:`~approxdp.accounting.dpsgd.training.TrainingAccountant.step`."""
        self._acct.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """ε spent so far at δ: a certified upper bound (PLD accountant).

        Opacus's accountants take tuning options (``alphas`` for RDP, ``eps_error`` and
        ``delta_error`` for PRV); they are accepted and unused here. Anything else is an
        error.
        """
        unknown = sorted(set(kwargs) - _FOREIGN_OPTIONS)
        if args or unknown:
            raise ParameterTypeError(
                "get_epsilon takes delta (and Opacus's alphas, eps_error, delta_error, which "
                f"it ignores), got extra {[*map(repr, args), *unknown]}"
            )
        return float(self._acct.epsilon(delta).epsilon)

    def get_delta(self, epsilon: float) -> float:
        """δ spent so far at ε: a certified upper bound (PLD accountant)."""
        return float(self._acct.delta(epsilon).delta)

    def epsilon(self, delta: Any) -> Guarantee:
        """ε at δ as a labelled :class:`~approxdp.accounting.Guarantee` with its certified
        bracket (an array of δ gives arrays)."""
        return self._acct.epsilon(delta)

    def delta(self, epsilon: Any) -> Guarantee:
        """δ at ε as a labelled :class:`~approxdp.accounting.Guarantee`."""
        return self._acct.delta(epsilon)

    def __len__(self) -> int:
        """The number of optimizer steps recorded (``IAccountant``'s documented meaning;
        Opacus's own accountants return the number of history entries)."""
        return len(self._acct)

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The hook Opacus's ``PrivacyEngine`` attaches to its ``DPOptimizer``: each optimizer
        step records one step at the optimizer's noise multiplier and ``sample_rate`` times
        its accumulated iterations (Opacus's own rule, for Poisson sampling on one or several
        nodes)."""

        def hook_fn(optim: Any) -> None:
            self.step(
                noise_multiplier=optim.noise_multiplier,
                sample_rate=sample_rate * optim.accumulated_iterations,
            )

        return hook_fn

    def state_dict(self, destination: MutableMapping[str, Any] | None = None) -> Any:
        """The accountant's state, as Opacus stores it in ``PrivacyEngine.save_checkpoint``:
        ``history`` and ``mechanism``, plus ``approxdp`` (sampling and precision)."""
        out: MutableMapping[str, Any] = OrderedDict() if destination is None else destination
        out["history"] = self.history
        out["mechanism"] = self.mechanism()
        out["approxdp"] = self._acct.state_dict()
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Replace the run by the one in ``state_dict``: one written by this class, or by
        Opacus's RDP, PRV or GDP accountant (same history of Poisson-sampled steps). Checked
        whole before anything changes.

        Raises:
            InvalidParameterError: an empty or foreign state, a different sampling, an invalid
                history (a ``ValueError``, as Opacus raises).
        """
        if not isinstance(state_dict, Mapping) or not state_dict:
            raise InvalidParameterError(
                "state dict is either None or empty and hence cannot be loaded"
            )
        for key in ("history", "mechanism"):
            if key not in state_dict:
                raise InvalidParameterError(f"state_dict does not have the key {key!r}")
        mechanism = state_dict["mechanism"]
        if mechanism == MECHANISM and "approxdp" in state_dict:
            acct = TrainingAccountant.from_state_dict(state_dict["approxdp"])
            if acct.sampling != self._acct.sampling:
                raise InvalidParameterError(
                    f"the state is of a run with sampling={acct.sampling!r}; this accountant "
                    f"has sampling={self._acct.sampling!r}"
                )
            if acct.history != [tuple(h) for h in state_dict["history"]]:
                raise InvalidParameterError(
                    "state_dict's history and its approxdp state disagree; it was edited"
                )
        elif mechanism == MECHANISM or mechanism in _OPACUS_MECHANISMS:
            if self._acct.sampling != "poisson" and mechanism != MECHANISM:
                raise InvalidParameterError(
                    f"a {mechanism!r} history is of Poisson-sampled steps; this accountant has "
                    f"sampling={self._acct.sampling!r}"
                )
            acct = TrainingAccountant(
                sampling=self._acct.sampling, precision=self._acct.precision,
                phases=state_dict["history"],
            )
        else:
            raise InvalidParameterError(
                f"state_dict of {mechanism!r} cannot be loaded into the {MECHANISM!r} "
                f"accountant (it reads {MECHANISM!r}, {', '.join(map(repr, _OPACUS_MECHANISMS))})"
            )
        self._acct = acct

    def __repr__(self) -> str:
        return f"ApproxDPAccountant({self._acct!r})"


def register(*, force: bool = False) -> None:
    """Register :class:`ApproxDPAccountant` with Opacus as ``"approxdp"``, so that
    ``PrivacyEngine(accountant="approxdp")`` and Opacus's ``get_noise_multiplier(...,
    accountant="approxdp")`` use it; it also becomes a virtual subclass of Opacus's
    ``IAccountant``. Calling it again is harmless.

    Args:
        force: replace another accountant already registered as ``"approxdp"``.

    Raises:
        MissingDependencyError: Opacus (>= 1.5, which has the registry) is not installed.
        InvalidParameterError: another class is registered as ``"approxdp"`` and not ``force``.
    """
    try:
        from opacus.accountants import IAccountant
        from opacus.accountants import registry as opacus_registry
    except ImportError as exc:
        raise MissingDependencyError(
            "registering with Opacus needs Opacus >= 1.5: pip install 'approxdp[opacus]'"
        ) from exc
    registered = getattr(opacus_registry, "_ACCOUNTANTS", {})
    current = registered.get(MECHANISM)
    if current is not None and current is not ApproxDPAccountant and not force:
        raise InvalidParameterError(
            f"Opacus already has an accountant registered as {MECHANISM!r} "
            f"({current.__module__}.{current.__qualname__}); pass force=True to replace it"
        )
    opacus_registry.register_accountant(MECHANISM, ApproxDPAccountant, force=True)
    IAccountant.register(ApproxDPAccountant)


def _steps_of(epochs: Any, sample_rate: float) -> int:
    """Steps of ``epochs`` epochs at q: epochs/q, rounded up unless within 1e-9 of an integer
    (Opacus's ``int(epochs / sample_rate)`` can lose a step to float error: 3/(1/469))."""
    if isinstance(epochs, bool) or not isinstance(epochs, int | float) or not (
        math.isfinite(epochs) and epochs > 0
    ):
        raise InvalidParameterError(f"epochs must be a number > 0, got epochs={epochs!r}")
    x = epochs / sample_rate
    nearest = round(x)
    return max(1, nearest if abs(x - nearest) <= 1e-9 * x else math.ceil(x))


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: float | None = None,
    steps: int | None = None,
    accountant: str = MECHANISM,
    epsilon_tolerance: float = 0.01,
    sampling: str = "poisson",
    **kwargs: Any,
) -> float:
    """The least noise multiplier whose certified ε after the run is ≤ ``target_epsilon``.

    Opacus's ``opacus.accountants.utils.get_noise_multiplier`` with the same keywords,
    answered by :func:`~approxdp.accounting.calibrate_dpsgd` (never under-noises; within
    about 0.1 % of the least σ that is truly (ε, δ)-DP). ``epsilon_tolerance`` (the width of
    Opacus's bisection) and Opacus's accountant options in ``kwargs`` are accepted and not
    needed.

    Args:
        target_epsilon: ε > 0; target_delta: δ in (0, 1); sample_rate: q in (0, 1].
        epochs: epochs of training (steps = epochs/q, rounded up), or
        steps: the number of steps (exactly one of the two).
        accountant: ``"approxdp"`` (the only one; Opacus's own names are refused).
        sampling: ``"poisson"`` (default) or ``"without-replacement"``.

    Example:
        >>> round(get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5,
        ...                            sample_rate=256 / 60000, steps=14063), 3)
        0.969
    """
    if accountant != MECHANISM:
        raise UnknownMethodError(
            f"accountant must be {MECHANISM!r}, got accountant={accountant!r} (Opacus's own "
            "accountants: opacus.accountants.utils.get_noise_multiplier)"
        )
    unknown = sorted(set(kwargs) - _FOREIGN_OPTIONS)
    if unknown:
        raise ParameterTypeError(f"get_noise_multiplier got unexpected options {unknown}")
    if isinstance(epsilon_tolerance, bool) or not isinstance(epsilon_tolerance, int | float) or (
        not epsilon_tolerance > 0
    ):
        raise InvalidParameterError(
            f"epsilon_tolerance must be > 0, got epsilon_tolerance={epsilon_tolerance!r}"
        )
    if (steps is None) == (epochs is None):
        raise InvalidParameterError("give exactly one of epochs and steps")
    if steps is None:
        steps = _steps_of(epochs, check_sample_rate(sample_rate))
    return calibrate_dpsgd(
        epsilon=target_epsilon, delta=target_delta, sample_rate=sample_rate, steps=steps,
        sampling=sampling,
    )
