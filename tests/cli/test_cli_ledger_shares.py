"""A ledger's Rényi share on the command line: ``--rdp-share`` and ``--rdp-orders`` at
creation (``release``, ``release batch``, ``serve``), checked against a ledger file's stored
settings, and shown by ``approxdp ledger`` order by order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import approxdp as dp
from approxdp.accounting import read_ledger_settings
from approxdp.accounting.budget.filter_rdp import DEFAULT_SHARE_ORDERS
from approxdp.accounting.budget.sqlite_schema import SCHEMA_VERSION
from approxdp.cli.ledger_settings import parse_orders
from approxdp.errors import InvalidParameterError
from approxdp.reports.formatting import JSON_SCHEMA_VERSION

COUNT = ("release", "count")
SMALL = ("-e", "0.2", "-d", "1e-7")
STEP = dp.SubsampledEvent(dp.GaussianEvent(sigma=1.0), 0.01)


def _new(run_json: Any, csv: Path, ledger: Path, *more: str) -> dict[str, Any]:
    return run_json(*COUNT, csv, *SMALL, "--ledger", ledger, "--budget", "4", "1e-6", *more)


def test_a_ledger_made_with_a_renyi_share_keeps_it_and_shows_it(
    run: Any, run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "shared.sqlite"
    made = _new(run_json, people_csv, ledger, "--rdp-share", "3", "5e-7",
                "--rdp-orders", "16,4,8,8")
    share = made["budget"]["rdp_share"]
    assert (share["epsilon"], share["delta"], share["orders"]) == (3.0, 5e-7, [4.0, 8.0, 16.0])
    assert share["used"] == [0.0, 0.0, 0.0] and share["alive"]
    assert share["delta_per_order"] == pytest.approx(5e-7 / 3)
    settings = read_ledger_settings(ledger)  # the file round trip
    assert (settings.rdp_share, settings.rdp_orders) == ((3.0, 5e-7), (4.0, 8.0, 16.0))
    # a DP-SGD job spending steps from the same file, one at a time
    with dp.PrivacyAccountant(ledger=ledger) as acc:
        for _ in range(300):
            acc.spend(STEP)
        used = acc.rdp_share.used  # type: ignore[union-attr]
    shown = run_json("ledger", ledger)
    status = shown["status"]
    assert status["rdp_share"]["used"] == list(used) and max(used) > 0
    assert status["rdp_share"]["best_order"] in (4.0, 8.0, 16.0)
    assert status["sub_budgets"] == {} and status["count"] == 301
    text = " ".join(run("ledger", ledger).stdout.split())
    assert "Rényi share (ε, δ) = (3, 5e-07)" in text and "order α" in text
    assert "the order with the most left" in text
    # the same settings may be repeated (orders in any order), and change nothing
    again = run_json(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--rdp-share", "3",
                     "5e-7", "--rdp-orders", "4,16,8")
    assert again["budget"]["rdp_share"]["orders"] == [4.0, 8.0, 16.0]
    assert again["budget"]["count"] == 302
    # the browser's burn-down replays the file with its share (every spend, none refused)
    pytest.importorskip("shiny")
    from approxdp.web.pages.ledger import ledger_view

    assert len(ledger_view(ledger)["burn_down"]) == 302


@pytest.mark.parametrize(("first", "then", "fragments"), [
    (["--rdp-share", "3", "5e-7"], ["--rdp-share", "3", "4e-7"],
     ["--rdp-share 3 4e-07 differs from the Rényi share (3, 5e-07) stored in ledger",
      "leave out --rdp-share"]),
    ([], ["--rdp-share", "3", "5e-7"],
     ["--rdp-share 3 5e-07 differs from no Rényi share stored", "start a new ledger file"]),
    (["--rdp-share", "3", "5e-7"], ["--rdp-orders", "4,8"],
     ["--rdp-orders 4,8 differs from a Rényi share at orders "
      + ",".join(f"{a:g}" for a in DEFAULT_SHARE_ORDERS), "leave out --rdp-orders"]),
    ([], ["--rdp-orders", "8"], ["--rdp-orders 8 differs from no Rényi share stored"]),
    (["--basic-share", "0", "1e-7"], ["--basic-share", "0", "2e-7"],
     ["--basic-share (0.0, 2e-07) differs from the basic-share (0.0, 1e-07) stored"]),
])
def test_another_share_than_the_stored_one_is_refused(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path,
    first: list[str], then: list[str], fragments: list[str],
) -> None:
    ledger = tmp_path / "b.sqlite"
    _new(run_json, people_csv, ledger, *first)
    stored = read_ledger_settings(ledger)
    one_line_error(run(*COUNT, people_csv, *SMALL, "--ledger", ledger, *then), 2, *fragments)
    assert run_json("ledger", ledger)["status"]["count"] == 1  # nothing spent
    assert read_ledger_settings(ledger) == stored  # nor any setting changed


@pytest.mark.parametrize(("options", "fragments"), [
    (["--rdp-share", "5", "5e-7"],
     ["--rdp-share must be an (epsilon, delta) with 0 < epsilon <= 4 and 0 < delta <= 1e-06",
      "got --rdp-share 5.0 5e-07"]),
    (["--rdp-share", "1", "2e-6"], ["--rdp-share", "0 < delta <= 1e-06"]),
    (["--rdp-share", "0", "1e-7"], ["--rdp-share", "0 < epsilon <= 4"]),
    (["--rdp-share", "1", "nan"], ["'--rdp-share'"]),
    (["--rdp-share", "1", "1e-7", "--rdp-orders", "0.5,2"],
     ["'--rdp-orders'", "Rényi orders in (1, 1024]", "'0.5,2'"]),
    (["--rdp-share", "1", "1e-7", "--rdp-orders", "2000"], ["'--rdp-orders'", "(1, 1024]"]),
    (["--rdp-share", "1", "1e-7", "--rdp-orders", "two"], ["'--rdp-orders'", "'two'"]),
    (["--rdp-share", "1", "1e-7", "--rdp-orders", ""], ["'--rdp-orders'"]),
    (["--rdp-share", "1", "1e-7", "--rdp-orders", "4,,8"], ["'--rdp-orders'"]),
    (["--rdp-orders", "4,8"], ["--rdp-orders sets the orders of a Rényi share",
                               "give --rdp-share EPSILON DELTA"]),
    (["--rdp-share", "1", "1e-7", "--composition", "basic"],
     ["--rdp-share is a share of the 'gdp' filter's budget; composition='basic' has none"]),
    (["--rdp-share", "0.01", "1e-30", "--rdp-orders", "1.01"],
     ["--rdp-share 0.01 1e-30 leaves no Rényi budget at any order", "(B_j <= 0)"]),
])
def test_bad_renyi_shares_are_one_line_errors_and_create_nothing(
    run: Any, one_line_error: Any, people_csv: Path, tmp_path: Path,
    options: list[str], fragments: list[str],
) -> None:
    ledger = tmp_path / "new.sqlite"
    result = run(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--budget", "4", "1e-6",
                 *options)
    one_line_error(result, 2, *fragments)
    assert not ledger.exists()


def test_parse_orders() -> None:
    assert parse_orders(None) is None
    assert parse_orders("8, 2,2,1024") == (2.0, 8.0, 1024.0)
    for bad in ("1", "1,2", "inf", "nan", "2;4", "-3"):
        with pytest.raises(InvalidParameterError, match=rf"--rdp-orders.*got '{bad}'"):
            parse_orders(bad)


def test_in_memory_release_and_batch_take_a_renyi_share(
    run_json: Any, people_csv: Path, tmp_path: Path
) -> None:
    alone = run_json(*COUNT, people_csv, *SMALL, "--budget", "2", "1e-6", "--rdp-share", "1",
                     "1e-7")
    assert alone["budget"]["rdp_share"]["orders"] == list(DEFAULT_SHARE_ORDERS)
    assert run_json(*COUNT, people_csv, *SMALL)["budget"]["rdp_share"] is None
    spec = tmp_path / "spec.toml"
    spec.write_text(f'file = "{people_csv}"\nepsilon = 0.3\ndelta = 1e-7\n'
                    '[[query]]\nkind = "count"\n', encoding="utf-8")
    ledger = tmp_path / "batch.sqlite"
    batch = run_json("release", "batch", spec, "--ledger", ledger, "--budget", "4", "1e-6",
                     "--rdp-share", "2", "3e-7", "--rdp-orders", "8,32")
    assert batch["budget"]["rdp_share"]["orders"] == [8.0, 32.0]
    assert read_ledger_settings(ledger).rdp_share == (2.0, 3e-7)


def test_serve_creates_a_ledger_with_its_shares(tmp_path: Path) -> None:
    pytest.importorskip("shiny")
    from approxdp.web.config import make_config

    ledger = tmp_path / "served.sqlite"
    config = make_config(ledger=ledger, budget=(4.0, 1e-6), rdp_share=(3.0, 5e-7),
                         rdp_orders=[8, 4], basic_share=(0.0, 1e-7))
    assert config.ledger == ledger.resolve()
    stored = read_ledger_settings(ledger)
    assert (stored.rdp_share, stored.rdp_orders, stored.basic_share) == (
        (3.0, 5e-7), (4.0, 8.0), (0.0, 1e-7))
    make_config(ledger=ledger, rdp_share=(3.0, 5e-7), rdp_orders=[4, 8])  # the same: fine
    with pytest.raises(InvalidParameterError, match=r"--rdp-share 2 5e-07 differs from the "
                                                    r"rdp share \(3.0, 5e-07\) stored"):
        make_config(ledger=ledger, rdp_share=(2.0, 5e-7))
    with pytest.raises(InvalidParameterError, match=r"--rdp-orders 4 differs"):
        make_config(ledger=ledger, rdp_orders=[4])
    with pytest.raises(InvalidParameterError, match=r"--basic-share 0 2e-07 differs"):
        make_config(ledger=ledger, basic_share=(0.0, 2e-7))
    with pytest.raises(InvalidParameterError, match=r"--rdp-orders sets the orders"):
        make_config(ledger=tmp_path / "other.sqlite", budget=(1.0, 1e-6), rdp_orders=[4])
    with pytest.raises(InvalidParameterError, match=r"need --ledger FILE"):
        make_config(rdp_share=(1.0, 1e-7))
    with pytest.raises(InvalidParameterError, match=r"rdp_share must be"):
        make_config(ledger=tmp_path / "third.sqlite", budget=(1.0, 1e-6),
                    rdp_share=(2.0, 1e-7))
    assert not (tmp_path / "other.sqlite").exists() and not (tmp_path / "third.sqlite").exists()


# -- sub-budgets ------------------------------------------------------------------------------


def test_a_release_pays_from_a_sub_budget(run: Any, run_json: Any, people_csv: Path) -> None:
    args = (*COUNT, people_csv, *SMALL, "--budget", "2", "1e-6", "--sub-budget",
            "reports=1,2e-7", "--sub-budget", "training=0.5,1e-7")
    made = run_json(*args, "--ledger-sub", "reports")
    assert made["ledger_sub"] == "reports"
    assert (made["budget"]["budget_epsilon"], made["budget"]["budget_delta"]) == (1.0, 2e-7)
    assert made["budget"]["count"] == 1 and made["budget"]["sub_budgets"] == {}
    main = run_json(*args)  # the main ledger: its sub-budgets listed, each with its status
    assert main["ledger_sub"] is None
    assert set(main["budget"]["sub_budgets"]) == {"reports", "training"}
    assert main["budget"]["sub_budgets"]["training"]["budget"] == {"epsilon": 0.5,
                                                                   "delta": 1e-7}
    text = " ".join(run(*args, "--ledger-sub", "training").stdout.split())
    assert "Budget of sub-budget 'training' (this session)" in text
    text = " ".join(run(*args).stdout.split())
    assert "sub-budget 'reports': (ε, δ) = (1, 2e-07), 0 spend(s)" in text


@pytest.mark.parametrize(("options", "code", "fragments"), [
    (["--sub-budget", "a=1,1e-7", "--ledger-sub", "b"], 2,
     ["no sub-budget 'b'; its sub-budgets: ['a']", "--sub-budget NAME=EPSILON,DELTA)"]),
    (["--ledger-sub", "a"], 2, ["no sub-budget 'a'; its sub-budgets: []"]),
    (["--sub-budget", "a=3,1e-7"], 2, ["--sub-budget a = (3, 1e-07) is not within the budget "
                                       "(2, 1e-06)"]),
    (["--sub-budget", "a=1.5,5e-7", "--sub-budget", "b=1.5,5e-7"], 2, ["--sub-budget"]),
    (["--sub-budget", "a=1"], 2, ["--sub-budget must look like NAME=EPSILON,DELTA", "'a=1'"]),
    (["--sub-budget", "a/b=1,1e-7"], 2, ["NAME of letters, digits, - and _", "'a/b=1,1e-7'"]),
    (["--sub-budget", "a=1,x"], 2, ["--sub-budget must look like", "'a=1,x'"]),
    (["--sub-budget", "a=inf,1e-7"], 2, ["two finite numbers", "'a=inf,1e-7'"]),
    (["--sub-budget", "=1,1e-7"], 2, ["--sub-budget must look like"]),
    (["--sub-budget", "a=1,1e-7", "--sub-budget", "a=0.5,1e-7"], 2,
     ["--sub-budget 'a' is given twice"]),
    (["--sub-budget", "a=1,1e-7", "--composition", "basic"], 2,
     ["--sub-budget are shares of the 'gdp' filter's budget"]),
])
def test_bad_sub_budgets_are_one_line_errors(
    run: Any, one_line_error: Any, people_csv: Path, options: list[str], code: int,
    fragments: list[str],
) -> None:
    one_line_error(run(*COUNT, people_csv, *SMALL, "--budget", "2", "1e-6", *options), code,
                   *fragments)


def test_sub_budgets_asked_of_a_ledger_without_them_are_refused(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "plain.sqlite"
    _new(run_json, people_csv, ledger)
    one_line_error(run(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--sub-budget",
                       "a=1,1e-7"), 2,
                   "--sub-budget a=1,1e-07 differs from no sub-budgets stored in ledger",
                   "leave out --sub-budget")
    one_line_error(run(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--ledger-sub", "a"), 2,
                   "no sub-budget 'a'")
    assert run_json("ledger", ledger)["status"]["count"] == 1


def test_sub_budgets_on_a_ledger_file_across_runs(
    run: Any, run_json: Any, one_line_error: Any, people_csv: Path, tmp_path: Path
) -> None:
    """--sub-budget at creation makes one ledger file per sub-budget next to the ledger;
    --ledger-sub pays from one in later runs; ledger show and verify cover them all."""
    ledger = tmp_path / "study.sqlite"
    made = run_json(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--budget", "4", "1e-6",
                    "--sub-budget", "reports=1,2e-7", "--sub-budget", "training=1,2e-7",
                    "--ledger-sub", "reports")
    assert made["ledger_sub"] == "reports" and made["budget"]["count"] == 1
    reports, training = tmp_path / "study.reports.sqlite", tmp_path / "study.training.sqlite"
    assert reports.is_file() and training.is_file()
    stored = read_ledger_settings(ledger).sub_budgets
    assert stored is not None and {r.name: r.budget for r in stored} == {
        "reports": (1.0, 2e-7), "training": (1.0, 2e-7)}
    # a later run: the stored split applies, the same split may be repeated
    run_json(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--ledger-sub", "reports",
             "--sub-budget", "reports=1,2e-7", "--sub-budget", "training=1,2e-7")
    run_json(*COUNT, people_csv, *SMALL, "--ledger", ledger)  # the main ledger itself
    one_line_error(run(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--sub-budget",
                       "reports=1,2e-7"), 2,
                   "--sub-budget reports=1,2e-07 differs from the sub-budgets reports=1,2e-07, "
                   "training=1,2e-07 stored in ledger")
    refused = run(*COUNT, people_csv, "-e", "1.5", "-d", "1e-7", "--ledger", ledger,
                  "--ledger-sub", "reports")  # past the sub-budget's own (1, 2e-7)
    one_line_error(refused, 3, "privacy budget exceeded")
    shown = run_json("ledger", ledger)
    subs = shown["status"]["sub_budgets"]
    assert {n: s["status"]["count"] for n, s in subs.items()} == {"reports": 2, "training": 0}
    assert Path(subs["reports"]["file"]).name == "study.reports.sqlite"
    assert shown["status"]["count"] == 1 and shown["sub_budget_of"] is None
    one = run_json("ledger", reports)  # a sub-budget's own file says whose it is
    assert one["sub_budget_of"]["name"] == "reports" and one["status"]["count"] == 2
    text = " ".join(run("ledger", ledger).stdout.split())
    assert "Sub-budget 'reports' in" in text and "study.reports.sqlite" in text
    assert "Budget of sub-budget 'reports' of ledger" in " ".join(
        run("ledger", reports).stdout.split())
    verified = run_json("ledger", "verify", ledger)
    assert verified["ok"] and len(verified["sub_budgets"]) == 2
    assert verified["schema_version"] == JSON_SCHEMA_VERSION  # the JSON's, not the file's
    assert [s["ledger_schema_version"] for s in verified["sub_budgets"]] == [SCHEMA_VERSION] * 2
    assert "OK sub-budget file" in run("ledger", "verify", ledger).stdout
    # a sub-budget's file gone: verify says so (exit 5), and releases are refused
    training.rename(tmp_path / "elsewhere.sqlite")
    broken = run("ledger", "verify", ledger)
    assert broken.exit_code == 5 and "sub-budget 'training'" in broken.stdout
    one_line_error(run(*COUNT, people_csv, *SMALL, "--ledger", ledger, "--ledger-sub",
                       "training"), 2, "study.training.sqlite")
