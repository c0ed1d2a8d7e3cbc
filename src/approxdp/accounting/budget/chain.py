"""The ledger's hash chain and spend receipts: what makes a rewritten ledger evident.

Each spend row of a SQLite ledger (schema 4 on) stores ``hash = H(previous hash, row)``, with
H = SHA-256 over a canonical text of the previous hash and the row's recorded fields, and the
first row chained to a *genesis* hash of the ledger's identity (its random ``ledger_id``, its
budget and its composition rule). This is the hash chain of Haber & Stornetta 1991
(https://doi.org/10.1007/BF00196791), the construction behind tamper-evident logs (Crosby &
Wallach 2009): changing, inserting or deleting a row changes the hash of every row after it.

A chain alone cannot stop whoever can write the file from recomputing every hash after an
edit (there is no secret in it). What makes such a rewrite evident is a hash kept somewhere
else: every release's artifact carries its spend's :class:`Receipt` (ledger id, index, chain
hash), and ``approxdp ledger verify FILE --receipt ...`` (:func:`~approxdp.accounting.budget.
verify.verify_ledger`) checks that the row a receipt names is still there with the same hash.
A rewrite that deletes or changes a spend, or any spend before it, cannot keep the receipt's
hash (SHA-256 is second-preimage resistant). ``docs/security.md`` states what this does and
does not protect.

The hashed text of an entry is a JSON array (Python's ``json``, floats written by ``repr``,
which round-trips every float64 exactly). Two formats exist:

- **Format 1** (spends written by schema 4, kept as they are): ::

      [previous hash, index, created, event, rho, items, rule, delta_after, seeded]

- **Format 2** (schema 5 on: :func:`spend_hash`, :func:`commitment_hash`): spends *and* the
  commitments of plans form one chain, in the order they were recorded (``seq``, their position
  in the chain), and a spend's hash covers the privacy filter's ``charge`` too: ::

      ["approxdp-ledger-chain-2", "spend", previous hash, seq, index, created, event, rho,
       items, rule, delta_after, seeded, charge]
      ["approxdp-ledger-chain-2", "commitment", previous hash, seq, id, created, kind,
       commitment, label, pricing, events, charge]

A file upgraded from schema 4 keeps its format-1 hashes (so the receipts already handed out
still verify, and a chain already broken stays broken); the first format-2 entry after them
chains to a **seal** (:func:`seal_hash`): the hash of the last format-1 spend and of the
charges of every format-1 spend, which format 1 did not cover. What each hash covers, and what
the seal cannot vouch for (edits made before the upgrade), is stated in ``docs/security.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "CHAIN_VERSION",
    "ENTRY_FORMAT",
    "Receipt",
    "commitment_hash",
    "genesis_hash",
    "row_hash",
    "seal_hash",
    "spend_hash",
]

#: Version tag of the chain's hashed text (part of the genesis hash).
CHAIN_VERSION = "approxdp-ledger-chain-1"
#: Tag of the format-2 entries' hashed text (schema 5 on).
ENTRY_FORMAT = "approxdp-ledger-chain-2"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def genesis_hash(ledger_id: str, budget: tuple[float, float], composition: str) -> str:
    """The hash the first row chains to: the ledger's identity (id, budget, rule)."""
    return _sha256(json.dumps([CHAIN_VERSION, ledger_id, float(budget[0]), float(budget[1]),
                               composition]))


def row_hash(
    previous: str, index: int, created: float, event: str, rho: float, items: str, rule: str,
    delta_after: float, seeded: bool,
) -> str:
    """``H(previous, row)``: SHA-256 of the row's canonical text (see the module docstring)."""
    return _sha256(json.dumps([previous, int(index), float(created), event, float(rho), items,
                               rule, float(delta_after), bool(seeded)]))


def spend_hash(
    previous: str, seq: int, index: int, created: float, event: str, rho: float, items: str,
    rule: str, delta_after: float, seeded: bool, charge: str,
) -> str:
    """A spend's format-2 hash (schema 5): ``H(previous entry, spend row + charge)``."""
    return _sha256(json.dumps([ENTRY_FORMAT, "spend", previous, int(seq), int(index),
                               float(created), event, float(rho), items, rule,
                               float(delta_after), bool(seeded), charge]))


def commitment_hash(
    previous: str, seq: int, index: int, created: float, kind: str, commitment: int,
    label: str, pricing: str, events: str, charge: str,
) -> str:
    """A commitment's (a plan committed or closed) format-2 hash: ``H(previous entry, row)``."""
    return _sha256(json.dumps([ENTRY_FORMAT, "commitment", previous, int(seq), int(index),
                               float(created), kind, int(commitment), label, pricing, events,
                               charge]))


def seal_hash(previous: str, charges: Sequence[str]) -> str:
    """The link from the last format-1 spend (hash ``previous``; the genesis hash if there is
    none) to the first format-2 entry of a file upgraded from schema 4: it covers the
    ``charges`` of every format-1 spend, oldest first, which their own hashes do not."""
    return _sha256(json.dumps([ENTRY_FORMAT, "seal", previous, [str(c) for c in charges]]))


@dataclass(frozen=True, slots=True)
class Receipt:
    """Proof of one spend in a ledger file: where it is and the chain hash it had.

    A release's artifact carries it (``ReleaseResult.receipts``, ``"receipts"`` in the JSON);
    ``approxdp ledger verify FILE --receipt ...`` checks it against the file.

    Attributes:
        ledger_id: The ledger's random identity (its ``meta`` table), so a receipt is never
            checked against another ledger by mistake.
        index: The spend's 1-based position.
        chain_hash: The row's hash in the chain (64 hex digits).
    """

    ledger_id: str
    index: int
    chain_hash: str

    def __post_init__(self) -> None:
        if not isinstance(self.ledger_id, str) or not self.ledger_id:
            raise ParameterTypeError(f"receipt ledger_id must be a string, got {self.ledger_id!r}")
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 1:
            raise InvalidParameterError(
                f"receipt index must be a positive integer, got {self.index!r}"
            )
        if not isinstance(self.chain_hash, str) or not _HEX64.fullmatch(self.chain_hash):
            raise InvalidParameterError(
                f"receipt chain_hash must be 64 lowercase hex digits, got {self.chain_hash!r}"
            )

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.index}:{self.chain_hash}"

    def to_dict(self) -> dict[str, Any]:
        """The receipt as a JSON object: ``{ledger_id, index, chain_hash}``."""
        return {"ledger_id": self.ledger_id, "index": self.index, "chain_hash": self.chain_hash}

    @classmethod
    def from_obj(cls, obj: Any) -> Receipt:
        """A receipt from :meth:`to_dict`'s object or from its text ``LEDGER_ID:INDEX:HASH``."""
        if isinstance(obj, str):
            parts = obj.strip().split(":")
            if len(parts) != 3 or not parts[1].isdigit():
                raise InvalidParameterError(
                    f"a receipt is LEDGER_ID:INDEX:HASH (as an artifact's \"receipts\" give it), "
                    f"got {obj!r}"
                )
            return cls(parts[0], int(parts[1]), parts[2].lower())
        if isinstance(obj, dict) and {"ledger_id", "index", "chain_hash"} <= set(obj):
            return cls(obj["ledger_id"], obj["index"], obj["chain_hash"])
        raise ParameterTypeError(
            f"a receipt is an object {{ledger_id, index, chain_hash}} or the text "
            f"LEDGER_ID:INDEX:HASH, got {obj!r}"
        )
