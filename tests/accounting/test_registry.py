"""The one registry of accounting rules: every tool's names come from it, and each entry's
statements (what it certifies, which tool offers it) match what the tools really do."""

from __future__ import annotations

import math

import pytest

import approxdp as dp
from approxdp.accounting.registry import (
    ACCOUNTING_RULES,
    TOOLS,
    accounting_rule,
    rule_names,
)
from approxdp.errors import UnknownMethodError
from approxdp.reports.composition import RULES, composition_report, parse_release


def test_every_tool_list_is_the_registry() -> None:
    assert rule_names("ledger") == dp.COMPOSITION_RULES
    assert rule_names("split") == dp.SPLIT_RULES
    assert rule_names("dpsgd") == dp.DPSGD_ACCOUNTANTS
    assert rule_names("compose") == RULES
    for tool in TOOLS:
        assert rule_names(tool), tool
        assert len(set(rule_names(tool))) == len(rule_names(tool))


def test_names_are_unique_and_aliases_resolve() -> None:
    names = [r.name for r in ACCOUNTING_RULES]
    assert len(set(names)) == len(names)
    assert accounting_rule("gaussian", "split").name == "exact-gaussian"
    assert accounting_rule("gaussian").name == "exact-gaussian"
    assert accounting_rule("exact-gaussian", "compose").name_in("split") == "gaussian"
    with pytest.raises(UnknownMethodError, match="unknown accounting rule 'kov'"):
        accounting_rule("kov")
    with pytest.raises(UnknownMethodError, match="known: "):
        accounting_rule("rdp", "ledger")  # rdp is offered to DP-SGD only
    with pytest.raises(UnknownMethodError, match="tool must be one of"):
        rule_names("web")  # type: ignore[arg-type]


def test_every_entry_states_its_contract() -> None:
    for r in ACCOUNTING_RULES:
        assert r.certifies in ("exact", "upper bound", "approximation")
        assert r.title and r.what and r.source and r.adaptivity_source, r.name
        assert r.tools and set(r.tools) <= set(TOOLS), r.name
        assert r.adaptivity == ("full" if r.filter_valid else "fixed")
        if not r.filter_valid:
            assert "not a filter" in r.adaptivity_source or r.certifies == "approximation"


def test_filters_are_the_rules_proven_valid_under_full_adaptivity() -> None:
    valid = {r.name for r in ACCOUNTING_RULES if r.filter_valid}
    assert {"exact-gaussian", "basic"} <= valid
    assert not valid & {"pld", "optimal", "advanced", "auto", "rdp", "gdp-clt"}
    assert set(rule_names("ledger", "full")) == valid & set(rule_names("ledger"))


def test_dpsgd_entries_match_what_the_accountants_return() -> None:
    for name in dp.DPSGD_ACCOUNTANTS:
        g = dp.dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=100, delta=1e-5,
                             accountant=name)
        assert g.kind == accounting_rule(name, "dpsgd").certifies, name


def test_split_entries_are_accepted_and_labelled() -> None:
    for name in dp.SPLIT_RULES:
        split = dp.split_budget(1.0, 1e-5, 10, composition=name)
        assert split.composition == name
        rule = accounting_rule(name, "split")
        if rule.certifies == "exact":
            assert split.total.kind in ("exact", "upper bound")


def test_compose_rows_carry_the_registry_statement() -> None:
    report = composition_report([parse_release("4xgaussian:3"), parse_release("laplace:5")],
                                1e-6)
    by_rule = {row["rule"]: row for row in report["rules"]}
    assert set(by_rule) == set(RULES)
    for name in ("optimal", "advanced", "basic"):
        assert by_rule[name]["filter"] is accounting_rule(name).filter_valid
    # a mixed list joins the Gaussians to the rest by the smallest bound: declared lists only
    assert by_rule["exact-gaussian"]["filter"] is False
    gauss = composition_report([parse_release("4xgaussian:3")], 1e-6)["rules"][0]
    assert gauss["rule"] == "exact-gaussian" and gauss["filter"] is True
    assert math.isfinite(gauss["epsilon"])


def test_every_ledger_rule_is_accepted_by_the_accountant() -> None:
    for name in dp.COMPOSITION_RULES:
        # a rule that is not a filter is accepted only with the caller's promise
        mode = "full" if accounting_rule(name, "ledger").filter_valid else "fixed"
        acc = dp.PrivacyAccountant(budget=(1.0, 1e-5), composition=name, adaptivity=mode)
        assert acc.adaptivity == mode
        acc.spend(dp.LaplaceEvent(scale=10.0))
        assert acc.remaining().count == 1
