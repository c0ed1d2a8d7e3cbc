"""SQLite ledger: concurrency across processes, kill -9 crash consistency, foreign/corrupt files.

The concurrency and crash tests fork worker processes (POSIX only). Both are deterministic
in their pass/fail criteria: the random kill times (fixed seed) only choose *where* a crash
lands; any correct ledger passes for every choice, so the false-failure rate is 0.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from approxdp import (
    BudgetExceededError,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    LedgerError,
    PrivacyAccountant,
    compose_gaussian,
)
from approxdp.accounting.budget.sqlite_ledger import SQLiteLedger

# Needs the lead's exact Gaussian profile (issue 2); skipped only until it lands on main.
pytest.importorskip("approxdp.profiles.gaussian")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses fork and SIGKILL")
BUDGET = (1.0, 1e-5)
SIGMA = 90.0
CTX = mp.get_context("fork")


def _max_fitting(sigma: float) -> int:
    n = int((sigma / 4.0) ** 2)
    while compose_gaussian([sigma] * (n + 1)).delta(BUDGET[0]) <= BUDGET[1]:
        n += 1
    while compose_gaussian([sigma] * n).delta(BUDGET[0]) > BUDGET[1]:
        n -= 1
    return n


def _spender(path: str, worker: int, n: int, conn: mp.connection.Connection) -> None:
    acc = PrivacyAccountant(budget=BUDGET, ledger=path)
    accepted = []
    for j in range(n):
        label = f"w{worker}-{j}"
        try:
            acc.spend(GaussianEvent(sigma=SIGMA, label=label))
        except BudgetExceededError:
            continue
        accepted.append(label)
    conn.send(accepted)
    conn.close()


def test_eight_processes_never_overspend(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.sqlite")
    PrivacyAccountant(budget=BUDGET, ledger=path).close()
    pipes, procs = [], []
    for w in range(8):
        parent, child = CTX.Pipe(duplex=False)
        proc = CTX.Process(target=_spender, args=(path, w, 200, child))
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    accepted = [label for p in pipes for label in p.recv()]
    for proc in procs:
        proc.join(300)  # generous: a loaded 2-core machine can be slow to reap
        assert proc.exitcode == 0
    acc = PrivacyAccountant(budget=BUDGET, ledger=path)
    labels = [r.event.label for r in acc.history()]  # type: ignore[attr-defined]
    assert len(labels) == len(set(labels))  # each accepted spend recorded once
    assert sorted(labels) == sorted(accepted)
    assert 0 < len(accepted) < 1600  # the budget admitted only part of the requests
    assert len(accepted) == _max_fitting(SIGMA)  # ... and exactly as many as fit
    assert acc.remaining().spent_delta <= BUDGET[1]
    assert compose_gaussian([SIGMA] * len(accepted)).delta(BUDGET[0]) <= BUDGET[1]
    SQLiteLedger(path, budget=BUDGET, composition="gdp", adaptivity="full").verify()


def _crash_loop(path: str, tag: str, fd: int) -> None:
    acc = PrivacyAccountant(budget=(1e6, 0.5), ledger=path)
    j = 0
    while True:
        label = f"{tag}-{j}"
        os.write(fd, f"i {label}\n".encode())
        event = (
            GaussianEvent(sigma=50.0, label=label)
            if j % 2
            else ComposedEvent((GaussianEvent(sigma=40.0), LaplaceEvent(scale=100.0)), label=label)
        )
        acc.spend(event)
        os.write(fd, f"d {label}\n".encode())
        j += 1


def _read_until_first_spend(fd: int, timeout: float) -> str:
    """Read the worker's pipe until its first completed spend ("d ..." line) is seen."""
    data = b""
    deadline = time.monotonic() + timeout
    while not (data.startswith(b"d ") or b"\nd " in data):
        if time.monotonic() > deadline:
            raise AssertionError(f"worker made no spend within {timeout} s; got {data!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"worker exited before its first spend; got {data!r}")
        data += chunk
    return data.decode()


def test_kill_minus_nine_leaves_consistent_ledger(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.sqlite")
    PrivacyAccountant(budget=(1e6, 0.5), ledger=path).close()
    rng = random.Random(20240605)
    done_total: set[str] = set()
    for it in range(24):
        read_fd, write_fd = os.pipe()
        proc = CTX.Process(target=_crash_loop, args=(path, f"c{it}", write_fd))
        proc.start()
        os.close(write_fd)
        # Kill only once the worker is inside its spending loop (its first spend returned), so
        # the kill lands among spends however slowly a loaded machine starts the process.
        head = _read_until_first_spend(read_fd, timeout=60.0)
        time.sleep(rng.uniform(0.0, 0.1))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        with os.fdopen(read_fd) as fh:
            lines = (head + fh.read()).splitlines()
        done = {line[2:] for line in lines if line.startswith("d ")}
        intents = [line[2:] for line in lines if line.startswith("i ")]
        ledger = SQLiteLedger(path, budget=(1e6, 0.5), composition="gdp", adaptivity="full")
        state = ledger.verify()  # opens, passes quick_check, totals match rows
        recorded = {
            r.event.label
            for r in ledger.records()  # type: ignore[attr-defined]
            if r.event.label.startswith(f"c{it}-")  # type: ignore[attr-defined]
        }
        ledger.close()
        # every spend that returned is recorded; at most the one in flight is extra
        assert done <= recorded
        extra = recorded - done
        assert extra <= ({intents[-1]} if intents else set())
        done_total |= recorded
        assert state.count == len(done_total)


def test_foreign_and_corrupt_files_are_refused_untouched(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a ledger at all, just some text that is long enough\n" * 10)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
        conn.execute("INSERT INTO people VALUES ('x')")
    conn.close()
    good = tmp_path / "good.sqlite"
    with PrivacyAccountant(budget=BUDGET, ledger=good) as acc:
        for _ in range(50):
            acc.spend(GaussianEvent(sigma=1e3, label="x" * 200))
    corrupt = tmp_path / "corrupt.sqlite"
    data = bytearray(good.read_bytes())
    for page in range(4096, len(data), 4096):  # trash every b-tree page header but page 1's
        data[page : page + 8] = b"\xee" * 8
    corrupt.write_bytes(bytes(data))
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(good.read_bytes()[:5000])
    for path in (text, foreign, corrupt, truncated):
        before = path.read_bytes()
        with pytest.raises(LedgerError):
            PrivacyAccountant(budget=BUDGET, ledger=path)
        assert path.read_bytes() == before, path.name
        assert not Path(str(path) + "-wal").exists() or path == good
    before = good.read_bytes()
    with pytest.raises(LedgerError, match="budget"):
        PrivacyAccountant(budget=(2.0, 1e-5), ledger=good)
    with pytest.raises(LedgerError, match="composition"):
        PrivacyAccountant(budget=BUDGET, ledger=good, composition="basic")
    assert good.read_bytes() == before


def test_inconsistent_totals_detected(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with PrivacyAccountant(budget=BUDGET, ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=100.0))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE totals SET count = 7")
    conn.close()
    with pytest.raises(LedgerError, match="inconsistent"):
        PrivacyAccountant(budget=BUDGET, ledger=path)


def test_refused_spend_leaves_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    acc = PrivacyAccountant(budget=BUDGET, ledger=path)
    acc.spend(GaussianEvent(sigma=5.0))
    history, state = acc.history(), acc.remaining()
    with pytest.raises(BudgetExceededError):
        acc.spend(GaussianEvent(sigma=1.0))
    assert acc.history() == history and acc.remaining() == state
    acc.close()
    reopened = PrivacyAccountant(budget=BUDGET, ledger=path)
    assert reopened.history() == history
    assert reopened.remaining() == state


def test_history_roundtrips_events(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    event = ComposedEvent((GaussianEvent(sigma=30.0, sensitivity=2.0), LaplaceEvent(scale=9.0)))
    with PrivacyAccountant(budget=(2.0, 1e-5), ledger=path) as acc:
        record = acc.spend(event)
    with PrivacyAccountant(budget=(2.0, 1e-5), ledger=path) as acc:
        (stored,) = acc.history()
    assert stored.event == event and stored.index == record.index == 1
    assert stored.rule == record.rule
