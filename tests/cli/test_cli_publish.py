"""What the command line publishes and how it behaves around it (issue 23): seeded releases and
ledgers, receipts and ``ledger verify``, Ctrl+C, terminal safety, and the rough edges."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from approxdp import GaussianEvent, PrivacyAccountant
from approxdp.accounting.budget.sqlite_schema import SCHEMA_VERSION
from approxdp.reports.formatting import JSON_SCHEMA_VERSION
from ledger_forgery import rechain


def _spend(run_json: Any, people_csv: Path, ledger: Path, out: Path, *extra: str) -> Any:
    return run_json("release", "count", people_csv, "-e", "0.3", "-d", "1e-7", "--ledger",
                    ledger, "--budget", "2", "1e-5", "-o", out, *extra)


def test_a_seeded_release_is_refused_against_a_ledger_unless_allowed(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "l.sqlite"
    _spend(run_json, people_csv, ledger, tmp_path / "a.json")
    line = one_line_error(
        run("release", "count", people_csv, "-e", "0.3", "-d", "1e-7", "--ledger", ledger,
            "--seed", "4"), 2, "seeded simulation (NOT private)", "--allow-seeded-ledger",
        "no --ledger")
    assert "allow_seeded_ledger" not in line
    assert run_json("ledger", ledger)["status"]["count"] == 1  # nothing spent
    data = run_json("release", "count", people_csv, "-e", "0.3", "-d", "1e-7", "--ledger",
                    ledger, "--seed", "4", "--allow-seeded-ledger")
    assert data["result"]["secure"] is False
    shown = run_json("ledger", ledger)
    assert [s["seeded"] for s in shown["spends"]] == [False, True]
    table = run("ledger", ledger, env={"COLUMNS": "250"}).stdout
    assert table.count("seeded, not private") == 1
    # a seeded run without a ledger file is what simulations are for: no opt-in needed
    assert run_json("release", "count", people_csv, "-e", "0.3", "-d", "1e-7",
                    "--seed", "4")["result"]["secure"] is False


def test_ledger_verify_json_keeps_its_own_schema_version(
    run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    """The command's ``schema_version`` is its JSON's; the file's schema is
    ``ledger_schema_version`` (it used to overwrite the JSON's: the report's keys came last)."""
    assert SCHEMA_VERSION != JSON_SCHEMA_VERSION  # else this test could not tell them apart
    ledger = tmp_path / "l.sqlite"
    _spend(run_json, people_csv, ledger, tmp_path / "r.json")
    report = run_json("ledger", "verify", ledger)
    assert report["command"] == "ledger verify"
    assert report["schema_version"] == JSON_SCHEMA_VERSION
    assert report["ledger_schema_version"] == SCHEMA_VERSION
    assert report["ok"] and report["sub_budgets"] == []


def test_ledger_verify_with_the_receipts_of_every_artifact(
    run: Any, run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "l.sqlite"
    outs = [tmp_path / f"r.{ext}" for ext in ("json", "csv", "parquet")]
    for out in outs:
        _spend(run_json, people_csv, ledger, out)
    receipt = json.loads(outs[0].read_text())["result"]["receipts"][0]
    text = f"{receipt['ledger_id']}:{receipt['index']}:{receipt['chain_hash']}"
    ok = run("ledger", "verify", ledger, *(a for out in outs for a in ("--receipt", out)),
             "--receipt", text)
    assert ok.exit_code == 0, ok.stderr
    assert "OK" in ok.stdout and "4 receipt(s) checked" in ok.stdout
    report = run_json("ledger", "verify", ledger)
    assert report["ok"] and report["chained"] and report["spends"] == 3
    # a consistent rewrite: spend 2 deleted, the rest renumbered and rechained, totals fixed
    with sqlite3.connect(ledger) as conn:
        conn.execute("DELETE FROM spends WHERE id = 2")
        kept = conn.execute("SELECT charge FROM spends ORDER BY id").fetchall()
        rechain(conn, fix_totals=False)
        rho = conn.execute("SELECT SUM(rho) FROM spends").fetchone()[0]
        conn.execute("UPDATE totals SET rho = ?, count = 2", (rho,))
        # and the privacy filter's state made to agree with the charges left
        state = json.loads(conn.execute("SELECT state FROM filter_state").fetchone()[0])
        state["gdp_used"] = sum(float(json.loads(k[0])["gdp"]) for k in kept)
        conn.execute("UPDATE filter_state SET state = ?", (json.dumps(state),))
    conn.close()
    alone = run("ledger", "verify", ledger)
    assert alone.exit_code == 0, alone.stdout  # the file alone looks intact
    broken = run("ledger", "verify", ledger, "--receipt", outs[1], "--receipt", outs[2])
    assert broken.exit_code == 5, (broken.stdout, broken.stderr)
    assert "NOT OK" in broken.stdout and "spend 2 is not the one its receipt names" in \
        " ".join(broken.stdout.split())
    bad = run("ledger", "verify", ledger, "--receipt", "nonsense")
    assert bad.exit_code == 2 and "LEDGER_ID:INDEX:HASH" in bad.stderr


def test_ledger_view_of_a_read_only_file(run: Any, run_json: Any, people_csv: Path,
                                         tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    _spend(run_json, people_csv, ledger, tmp_path / "a.json")
    before = ledger.read_bytes()
    ledger.chmod(0o444)
    try:
        assert run_json("ledger", ledger)["status"]["count"] == 1
        assert run_json("ledger", "show", ledger)["status"]["count"] == 1
        assert run_json("ledger", "verify", ledger)["ok"]
    finally:
        ledger.chmod(0o644)
    assert ledger.read_bytes() == before


def test_labels_cannot_drive_the_terminal(run: Any, tmp_path: Path) -> None:
    """A spend label with an escape sequence, a carriage return and Rich markup prints as
    visible text (it cleared the screen)."""
    ledger = tmp_path / "l.sqlite"
    with PrivacyAccountant((1.0, 1e-5), ledger=ledger) as acc:
        acc.spend(GaussianEvent(50.0, label="\x1b[2J\x1b[H[bold red]owned[/bold red]\rok\u202e"))
    out = run("ledger", ledger, env={"COLUMNS": "250"}).stdout
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "\\x1b[2J\\x1b[H[bold red]owned[/bold red]\\x0dok\\u202e" in out


@pytest.mark.parametrize("after_spend", [False, True], ids=["before", "after"])
def test_ctrl_c_says_whether_anything_was_spent(
    run: Any, run_json: Any, people_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    after_spend: bool,
) -> None:
    execute_module = sys.modules["approxdp.releases.execute"]

    ledger = tmp_path / "l.sqlite"
    PrivacyAccountant((2.0, 1e-5), ledger=ledger).close()

    def interrupt(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    # before: while reading the data; after: while noising, once the spend is recorded
    target = "release_collected" if after_spend else "check_outside_domain"
    monkeypatch.setattr(execute_module, target, interrupt)
    result = run("release", "count", people_csv, "-e", "0.3", "-d", "1e-7", "--ledger", ledger)
    assert result.exit_code == 130, (result.stdout, result.stderr)
    line = result.stderr.strip().splitlines()[-1]
    if after_spend:
        assert line.startswith("error: interrupted after 1 spend(s) were recorded")
    else:
        assert line == "error: interrupted; nothing spent"
    monkeypatch.undo()
    assert run_json("ledger", ledger)["status"]["count"] == int(after_spend)


def test_a_batch_prints_its_budget_once(run: Any, people_csv: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(f'''file = "{people_csv}"
epsilon = 0.8
delta = 1e-6
[[query]]
kind = "count"
[[query]]
kind = "mean"
column = "age"
bounds = [18, 90]
[[query]]
kind = "histogram"
columns = ["sex"]
domain = {{sex = ["F", "M"]}}
''', encoding="utf-8")
    out = run("release", "batch", spec, "--seed", "1").stdout
    assert out.count("budget spent") == 1
    assert "budget spent ε = 0.8, δ = 1e-06 in one spend, shared by the queries" in out


def test_an_exact_count_does_not_say_it_spent(run: Any, run_json: Any, people_csv: Path) -> None:
    out = " ".join(run("release", "count", people_csv, "-e", "0.5", "-d", "1e-6",
                       "--neighbouring", "replace-one").stdout.split())
    assert "budget spent nothing: this value needs no noise" in out
    assert "budget spent ε" not in out
    data = run_json("release", "count", people_csv, "-e", "0.5", "-d", "1e-6",
                    "--neighbouring", "replace-one")
    assert data["result"]["mechanism"] == "exact" and data["budget"]["count"] == 0


def test_plan_speaks_options(run: Any, one_line_error: Any, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('delta = 1e-6\n[[query]]\nkind = "mean"\ncolumn = "age"\n'
                    'bounds = [0, 100]\nhalf_width = 2\n', encoding="utf-8")
    line = one_line_error(run("plan", spec), 2, "pass --rows N")
    assert "rows=" not in line


def test_where_matching_nobody_releases_noise_and_private_bounds_refuse_first(
    run: Any, run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    """``--where`` on a key nobody has: a count, a histogram and a mean with public bounds are
    released (noise around zero) and charged like any other answer — an error would tell the
    recipient that nobody matched; private bounds, which need rows, refuse before any spend
    with an error labelled exact (on stderr, never in an artifact)."""
    ledger = tmp_path / "l.sqlite"
    common = ("--where", "age = 1000", "--ledger", ledger, "--budget", "5", "1e-5",
              "-e", "0.5", "-d", "1e-7")
    for args in (("count",), ("histogram", "sex", "--domain", "sex=F,M"),
                 ("mean", "income", "--bounds", "0", "100000")):
        out = tmp_path / f"{args[0]}.json"
        data = run_json("release", *args[:1], people_csv, *args[1:], *common, "-o", out)
        assert data["result"]["secure"] is True
        text = out.read_text()
        assert "empty" not in text and '"rows"' not in text
    assert run_json("ledger", ledger)["status"]["count"] == 3
    refused = run("release", "mean", people_csv, "income", "--bounds", "private", *common,
                  "-o", tmp_path / "refused.json")
    assert refused.exit_code == 2, refused.output
    assert "exact, not private" in " ".join(refused.stderr.split())
    assert not (tmp_path / "refused.json").exists()
    assert run_json("ledger", ledger)["status"]["count"] == 3  # nothing spent
