"""The one serializer of privacy events: JSON descriptions, stored in ledger files.

An event is written as a JSON object ``{"type": <class name>, <field>: <value>, ...}`` with
sorted keys; a nested event (``SubsampledEvent.event``) is an object of the same form, a tuple of
events (``ComposedEvent.events``) a list of them. Two forms share this one writer:

- the **record** (:func:`event_to_json`): every field, the label included; it is what a ledger
  stores for each spend and what ``approxdp ledger --json`` shows;
- the **key** (:func:`event_key`): the same without labels. Equal events have equal keys, so a
  history is stored and composed as a multiset of keys with counts (the PLD rule re-accounts
  the history from them).

:func:`event_from_json` reads both back and refuses anything else with a
:class:`~approxdp.errors.LedgerError` (an unknown type, an unknown field, an invalid value): a
ledger never guesses what a stored event meant.

Compatibility rule for stored descriptions (ledger files outlive the code that wrote them):

1. An event class and its fields are never renamed or removed, and a field never changes its
   meaning or unit. A mechanism that needs a different meaning gets a new event class.
2. A field may be added only with a default that reproduces the old meaning exactly, so a
   description written before the field existed reads back as the same event.
3. Descriptions are read, never rewritten: a reader meets keys written by any earlier version.
   Keys of equal events written by different versions may differ in text (a field added with
   its default) but read back to equal events, and every accounting rule works on the events.
4. Anything that changes how a stored history is accounted (a new table, a new column, a new
   meaning for a stored number) bumps the ledger's schema version, and opening an older file
   upgrades it in place from its stored events, keeping every row.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from approxdp import events as _events
from approxdp.errors import LedgerError
from approxdp.events import PrivacyEvent

__all__ = ["event_from_json", "event_key", "event_to_json", "event_to_obj"]

_EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    name: getattr(_events, name)
    for name in _events.__all__
    if isinstance(getattr(_events, name), type)
}


def _plain(value: Any, labels: bool) -> Any:
    if isinstance(value, PrivacyEvent):
        obj: dict[str, Any] = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            if labels or f.name != "label":
                obj[f.name] = _plain(getattr(value, f.name), labels)
        return obj
    if isinstance(value, tuple):
        return [_plain(v, labels) for v in value]
    return value


def event_to_obj(event: PrivacyEvent, *, labels: bool = True) -> dict[str, Any]:
    """The description of ``event`` as a JSON-ready dict (with or without labels)."""
    obj = _plain(event, labels)
    assert isinstance(obj, dict)
    return obj


def event_to_json(event: PrivacyEvent) -> str:
    """The record of an event: its description with labels, as JSON text with sorted keys."""
    return json.dumps(_plain(event, True), sort_keys=True, allow_nan=True)


def event_key(event: PrivacyEvent) -> str:
    """The canonical description of an event: its type and fields (labels left out) as JSON
    with sorted keys. Equal events have equal keys; :func:`event_from_json` parses it back."""
    return json.dumps(_plain(event, False), sort_keys=True, allow_nan=True)


def _event_from_obj(obj: Any) -> PrivacyEvent:
    if not isinstance(obj, dict) or obj.get("type") not in _EVENT_TYPES:
        raise LedgerError(f"ledger holds an unknown event record: {str(obj)[:80]}")
    cls = _EVENT_TYPES[obj["type"]]
    kwargs: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "type":
            continue
        if isinstance(value, dict):
            kwargs[key] = _event_from_obj(value)
        elif isinstance(value, list):
            kwargs[key] = tuple(_event_from_obj(v) for v in value)
        else:
            kwargs[key] = value
    try:
        return cls(**kwargs)
    except Exception as exc:
        raise LedgerError(f"ledger holds an invalid {obj['type']} record: {exc}") from exc


def event_from_json(text: str) -> PrivacyEvent:
    """Inverse of :func:`event_to_json` and :func:`event_key`; raises LedgerError for anything
    not written by them."""
    try:
        obj = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"ledger holds an unreadable event record: {exc}") from exc
    return _event_from_obj(obj)
