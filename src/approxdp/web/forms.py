"""Form fields: text in, numbers out, and the API's own typed errors placed by their field.

Every number on the pages is typed into a text field and read here, so what a person sees for
bad input is what the Python API says for it: ``number("epsilon", "-1", ...)`` raises the same
:class:`~approxdp.errors.InvalidParameterError` as ``calibrate_gaussian(-1, ...)`` ("epsilon
must be in [0, inf), got epsilon=-1"). :func:`field_of` finds the field an error names, so the
page can print it on one line under that field; :func:`attempt` runs a page's computation
into an :class:`Outcome` (its value, or that one line and its field).
"""

from __future__ import annotations

import math
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from approxdp._validation import PARAMETER_RANGES, check_interval
from approxdp.errors import (
    ApproxDPError,
    DataCheckError,
    InvalidParameterError,
    ParameterTypeError,
)

__all__ = [
    "FIELD_ATTRIBUTE",
    "Outcome",
    "attempt",
    "choice",
    "error_text",
    "field_of",
    "integer",
    "locate",
    "number",
    "on_field",
    "page_wording",
    "parameter",
]

#: Attribute :func:`on_field` sets on an exception: the field it belongs to.
FIELD_ATTRIBUTE = "approxdp_field"

_MAX_TEXT = 60  # characters of a bad value quoted back


def _quote(text: str) -> str:
    return repr(text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "...")


def number(
    name: str,
    text: object,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """The float typed into field ``name``, checked to lie between ``low`` and ``high``.

    Raises:
        ParameterTypeError: not a number (empty, words, NaN).
        InvalidParameterError: out of range, worded as the API words it.
    """
    raw = "" if text is None else str(text).strip()
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        raise ParameterTypeError(f"{name} must be a number, got {_quote(raw)}") from None
    if math.isnan(value):
        raise ParameterTypeError(f"{name} must be a number, got {_quote(raw)}")
    check_interval(name, value, low, high, low_open=low_open, high_open=high_open)
    return value


def parameter(name: str, text: object, kind: str | None = None) -> float:
    """The float typed into field ``name``, checked against the range of ``kind`` (default:
    ``name``) in the one table of parameter ranges
    (:data:`approxdp._validation.PARAMETER_RANGES`), as the API checks it.

    Raises:
        ParameterTypeError: not a number.
        InvalidParameterError: out of range, worded as the API words it.
    """
    r = PARAMETER_RANGES[kind or name]
    return number(name, text, r.low, r.high, low_open=r.low_open, high_open=r.high_open)


def integer(name: str, text: object, low: int = 1, high: int | None = None) -> int:
    """The whole number typed into field ``name``, at least ``low`` (and at most ``high``).

    Raises:
        ParameterTypeError: not a whole number.
        InvalidParameterError: out of range.
    """
    raw = "" if text is None else str(text).strip().replace("_", "")
    try:
        value = int(raw)
    except ValueError:
        try:
            as_float = float(raw)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float == int(as_float)):
            raise ParameterTypeError(
                f"{name} must be a whole number, got {_quote(raw)}"
            ) from None
        value = int(as_float)
    if value < low or (high is not None and value > high):
        top = "inf" if high is None else str(high)
        raise InvalidParameterError(f"{name} must be in [{low}, {top}], got {name}={value}")
    return value


def choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """The option chosen in field ``name``, one of ``choices``.

    Raises:
        InvalidParameterError: anything else (an edited form value).
    """
    if value not in choices:
        raise InvalidParameterError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


