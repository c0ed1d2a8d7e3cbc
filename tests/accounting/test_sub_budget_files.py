"""Sub-budgets on ledger files (``PrivacyAccountant(budget, ledger=FILE, sub_budgets=...)``):
one ledger file per sub-budget, the split recorded in the parent; reopening, mismatches,
missing or foreign sub files, concurrent creators, interrupted creation, and verification.
(The adaptive analyst against a file-backed sub-budget: ``test_filter_rdp.py``.)"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import traceback
from pathlib import Path

import pytest

from approxdp.accounting import PrivacyAccountant, read_ledger_settings, verify_ledger
from approxdp.accounting.budget import sub_budgets as sub_module
from approxdp.errors import InvalidParameterError, LedgerError
from approxdp.events import GaussianEvent, LaplaceEvent, SubsampledEvent

BUDGET = (1.0, 1e-6)
SPLIT = {"tables": (0.4, 3e-7),
         "training": {"budget": (0.3, 2e-7), "rdp_share": (0.3, 2e-7)}}
CTX = mp.get_context("fork")
STEP = SubsampledEvent(GaussianEvent(sigma=8.0), 0.01)


def _counts(path: Path) -> dict[str, int]:
    with PrivacyAccountant(ledger=path) as acc:
        out = {"": acc.remaining().count}
        out.update({name: acc.sub(name).remaining().count for name in acc.sub_budgets})
    return out


def test_a_ledger_file_keeps_its_sub_budgets(tmp_path: Path) -> None:
    path = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT) as acc:
        assert acc.sub_budgets == {"tables": (0.4, 3e-7), "training": (0.3, 2e-7)}
        tables = acc.sub("tables")
        assert tables.persistent and tables.ledger_path == tmp_path / "study.tables.sqlite"
        assert acc.sub("training").rdp_share is not None
        tables.spend(LaplaceEvent(scale=4.0))
        acc.sub("training").spend(STEP)
        acc.spend(GaussianEvent(sigma=40.0))
        room = acc.remaining().room
        assert acc.remaining().sub_budget_pairs == (("tables", 0.4, 3e-7), ("training", 0.3, 2e-7))
        assert "study.tables.sqlite" in acc.explain()
    # the same declared block as in memory: the same room
    assert room == PrivacyAccountant(BUDGET, sub_budgets=SPLIT).remaining().room
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == [
        "study.sqlite", "study.tables.sqlite", "study.training.sqlite"]
    settings = read_ledger_settings(path)
    assert settings.sub_budgets is not None and settings.sub_budget_of is None
    by_name = {r.name: r for r in settings.sub_budgets}
    assert by_name["training"].options == {"rdp_share": [0.3, 2e-7]}
    for name, record in by_name.items():
        sub = read_ledger_settings(tmp_path / record.file)
        assert sub.ledger_id == record.ledger_id is not None
        assert sub.sub_budget_of == (settings.ledger_id, name)
        assert sub.budget == record.budget
    # reopened without naming them: the stored split, every spend kept
    assert _counts(path) == {"": 1, "tables": 1, "training": 1}
    with PrivacyAccountant(ledger=path) as again:
        assert again.remaining().room == room
        again.sub("training").spend(STEP)  # spends persist
        rdp = again.sub("training").rdp_share
        assert rdp is not None and any(u > 0 for u in rdp.used)
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=dict(reversed(SPLIT.items()))):
        pass  # the same split, named in another order
    assert _counts(path) == {"": 1, "tables": 1, "training": 2}
    with PrivacyAccountant(ledger=path, read_only=True) as ro:
        assert ro.sub("training").remaining().count == 2
    assert verify_ledger(path).ok


@pytest.mark.parametrize("other", [
    {"tables": (0.4, 3e-7)},  # a sub-budget left out
    {**SPLIT, "more": (0.1, 1e-8)},  # one more
    {"tables": (0.5, 3e-7), "training": SPLIT["training"]},  # another budget
    {"tables": (0.4, 3e-7), "training": (0.3, 2e-7)},  # other options
    {"tables": {"budget": (0.4, 3e-7), "ledger": "t.sqlite"},
     "training": SPLIT["training"]},  # another file
])
def test_another_split_is_refused_and_nothing_changes(tmp_path: Path, other: dict) -> None:
    path = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT) as acc:
        acc.spend(GaussianEvent(sigma=40.0))
        acc.sub("tables").spend(LaplaceEvent(scale=4.0))
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=r"created with sub_budgets=.*same split"):
        PrivacyAccountant(BUDGET, ledger=path, sub_budgets=other)
    assert path.read_bytes() == before
    assert _counts(path) == {"": 1, "tables": 1, "training": 0}
    assert not (tmp_path / "t.sqlite").exists()


def test_a_file_without_sub_budgets_cannot_gain_them(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=40.0))
    with pytest.raises(LedgerError, match="created with sub_budgets=None"):
        PrivacyAccountant(BUDGET, ledger=path, sub_budgets={"a": (0.1, 1e-8)})
    assert not (tmp_path / "plain.a.sqlite").exists()
    assert _counts(path) == {"": 1}


def test_a_missing_moved_or_foreign_sub_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT) as acc:
        acc.sub("tables").spend(LaplaceEvent(scale=4.0))
    sub = tmp_path / "study.tables.sqlite"
    away = tmp_path / "elsewhere.sqlite"
    shutil.move(sub, away)
    with pytest.raises(LedgerError, match=r"sub-budget 'tables'.*study\.tables\.sqlite.*missing"):
        PrivacyAccountant(ledger=path)
    assert not sub.exists()  # no empty file in its place
    report = verify_ledger(path)
    assert not report.ok
    assert any("sub-budget 'tables'" in p and "study.tables.sqlite" in p
               for p in report.problems)
    shutil.move(away, sub)  # put back: all is well, its spend kept
    assert _counts(path)["tables"] == 1
    assert verify_ledger(path).ok
    # another ledger of the same budget in its place
    shutil.move(sub, away)
    PrivacyAccountant((0.4, 3e-7), ledger=sub).close()
    with pytest.raises(LedgerError, match="not the one the parent records"):
        PrivacyAccountant(ledger=path)
    report = verify_ledger(path)
    assert any("not the one the parent records" in p for p in report.problems)
    assert any("not marked as sub-budget 'tables'" in p for p in report.problems)


def test_verify_checks_every_sub_file(tmp_path: Path) -> None:
    path = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT) as acc:
        for _ in range(3):
            acc.sub("tables").spend(LaplaceEvent(scale=40.0))
        acc.spend(GaussianEvent(sigma=40.0))
    report = verify_ledger(path)
    assert report.ok and len(report.sub_budgets) == 2
    assert [v.spends for v in report.sub_budgets] == [3, 0]
    assert report.to_dict()["sub_budgets"][0]["spends"] == 3
    # a spend edited in a sub file: its hash chain breaks, the parent's report says so
    with sqlite3.connect(tmp_path / "study.tables.sqlite") as conn:
        event = json.loads(conn.execute("SELECT event FROM spends WHERE id = 2").fetchone()[0])
        event["scale"] = 400.0
        conn.execute("UPDATE spends SET event = ? WHERE id = 2", (json.dumps(event),))
    report = verify_ledger(path)
    assert not report.ok
    assert any(p.startswith("sub-budget 'tables'") for p in report.problems)
    # the parent's record of a sub-budget's budget edited
    with sqlite3.connect(tmp_path / "study.sqlite") as conn:
        records = json.loads(conn.execute(
            "SELECT value FROM meta WHERE key = 'sub_budgets'").fetchone()[0])
        records[1]["budget"] = [0.6, 2e-7]
        conn.execute("UPDATE meta SET value = ? WHERE key = 'sub_budgets'",
                     (json.dumps(records),))
    problems = verify_ledger(path).problems
    assert any("not the ones its filter state was created with" in p for p in problems)
    assert any("sub-budget 'training'" in p and "is not the recorded" in p for p in problems)


@pytest.mark.parametrize(("split", "match"), [
    ({"a/b": (0.1, 1e-8)}, "cannot name a file"),
    ({"a": {"budget": (0.1, 1e-8), "ledger": "sub/a.sqlite"}}, "must be a file name"),
    ({"a": {"budget": (0.1, 1e-8), "ledger": "x.sqlite"},
      "b": {"budget": (0.1, 1e-8), "ledger": "x.sqlite"}}, "distinct files"),
    ({"a": {"budget": (0.1, 1e-8), "ledger": "study.sqlite"}}, "distinct files"),
    ({"a": {"budget": (0.1, 1e-8), "sub_budgets": {"b": (0.05, 1e-9)}}}, "sub_budgets"),
    ({"a": {"budget": (0.1, 1e-8), "rdp_share": "big"}}, r"sub_budgets\['a'\]\['rdp_share'\]"),
    ({"a": (2.0, 1e-8)}, "not within the budget"),
    ({"a": (0.9, 9e-7), "b": (0.5, 1e-7)}, "sub_budgets"),  # together over budget
])
def test_bad_sub_budgets_of_a_file_are_refused(tmp_path: Path, split: dict, match: str) -> None:
    path = tmp_path / "study.sqlite"
    with pytest.raises(InvalidParameterError, match=match):
        PrivacyAccountant(BUDGET, ledger=path, sub_budgets=split)
    assert [p.name for p in tmp_path.iterdir() if p.stat().st_size > 0] == []


def test_an_interrupted_creation_loses_nothing(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted after the parent and the first sub file are written: the next opener
    adopts the file (it has no spend) and completes the set."""
    path = tmp_path / "study.sqlite"
    claim = sub_module.claim_sub_file
    calls = []

    def interrupted(*args: object) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        claim(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sub_module, "claim_sub_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT)
    monkeypatch.undo()
    settings = read_ledger_settings(path)
    assert settings.sub_budgets is not None
    assert all(r.ledger_id is None for r in settings.sub_budgets)  # not completed
    assert not verify_ledger(path).ok
    with pytest.raises(LedgerError, match="never completed"):
        PrivacyAccountant(ledger=path, read_only=True)
    with PrivacyAccountant(ledger=path) as acc:
        acc.sub("tables").spend(LaplaceEvent(scale=4.0))
    assert verify_ledger(path).ok
    assert _counts(path) == {"": 0, "tables": 1, "training": 0}


def _crash_while_creating(path: str) -> None:
    def die(*args: object) -> None:
        os._exit(3)

    sub_module.claim_sub_file = die  # type: ignore[assignment]
    PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT)


