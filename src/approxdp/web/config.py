"""What ``approxdp serve`` is allowed to touch, fixed when it starts.

The browser never names a file: the data files and the ledger are given on the command line,
checked here once, and the pages refer to a data file by its key (``"1"``, ``"2"``, ...). A key
the server did not hand out — a tampered form value such as ``../../etc/passwd`` — is refused
with a typed error, so no path from the browser ever reaches the file system.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from approxdp.accounting import COMPOSITION_RULES, PrivacyAccountant, read_ledger_settings
from approxdp.errors import InvalidParameterError

__all__ = [
    "DATA_SUFFIXES",
    "DataFile",
    "ServeConfig",
    "data_file",
    "is_loopback",
    "make_config",
    "new_token",
]

#: File types the release wizard reads (by DuckDB, as ``approxdp release`` does).
DATA_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file given on the command line.

    Attributes:
        key: what the browser sends to choose it (its position, from ``"1"``).
        path: the absolute, resolved path (never shown to be edited, never taken from a form).
        label: what the page shows (the file name, with its key when two names clash).
    """

    key: str
    path: Path
    label: str


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``approxdp serve`` fixes at start.

    Attributes:
        host: the address the server binds (loopback by default).
        port: its TCP port.
        ledger: the SQLite budget ledger the ledger page shows and the wizard spends through,
            or None (then the wizard can simulate but not release).
        data: the files the release wizard may read, in the order given.
        token: the secret every request must carry (in the opening URL's ``?token=``, then
            in a cookie the server sets), made anew at each start; None: no token
            (``--no-token``), any program on this computer may use the app.
        sub_budgets: the ledger's sub-budgets (names, as stored when it was created), which
            the wizard may pay from; empty: none.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    ledger: Path | None = None
    data: tuple[DataFile, ...] = ()
    token: str | None = field(default=None, repr=False)
    sub_budgets: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        """The server's address (without the token: what the page may show)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def open_url(self) -> str:
        """The address to open, with the token (what ``approxdp serve`` prints)."""
        return self.url if self.token is None else f"{self.url}?token={self.token}"


def new_token() -> str:
    """A fresh secret for one start of the server: 32 random bytes, URL-safe (as Jupyter's)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """True when ``host`` is reachable from this computer only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def _data_files(paths: Sequence[str | Path]) -> tuple[DataFile, ...]:
    files: list[DataFile] = []
    for i, raw in enumerate(paths, start=1):
        path = Path(raw).expanduser()
        if path.suffix.lower() not in DATA_SUFFIXES:
            raise InvalidParameterError(
                f"--data must be a CSV or Parquet file (ending in {', '.join(DATA_SUFFIXES)}), "
                f"got {str(raw)!r}"
            )
        if not path.is_file():
            raise InvalidParameterError(f"--data file not found: {str(raw)!r}")
        files.append(DataFile(str(i), path.resolve(), path.name))
    names = [f.label for f in files]
    return tuple(
        DataFile(f.key, f.path, f"{f.label} (#{f.key})" if names.count(f.label) > 1 else f.label)
        for f in files
    )


def _check_shares(path: Path, shares: dict[str, Any]) -> None:
    """InvalidParameterError for a share that differs from the one stored in ``path``."""
    settings = read_ledger_settings(path)
    records = getattr(settings, "sub_budgets", None) or ()
    stored = {"basic_share": settings.basic_share, "rdp_share": settings.rdp_share,
              "rdp_orders": settings.rdp_orders}
    subs = {r.name: tuple(map(float, r.budget)) for r in records}
    asked_subs = shares.get("sub_budgets")
    if asked_subs is not None and {n: tuple(map(float, b)) for n, b in asked_subs.items()} != subs:
        raise InvalidParameterError(
            f"--sub-budget differs from the sub-budgets {subs or 'none'} stored in ledger "
            f"{str(path)!r} (a ledger's sub-budgets are fixed when it is created); leave out "
            "--sub-budget"
        )
    for name, asked in shares.items():
        if asked is None or name == "sub_budgets":
            continue
        value = (tuple(sorted({float(a) for a in asked})) if name == "rdp_orders" else
                 tuple(map(float, asked)))
        if value != stored[name]:
            flag = "--" + name.replace("_", "-")
            raise InvalidParameterError(
                f"{flag} {' '.join(f'{v:g}' for v in value)} differs from the "
                f"{name.replace('_', ' ')} {stored[name]!r} stored in ledger {str(path)!r} (a "
                f"ledger's shares are fixed when it is created); leave out {flag}"
            )


def _ledger(
    ledger: str | Path | None, budget: tuple[float, float] | None, composition: str | None,
    shares: dict[str, Any],
) -> Path | None:
    if ledger is None:
        if budget is not None or composition is not None or any(
                v is not None for v in shares.values()):
            raise InvalidParameterError(
                "--budget, --composition, --basic-share, --rdp-share, --rdp-orders and "
                "--sub-budget need --ledger FILE")
        return None
    path = Path(ledger).expanduser()
    if path.exists():
        settings = read_ledger_settings(path)  # LedgerError for a foreign or corrupt file
        if budget is not None and tuple(map(float, budget)) != settings.budget:
            raise InvalidParameterError(
                f"--budget {budget[0]:g} {budget[1]:g} differs from the budget "
                f"({settings.budget[0]:g}, {settings.budget[1]:g}) stored in ledger "
                f"{str(path)!r}; a ledger's budget never changes: leave out --budget"
            )
        if composition is not None and composition != settings.composition:
            raise InvalidParameterError(
                f"--composition {composition} differs from the rule {settings.composition!r} "
                f"stored in ledger {str(path)!r}; leave out --composition"
            )
        _check_shares(path, shares)
        return path.resolve()
    if budget is None:
        raise InvalidParameterError(
            f"ledger {str(path)!r} does not exist yet; create it by also giving its total "
            "budget: --budget EPSILON DELTA"
        )
    if composition is not None and composition not in COMPOSITION_RULES:
        raise InvalidParameterError(
            f"--composition must be one of {', '.join(COMPOSITION_RULES)}, got {composition!r}"
        )
    if shares.get("rdp_orders") is not None and shares.get("rdp_share") is None:
        raise InvalidParameterError(
            "--rdp-orders sets the orders of a Rényi share: give --rdp-share EPSILON DELTA "
            "with it (the share and its orders are fixed when the ledger is created)"
        )
    # Create the file now, so that the ledger page shows it (empty) from the start.
    PrivacyAccountant(budget, ledger=path, composition=composition, **shares).close()
    return path.resolve()


def make_config(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    ledger: str | Path | None = None,
    budget: tuple[float, float] | None = None,
    composition: str | None = None,
    data: Sequence[str | Path] = (),
    token: str | None = None,
    basic_share: tuple[float, float] | None = None,
    rdp_share: tuple[float, float] | None = None,
    rdp_orders: Sequence[float] | None = None,
    sub_budgets: Mapping[str, tuple[float, float]] | None = None,
) -> ServeConfig:
    """Check the command line's choices and fix them for the server's lifetime.

    ``basic_share``, ``rdp_share``, ``rdp_orders`` and ``sub_budgets`` are the ``"gdp"``
    filter's shares of a new ledger (:class:`~approxdp.accounting.PrivacyAccountant`), fixed
    when it is created here; given for an existing ledger, each must be the one stored in it.

    Raises:
        InvalidParameterError: a host other than loopback without ``allow_remote``, a port
            out of range, a missing or unsupported data file, a new ledger without a budget,
            a budget, rule or share that differs from the existing ledger's, or a share the
            budget cannot hold.
        LedgerError: ``ledger`` exists but is not an approxdp ledger.
    """
    if not host:
        raise InvalidParameterError("--host must not be empty")
    if not is_loopback(host) and not allow_remote:
        raise InvalidParameterError(
            f"--host {host} is not a loopback address: anyone who can reach it could read the "
            "ledger and spend its budget. Add --allow-remote to bind it anyway"
        )
    if not 1 <= port <= 65535:
        raise InvalidParameterError(f"--port must be in [1, 65535], got --port {port}")
    if token is not None and (not isinstance(token, str) or len(token) < 16
                              or not token.replace("-", "").replace("_", "").isalnum()):
        raise InvalidParameterError("token must be at least 16 URL-safe characters "
                                    "(letters, digits, - and _)")
    shares = {"basic_share": basic_share, "rdp_share": rdp_share, "rdp_orders": rdp_orders,
              "sub_budgets": sub_budgets}
    path = _ledger(ledger, budget, composition, shares)
    records = () if path is None else (read_ledger_settings(path).sub_budgets or ())
    return ServeConfig(host, port, path, _data_files(data), token,
                       tuple(r.name for r in records))


def data_file(config: ServeConfig, key: object) -> DataFile:
    """The data file whose key the browser sent.

    Raises:
        InvalidParameterError: ``key`` is not one the server handed out (an edited form value,
            a path): the data files are fixed when the server starts.
    """
    for file in config.data:
        if key == file.key:
            return file
    if not config.data:
        raise InvalidParameterError(
            "no data file: start the server with --data FILE (CSV or Parquet) to release from it"
        )
    shown = str(key) if len(str(key)) <= 60 else str(key)[:57] + "..."
    raise InvalidParameterError(
        f"file must be one of the data files given to 'approxdp serve --data', got {shown!r}; "
        "files cannot be chosen from the browser"
    )
