"""The ledger settings a release command takes (``release KIND`` and ``release batch``), and
the accountant it pays through.

A ledger's settings are fixed when it is created: its budget, mode and rule, and the shares of
the ``"gdp"`` privacy filter — ``--basic-share EPSILON DELTA`` (for δ no Gaussian covers,
e.g. partition selection after the first spend) and ``--rdp-share EPSILON DELTA`` with
``--rdp-orders A,B,...`` (a Rényi filter at orders fixed then, for subsampled Gaussians spent
one at a time: :class:`~approxdp.accounting.PrivacyAccountant`'s ``rdp_share``), and its
sub-budgets ``--sub-budget NAME=EPSILON,DELTA`` (ledgers of their own inside the budget,
``sub_budgets``). Given for an existing ledger file, each is checked against the one stored in
it: the same one is accepted (and changes nothing), another one is a one-line error naming the
option, what was asked and what is stored (:func:`make_accountant`). ``--ledger-sub NAME``
makes the release pay from sub-budget NAME (:func:`payer`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from approxdp.accounting import PrivacyAccountant, read_ledger_settings
from approxdp.accounting.budget.filter_rdp import DEFAULT_SHARE_ORDERS
from approxdp.cli.output import Number
from approxdp.errors import InvalidParameterError

__all__ = ["LedgerOptions", "creation_options", "ledger_options", "make_accountant", "parse_orders",
           "parse_sub_budgets", "payer"]

#: The largest Rényi order a share may use (the library's range for ``rdp_orders``).
MAX_ORDER = 1024.0


@dataclass(frozen=True, slots=True)
class LedgerOptions:
    """A release command's ledger settings (None: not given).

    Attributes:
        adaptivity: ``--adaptivity``.
        basic_share: ``--basic-share EPSILON DELTA``.
        rdp_share: ``--rdp-share EPSILON DELTA``.
        rdp_orders: ``--rdp-orders A,B,...`` (sorted, without repeats).
        sub_budgets: ``--sub-budget NAME=EPSILON,DELTA`` (repeatable), by name.
        ledger_sub: ``--ledger-sub NAME``: the sub-budget the release pays from.
    """

    adaptivity: str | None = None
    basic_share: tuple[float, float] | None = None
    rdp_share: tuple[float, float] | None = None
    rdp_orders: tuple[float, ...] | None = None
    sub_budgets: dict[str, tuple[float, float]] | None = None
    ledger_sub: str | None = None


def parse_orders(text: str | None) -> tuple[float, ...] | None:
    """``--rdp-orders`` (``"2,4,8"``) as sorted orders without repeats (None: not given).

    Raises:
        InvalidParameterError: not a comma-separated list of numbers in (1, 1024].
    """
    if text is None:
        return None
    try:
        orders = [float(part) for part in text.split(",")]
    except ValueError:
        orders = []
    if not orders or any(not (1.0 < a <= MAX_ORDER) or math.isnan(a) for a in orders):
        raise InvalidParameterError(
            f"--rdp-orders must be Rényi orders in (1, {MAX_ORDER:g}] separated by commas, "
            f"e.g. --rdp-orders 2,4,8,16, got {text!r}"
        )
    return tuple(sorted(set(orders)))


#: A sub-budget's name: what a ledger file's name may carry (``study.NAME.sqlite``).
_SUB_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def parse_sub_budgets(specs: tuple[str, ...] | list[str]) -> dict[str, tuple[float, float]] | None:
    """``--sub-budget NAME=EPSILON,DELTA`` options as ``{name: (ε, δ)}`` (None: none given).
    The ranges of ε and δ are the library's (:class:`~approxdp.accounting.PrivacyAccountant`
    checks them, with the whole split, when the ledger is created).

    Raises:
        InvalidParameterError: a spec not of that form, a name outside ``[A-Za-z0-9_-]``
            (1 to 64 characters), a value that is not a finite number, or a name given twice.
    """
    if not specs:
        return None
    out: dict[str, tuple[float, float]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        parts = values.split(",")
        try:
            pair = (float(parts[0]), float(parts[1])) if len(parts) == 2 else None
        except ValueError:
            pair = None
        if (not sep or not _SUB_NAME.fullmatch(name.strip()) or pair is None
                or not all(math.isfinite(v) for v in pair)):
            raise InvalidParameterError(
                "--sub-budget must look like NAME=EPSILON,DELTA (NAME of letters, digits, - "
                f"and _, at most 64; two finite numbers), e.g. --sub-budget reports=0.5,1e-7, "
                f"got {spec!r}"
            )
        if name.strip() in out:
            raise InvalidParameterError(f"--sub-budget {name.strip()!r} is given twice")
        out[name.strip()] = pair
    return out


def _orders(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    try:
        return parse_orders(value)
    except InvalidParameterError as exc:
        raise click.BadParameter(str(exc).removeprefix("--rdp-orders "), ctx, param) from None


_DEFAULT_ORDERS = ",".join(f"{a:g}" for a in DEFAULT_SHARE_ORDERS)


def ledger_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--basic-share``, ``--rdp-share``, ``--rdp-orders``, ``--sub-budget`` and
    ``--ledger-sub``, handed to the command as one :class:`LedgerOptions` (parameter
    ``shares``; ``--adaptivity`` stays the command's own)."""
    return _options(func, subs=True)