def test_a_process_killed_while_creating_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "study.sqlite"
    proc = CTX.Process(target=_crash_while_creating, args=(str(path),))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 3
    with PrivacyAccountant(ledger=path) as acc:
        acc.spend(GaussianEvent(sigma=40.0))
        acc.sub("training").spend(STEP)
    assert _counts(path) == {"": 1, "tables": 0, "training": 1}
    assert verify_ledger(path).ok


def _creator(path: str, worker: int, barrier: mp.synchronize.Barrier,
             conn: mp.connection.Connection) -> None:
    try:  # (a child's error reaches the test as its message, not as a closed pipe)
        barrier.wait(60)
        with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT) as acc:
            acc.sub("tables").spend(LaplaceEvent(scale=40.0, label=f"w{worker}"))
            acc.spend(GaussianEvent(sigma=60.0, label=f"w{worker}"))
            conn.send(acc.sub("tables").ledger_id)
    except BaseException:
        conn.send(("worker failed", traceback.format_exc()))
    finally:
        conn.close()


def test_concurrent_creators_make_one_set_of_files(tmp_path: Path) -> None:
    path = str(tmp_path / "study.sqlite")
    barrier = CTX.Barrier(4)
    pipes, procs = [], []
    for w in range(4):
        parent, child = CTX.Pipe(duplex=False)
        proc = CTX.Process(target=_creator, args=(path, w, barrier, child))
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    got = [p.recv() if p.poll(300) else ("worker died without an answer",) for p in pipes]
    assert not [g for g in got if isinstance(g, tuple)], got
    ids = set(got)
    for proc in procs:
        proc.join(300)
        assert proc.exitcode == 0
    assert len(ids) == 1  # every creator got the same sub file
    assert _counts(Path(path)) == {"": 4, "tables": 4, "training": 0}
    settings = read_ledger_settings(path)
    assert settings.sub_budgets is not None
    assert {r.name: r.ledger_id for r in settings.sub_budgets}["tables"] in ids
    assert verify_ledger(path).ok