#: The library's Python spellings → the words the pages use (labels of their fields).
_PAGE_WORDING: tuple[tuple[str, str], ...] = (
    (r"\boutside_domain\s*=\s*'drop'", "“rows outside the domain: drop them”"),
    (r"\boutside_domain\s*=\s*'error'", "“rows outside the domain: refuse the release”"),
    (r"\bcasts=\{'([^']+)': 'double'\}", r"“convert to numbers: \1” (step 1)"),
    (r"\bdomain\['([^']+)'\]", r"the domain of \1"),
    (r"\bmax_rows_per_partition\b", "rows per unit per cell (m)"),
    (r"\bmax_partitions\b", "cells one unit may touch (k)"),
    (r"\bprivacy_unit\b", "privacy unit"),
    (r"\boutside_domain\b", "rows outside the domain"),
    (r"\bbounds_share\b", "bounds share"),
    (r"\bbounds=\(low, high\)", "a lower and an upper bound"),
    (r"\bseed=(\d+)", r"a seed"),
    (r"^file\b", "data file"),
    (r"\brows=", "assumed number of rows = "),
    (r"\bqs\b", "quantiles"),
    (r"\blevel(?=\s*(=|must\b))", "confidence level"),
    (r"\bepsilon\b", "ε"),
    (r"\bdelta\b", "δ"),
)


def page_wording(message: str) -> str:
    """``message`` with the library's Python spellings (``epsilon=``, ``max_partitions``,
    ``outside_domain='drop'``, ``casts={'x': 'double'}``) replaced by the words of the page's
    fields (ε, "cells one unit may touch (k)", "rows outside the domain: drop them", ...)."""
    for pattern, replacement in _PAGE_WORDING:
        message = re.sub(pattern, replacement, message)
    return message


def error_text(exc: BaseException) -> str:
    """One line for the page, in its own words (:func:`page_wording`), with no Python type
    name. A data check's error (:class:`~approxdp.errors.DataCheckError`) shows only its
    advice: its message states exact facts about the data, and a page can be seen by others.
    Anything that is not an approxdp error is called internal."""
    if isinstance(exc, DataCheckError):
        return page_wording(" ".join(exc.advice.split()))
    message = " ".join(str(exc).split()) or "unknown error"
    if isinstance(exc, ApproxDPError):
        return page_wording(message)
    return ("internal error: something went wrong inside approxdp (a bug; the server's "
            "terminal may say more); please report it")


def field_of(message: str, names: Iterable[str] | Mapping[str, object]) -> str | None:
    """The field an error message is about: the first of ``names`` the message starts with or
    quotes as ``name=``; None when it names none of them (a message for the whole form)."""
    text = message.split(": ", 1)[1] if message.split(": ", 1)[0].endswith("Error") else message
    names = list(names)
    for name in names:
        if text.startswith(f"{name} ") or text.startswith(f"{name}="):
            return name
    for name in names:
        if f" {name}=" in text or f"({name}=" in text or f"--{name} " in text:
            return name
    return None


@contextmanager
def on_field(name: str) -> Iterator[None]:
    """Tag an approxdp error raised inside with the field ``name`` (its type and message stay
    as the API made them), for messages that do not name the field themselves."""
    try:
        yield
    except ApproxDPError as exc:
        if getattr(exc, FIELD_ATTRIBUTE, None) is None:
            setattr(exc, FIELD_ATTRIBUTE, name)
        raise


def locate(exc: BaseException, names: Iterable[str]) -> str | None:
    """The field of ``names`` that ``exc`` belongs to (its :func:`on_field` tag, else the field
    its message names), or None."""
    names = list(names)
    tagged = getattr(exc, FIELD_ATTRIBUTE, None)
    if tagged in names:
        return str(tagged)
    return field_of(str(exc), names)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A computation's value, or its one-line error and the input it belongs to (if any)."""

    value: Any = None
    error: str | None = None
    field: str | None = None

    @property
    def ok(self) -> bool:
        """True when there is a value (no error)."""
        return self.error is None


def attempt(compute: Callable[[], Any], fields: Mapping[str, str]) -> Outcome:
    """Run ``compute``; on failure keep its one-line error and the input id (from ``fields``:
    API parameter name → input id) of the field it names. Never raises."""
    try:
        return Outcome(value=compute())
    except Exception as exc:  # shown on the page as one line; a bug is called internal
        if not isinstance(exc, ApproxDPError):
            traceback.print_exception(exc, file=sys.stderr)  # for the terminal, not the page
        name = locate(exc, fields) if isinstance(exc, ApproxDPError) else None
        return Outcome(error=error_text(exc), field=fields.get(name) if name else None)