def creation_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`ledger_options` without ``--ledger-sub``: for a command that creates a ledger
    but releases nothing itself (``serve``)."""
    return _options(func, subs=False)


def _options(func: Callable[..., Any], *, subs: bool) -> Callable[..., Any]:

    @functools.wraps(func)
    def wrapper(*args: Any, basic_share: tuple[float, float] | None,
                rdp_share: tuple[float, float] | None, rdp_orders: tuple[float, ...] | None,
                sub_budget_specs: tuple[str, ...], ledger_sub: str | None = None,
                **kwargs: Any) -> Any:
        shares = LedgerOptions(kwargs.get("adaptivity"), basic_share, rdp_share, rdp_orders,
                               parse_sub_budgets(sub_budget_specs), ledger_sub)
        return func(*args, shares=shares, **kwargs)

    pair = (Number.of("epsilon"), Number.of("delta_cost"))
    if subs:
        wrapper = click.option(
            "--ledger-sub", default=None, metavar="NAME",
            help="Pay for the release from sub-budget NAME of the ledger (--sub-budget): it "
                 "never takes more than that sub-budget's own (ε, δ), whatever the others "
                 "spend.")(wrapper)
    wrapper = click.option(
        "--sub-budget", "sub_budget_specs", multiple=True, metavar="NAME=EPSILON,DELTA",
        help="For a new ledger (fixed when it is created; repeatable): a sub-budget, a "
             "ledger of its own inside the budget, e.g. one per team or training run; spends "
             "in different sub-budgets may be interleaved in any order. Its (ε, δ) is "
             "reserved whether or not it is used. An existing ledger keeps its own.")(wrapper)
    wrapper = click.option(
        "--rdp-orders", callback=_orders, default=None, metavar="A,B,...",
        help=f"With --rdp-share: its Rényi orders, each in (1, {MAX_ORDER:g}], fixed when the "
             f"ledger is created (default {_DEFAULT_ORDERS}). Fewer orders near the best one "
             "of your run leave each more of the share's δ.")(wrapper)
    wrapper = click.option(
        "--rdp-share", type=pair, default=None, metavar="EPSILON DELTA",
        help="For a new ledger (fixed when it is created): the part of the budget kept for a "
             "Rényi filter, which charges subsampled Gaussians (DP-SGD steps) spent one at a "
             "time their Rényi divergence instead of their Gaussian's. Worth it for long "
             "runs (thousands of steps) at ε of about 2 or more; a run whose σ, q and T are "
             "fixed before it starts costs less committed as one plan. An existing ledger "
             "keeps its own (the same one may be repeated; another is refused).")(wrapper)
    return click.option(
        "--basic-share", type=pair, default=None, metavar="EPSILON DELTA",
        help="For a new ledger (fixed when it is created): the part of the budget kept "
             "for δ that no Gaussian covers, e.g. partition selection (a histogram or "
             "grouped query without --domain) after the ledger's first spend; it costs "
             "the Gaussian releases the room it takes.")(wrapper)


def _check_stored(ledger: Path, options: LedgerOptions, composition: str | None) -> None:
    """InvalidParameterError for a setting that differs from the one stored in ``ledger``."""
    settings = read_ledger_settings(ledger)
    where = f"ledger {str(ledger)!r}"
    share = None if options.basic_share is None else tuple(map(float, options.basic_share))
    # a ledger written before privacy filters (no mode stored) takes the mode and rule asked
    # for: PrivacyAccountant re-certifies it
    if settings.adaptivity is not None:
        for flag, asked, stored in (("--composition", composition, settings.composition),
                                    ("--adaptivity", options.adaptivity, settings.adaptivity),
                                    ("--basic-share", share, settings.basic_share)):
            if asked is not None and asked != stored:
                raise InvalidParameterError(
                    f"{flag} {asked} differs from the {flag[2:]} {stored!r} stored in {where}; "
                    f"leave out {flag} to use it"
                )
    rdp = None if options.rdp_share is None else tuple(map(float, options.rdp_share))
    if rdp is not None and rdp != settings.rdp_share:
        stored_text = ("no Rényi share" if settings.rdp_share is None else
                       "the Rényi share ({:g}, {:g})".format(*settings.rdp_share))
        raise InvalidParameterError(
            f"--rdp-share {rdp[0]:g} {rdp[1]:g} differs from {stored_text} stored in {where} "
            "(a ledger's shares are fixed when it is created); leave out --rdp-share to use "
            "the stored one, or start a new ledger file"
        )
    if options.sub_budgets is not None:
        records = getattr(settings, "sub_budgets", None) or ()
        stored_subs = {r.name: tuple(map(float, r.budget)) for r in records}
        if options.sub_budgets != stored_subs:
            stored_text = ("no sub-budgets" if not stored_subs else "the sub-budgets "
                           + ", ".join(f"{n}={e:g},{d:g}" for n, (e, d) in stored_subs.items()))
            raise InvalidParameterError(
                "--sub-budget " + " --sub-budget ".join(
                    f"{n}={e:g},{d:g}" for n, (e, d) in options.sub_budgets.items())
                + f" differs from {stored_text} stored in {where} (a ledger's sub-budgets are "
                "fixed when it is created); leave out --sub-budget to use the stored ones"
            )
    if options.rdp_orders is not None and options.rdp_orders != settings.rdp_orders:
        stored_text = ("no Rényi share" if settings.rdp_orders is None else
                       "a Rényi share at orders "
                       + ",".join(f"{a:g}" for a in settings.rdp_orders))
        raise InvalidParameterError(
            "--rdp-orders " + ",".join(f"{a:g}" for a in options.rdp_orders)
            + f" differs from {stored_text} stored in {where}; leave out --rdp-orders to use "
            "the stored orders"
        )


def make_accountant(
    ledger: Path | None, budget: tuple[float, float] | None, composition: str | None,
    release_budget: tuple[float, float], options: LedgerOptions = LedgerOptions(),
) -> PrivacyAccountant:
    """The accountant a release pays through: in memory (``budget``, else the release's own
    (ε, δ)), or the ledger file ``ledger`` — created with ``budget`` and ``options`` if it
    does not exist, else opened with its stored settings after checking that ``budget`` and
    ``options`` (where given) are the same.

    Raises:
        InvalidParameterError: a setting that differs from the ledger's stored one, a new
            ledger without ``budget``, ``--rdp-orders`` without ``--rdp-share``, or a share
            the budget cannot hold (the message names the option, its value and its range).
        LedgerError: ``ledger`` is not an approxdp ledger.
    """
    exists = ledger is not None and ledger.exists() and not ledger.is_dir()
    if options.rdp_orders is not None and options.rdp_share is None and not exists:
        raise InvalidParameterError(
            "--rdp-orders sets the orders of a Rényi share: give --rdp-share EPSILON DELTA "
            "with it (the share and its orders are fixed when the ledger is created)"
        )
    shares: dict[str, Any] = {"adaptivity": options.adaptivity,
                              "basic_share": options.basic_share,
                              "rdp_share": options.rdp_share, "rdp_orders": options.rdp_orders,
                              "sub_budgets": options.sub_budgets}
    if ledger is None:
        return PrivacyAccountant(budget or release_budget, composition=composition, **shares)
    if exists:
        settings = read_ledger_settings(ledger)
        if budget is not None and tuple(map(float, budget)) != settings.budget:
            raise InvalidParameterError(
                f"--budget {budget[0]:g} {budget[1]:g} differs from the budget "
                f"({settings.budget[0]:g}, {settings.budget[1]:g}) stored in ledger "
                f"{str(ledger)!r}; a ledger's budget never changes: leave out --budget to use "
                "the stored one (or start a new ledger file)"
            )
        _check_stored(ledger, options, composition)
        # the stored shares apply (asked ones are the same, checked above)
        return PrivacyAccountant(settings.budget, ledger=ledger, composition=composition,
                                 adaptivity=options.adaptivity,
                                 basic_share=options.basic_share)
    if budget is None:
        raise InvalidParameterError(
            f"ledger {str(ledger)!r} does not exist yet; create it by also giving its total "
            "budget: --budget EPSILON DELTA"
        )
    return PrivacyAccountant(budget, ledger=ledger, composition=composition, **shares)


def payer(accountant: PrivacyAccountant, options: LedgerOptions) -> PrivacyAccountant:
    """The accountant a release pays through: ``accountant`` itself, or its sub-budget
    ``--ledger-sub NAME``.

    Raises:
        UnknownMethodError: the ledger has no sub-budget NAME (the message lists its own).
    """
    if options.ledger_sub is None:
        return accountant
    return accountant.sub(options.ledger_sub)