def test_a_creation_committed_between_two_reads_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind a concurrent creator's "not an approxdp ledger (application_id=0)":
    its first read of the file saw another process's creation uncommitted, its check whether
    the file is being created ran after that creation committed. The settings are then read
    again (and a file that is really foreign is still refused)."""
    from approxdp.accounting.budget import opening, sqlite_files, sqlite_ledger

    path = tmp_path / "study.sqlite"
    with PrivacyAccountant(BUDGET, ledger=path, sub_budgets=SPLIT):
        pass
    real = sqlite_ledger.read_ledger_settings
    reads: list[int] = []

    def first_read_mid_creation(ledger: object) -> object:
        reads.append(1)
        if len(reads) == 1:
            raise LedgerError(f"{ledger} is a SQLite database but not an approxdp ledger "
                              "(application_id=0)")
        return real(ledger)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_ledger, "read_ledger_settings", first_read_mid_creation)
    monkeypatch.setattr(sqlite_files, "being_created", lambda ledger: False)
    settings = opening.stored_settings(path)
    assert settings is not None and settings.budget == BUDGET and len(reads) == 2
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    monkeypatch.setattr(sqlite_ledger, "read_ledger_settings", real)
    with pytest.raises(LedgerError, match="not an approxdp ledger"):
        opening.stored_settings(foreign)
