"""``approxdp serve`` without a browser: the pages' computations, the wizard's steps, what the
server may touch, and the ``serve`` command's refusals (issue 18)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import approxdp as dp
from approxdp.accounting import read_ledger_settings
from approxdp.errors import (
    ApproxDPError,
    DataError,
    InsufficientDataError,
    InvalidParameterError,
    LedgerError,
    ParameterTypeError,
)

pytest.importorskip("shiny", reason="approxdp serve needs the web extra: pip install "
                    "'approxdp[web]'")

# Imported after the skip: the pages need Shiny.
from approxdp.web import config as web_config
from approxdp.web import figures, forms
from approxdp.web import wizard_steps as wizard
from approxdp.web.pages import calibrate, compose, ledger


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """A small CSV: person 0..399, age 18..89, sex F/M."""
    path = tmp_path / "people.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["person", "age", "sex"])
        for i in range(400):
            writer.writerow([i, 18 + (i * 7) % 72, "F" if i % 3 else "M"])
    return path


@pytest.fixture
def config(tmp_path: Path, people: Path) -> web_config.ServeConfig:
    return web_config.make_config(ledger=tmp_path / "budget.sqlite", budget=(2.0, 1e-5),
                                  data=[people])


def _spends(ledger: Path) -> int:
    with dp.PrivacyAccountant(read_ledger_settings(ledger).budget, ledger=ledger) as acct:
        return len(acct.history())


# -- forms ------------------------------------------------------------------------------------
def test_fields_raise_the_apis_own_errors() -> None:
    assert forms.number("epsilon", " 1e-1 ", 0, float("inf")) == 0.1
    with pytest.raises(InvalidParameterError) as bad:
        forms.number("epsilon", "-1", 0.0, float("inf"), high_open=True)
    with pytest.raises(InvalidParameterError) as api:
        dp.calibrate_gaussian(-1, 1e-5)
    assert str(bad.value) == str(api.value) == "epsilon must be in [0, inf), got epsilon=-1"
    with pytest.raises(ParameterTypeError, match="delta must be a number, got 'abc'"):
        forms.number("delta", "abc")
    with pytest.raises(ParameterTypeError, match="must be a number"):
        forms.number("delta", "nan")
    assert forms.integer("steps", "1e3") == 1000
    with pytest.raises(ParameterTypeError, match="whole number"):
        forms.integer("steps", "2.5")
    with pytest.raises(InvalidParameterError, match=r"steps must be in \[1, inf\]"):
        forms.integer("steps", "0")


def test_errors_find_their_field() -> None:
    names = ["epsilon", "delta", "sensitivity"]
    assert forms.field_of("delta must be in (0, 1), got delta=2", names) == "delta"
    assert forms.field_of("InvalidParameterError: epsilon must be ...", names) == "epsilon"
    assert forms.field_of("something about the whole form", names) is None
    exc = InvalidParameterError("cannot read release 'x'")
    with pytest.raises(InvalidParameterError), forms.on_field("releases"):
        raise exc
    assert forms.locate(exc, ["releases", "delta"]) == "releases"
    line = forms.error_text(InvalidParameterError("a\nb"))
    assert line == "a b"
    assert forms.error_text(KeyError("x")).startswith("internal error")


# -- what the server may touch ----------------------------------------------------------------
def test_only_loopback_without_allow_remote(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "127.0.0.9", "::1", "[::1]", "localhost"):
        assert web_config.is_loopback(host)
    for host in ("0.0.0.0", "192.168.1.4", "example.org", "::"):
        assert not web_config.is_loopback(host)
        with pytest.raises(InvalidParameterError, match="--allow-remote"):
            web_config.make_config(host=host)
    assert web_config.make_config(host="0.0.0.0", allow_remote=True).host == "0.0.0.0"
    assert web_config.make_config().url == "http://127.0.0.1:8000/"


def test_files_are_fixed_at_start_and_chosen_by_key(
    config: web_config.ServeConfig, tmp_path: Path, people: Path,
) -> None:
    assert [f.key for f in config.data] == ["1"]
    assert web_config.data_file(config, "1").path == people.resolve()
    for tampered in ("../../../etc/passwd", str(people), "/etc/passwd", "2", 1, None):
        with pytest.raises(InvalidParameterError, match="cannot be chosen from the browser"):
            web_config.data_file(config, tampered)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InvalidParameterError, match="CSV or Parquet"):
        web_config.make_config(data=[tmp_path / "notes.txt"])
    with pytest.raises(InvalidParameterError, match="not found"):
        web_config.make_config(data=[tmp_path / "missing.csv"])


def test_the_ledger_is_created_only_with_a_budget(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="--budget EPSILON DELTA"):
        web_config.make_config(ledger=tmp_path / "new.sqlite")
    assert not (tmp_path / "new.sqlite").exists()
    made = web_config.make_config(ledger=tmp_path / "new.sqlite", budget=(1.0, 1e-6))
    assert made.ledger is not None and made.ledger.is_file()
    with pytest.raises(InvalidParameterError, match="differs from the budget"):
        web_config.make_config(ledger=tmp_path / "new.sqlite", budget=(2.0, 1e-6))
    (tmp_path / "foreign.sqlite").write_bytes(b"not a ledger at all")
    with pytest.raises(LedgerError):
        web_config.make_config(ledger=tmp_path / "foreign.sqlite")


# -- the pages ----------------------------------------------------------------------------------
def test_calibrate_page_is_the_calibrate_command() -> None:
    report = calibrate.calibrate_view("1", "1e-5", "1")
    assert f"{report['reference_sigma']:.4f}" == "3.7306"
    rows = {r["method"]: r for r in calibrate.calibrate_view("10", "1e-5", "1")["methods"]}
    assert rows["dwork-roth-2014"]["private"] is False
    assert rows["optimal"]["private"] is True
    with pytest.raises(InvalidParameterError, match="got delta=2"):
        calibrate.calibrate_view("1", "2", "1")
    grid, delta = figures.profile_curve(report["reference_sigma"], 1.0, "dp", 1.0)
    at_one = float(delta[abs(grid - 1.0).argmin()])
    assert grid[0] == 0 and 1e-6 < at_one < 1e-4


def test_compose_and_dpsgd_pages() -> None:
    report = compose.compose_view("100xgaussian:20\nlaplace:10", "1e-5")
    assert report["count"] == 101 and report["rules"][0]["rule"] == "exact-gaussian"
    with pytest.raises(InvalidParameterError) as bad:
        compose.compose_view("gaussian:-1", "1e-5")
    assert forms.locate(bad.value, ["releases", "delta"]) == "releases"
    sgd = compose.dpsgd_view("0.01", "1.1", "1000", "1e-5")
    assert {r["accountant"] for r in sgd["accountants"]} == set(dp.DPSGD_ACCOUNTANTS)
    kinds = {r["accountant"]: r["kind"] for r in sgd["accountants"]}
    assert kinds["gdp-clt"] == "approximation" and kinds["pld"] == "upper bound"
    with pytest.raises(InvalidParameterError, match="got sample_rate=2"):
        compose.dpsgd_view("2", "1.1", "1000", "1e-5")
    noise = compose.noise_view("2", "0.01", "1000", "1e-5")
    assert dp.dpsgd_epsilon(noise_multiplier=noise["noise_multiplier"], sample_rate=0.01,
                            steps=1000, delta=1e-5).epsilon <= 2
    curve = compose.epsilon_curve(0.01, 1.1, 1000, 1e-5, points=4)
    assert curve["steps"][0] == 1 and curve["steps"][-1] == 1000
    pld = curve["epsilon"]["pld"]
    assert pld == sorted(pld)


def test_ledger_page_reads_and_replays(config: web_config.ServeConfig) -> None:
    assert config.ledger is not None
    with dp.PrivacyAccountant((2.0, 1e-5), ledger=config.ledger) as acct:
        acct.spend(dp.GaussianEvent(sigma=4.0, label="first"))
        acct.spend(dp.LaplaceEvent(scale=4.0, label="second"))
        expected = acct.remaining()
    before = config.ledger.read_bytes()
    view = ledger.ledger_view(config.ledger)
    assert config.ledger.read_bytes() == before  # only read
    assert [s["label"] for s in view["spends"]] == ["first", "second"]
    assert view["status"]["count"] == 2
    assert view["burn_down"][-1]["spent_epsilon"] == pytest.approx(expected.spent_epsilon)
    assert view["burn_down"][0]["remaining_epsilon"] > view["burn_down"][1][
        "remaining_epsilon"]


def test_figures_draw(config: web_config.ServeConfig) -> None:
    report = calibrate.calibrate_view("30", "1e-5", "1")
    assert figures.profile_figure(report, "dwork-roth-2014").axes
    assert len(figures.failure_figure("dp", 30.0, 1e-5).axes) == 2
    assert config.ledger is not None
    assert figures.burn_down_figure(ledger.ledger_view(config.ledger)).axes
    curve = compose.epsilon_curve(0.01, 1.1, 100, 1e-5, points=3)
    assert figures.epsilon_steps_figure(curve, 1e-5).axes


# -- the wizard ---------------------------------------------------------------------------------
_FORM = {"file": "1", "kind": "mean", "column": "age", "low": "18", "high": "90",
         "by": ["sex"], "domain": "sex=F,M", "epsilon": "0.5", "delta": "1e-6"}


def test_the_form_is_checked_with_typed_errors(config: web_config.ServeConfig) -> None:
    schema = wizard.schema_of(config.data[0])
    assert schema == {"person": "numeric", "age": "numeric", "sex": "string"}
    spec = wizard.read_spec(config, _FORM, schema)
    assert spec.label == "mean(age)" and spec.domain == {"sex": ("F", "M")}
    cases = {
        "epsilon": ({"epsilon": "0"}, InvalidParameterError),
        "delta": ({"delta": "x"}, ParameterTypeError),
        "high": ({"high": "10"}, InvalidParameterError),
        "column": ({"column": "height"}, DataError),
        "file": ({"file": "../../etc/passwd"}, InvalidParameterError),
        "domain": ({"domain": "age=1,2"}, InvalidParameterError),
        "privacy_unit": ({"privacy_unit": "nobody"}, DataError),
        "max_partitions": ({"max_partitions": "0"}, InvalidParameterError),
    }
    for field, (change, kind) in cases.items():
        with pytest.raises(kind) as bad:
            wizard.read_spec(config, {**_FORM, **change}, schema)
        assert forms.locate(bad.value, [*cases, "low", "by"]) == field, (field, bad.value)


def test_simulate_spends_nothing_and_release_spends_once(config: web_config.ServeConfig) -> None:
    assert config.ledger is not None
    schema = wizard.schema_of(config.data[0])
    spec = wizard.read_spec(config, _FORM, schema)
    simulated = wizard.simulate(spec, schema, "1000")
    assert simulated["result"]["secure"] is False
    assert "NOT private" in simulated["explain"]
    assert _spends(config.ledger) == 0
    cost = wizard.cost_preview(spec, config.ledger)
    assert cost["fits"] and cost["now"]["count"] == 0
    assert _spends(config.ledger) == 0
    made = wizard.release(spec, schema, config.ledger)
    assert _spends(config.ledger) == 1
    assert made["result"]["secure"] is True
    assert [c["key"]["sex"] for c in made["result"]["cells"]] == ["F", "M"]
    assert json.loads(wizard.release_json(made))["result"]["label"] == "mean(age)"
    rows = list(csv.reader(wizard.release_csv(made).splitlines()))
    assert rows[0][:2] == ["sex", "value"] and len(rows) == 3
    with pytest.raises(ApproxDPError):  # 100 × the budget: refused, nothing spent
        wizard.release(wizard.read_spec(config, {**_FORM, "epsilon": "200"}, schema), schema,
                       config.ledger)
    assert _spends(config.ledger) == 1


def test_private_bounds_in_the_wizard(config: web_config.ServeConfig) -> None:
    """Issue 24 §3: a clamped statistic takes bounds the user gives, or bounds estimated
    privately first (``--bounds private``): the low/high fields are then not read."""
    assert config.ledger is not None
    schema = wizard.schema_of(config.data[0])
    form = {**_FORM, "bounds_mode": "private", "low": "not read", "high": ""}
    spec = wizard.read_spec(config, form, schema)
    assert spec.bounds == "private" and spec.inputs(schema).bounds == "private"
    simulated = wizard.simulate(spec, schema, "20000")
    assert simulated["result"]["secure"] is False and _spends(config.ledger) == 0
    assert "bounds" in simulated["explain"]
    script = wizard.release_script(spec, schema, config.ledger)
    assert "bounds='private'" in script
    compile(script, "release.py", "exec")
    # 400 ages are too few for private bounds at ε = 0.5 (issue 23 §4): refused before any
    # spend, and the page shows only the advice (no count from the data)
    with pytest.raises(InsufficientDataError) as few:
        wizard.release(spec, schema, config.ledger)
    assert not few.value.spent and _spends(config.ledger) == 0
    shown = forms.error_text(few.value)
    assert "400" not in shown and "give public bounds" in shown
    # on 20 000 rows they are estimated, then the mean released: two spends
    big = config.data[0].path.parent / "many.csv"
    with open(big, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["person", "age", "sex"])
        for i in range(20_000):
            writer.writerow([i, 18 + (i * 7) % 72, "F" if i % 3 else "M"])
    many = web_config.make_config(ledger=config.ledger, data=[big])
    made = wizard.release(wizard.read_spec(many, form, schema), schema, config.ledger)
    assert made["query"]["bounds"] == "private" and made["result"]["secure"] is True
    assert _spends(config.ledger) == 2
    for kind in ("median", "variance"):
        assert wizard.read_spec(config, {**form, "kind": kind, "by": [], "domain": ""},
                                schema).bounds == "private"
    with pytest.raises(InvalidParameterError) as bad:
        wizard.read_spec(config, {**_FORM, "bounds_mode": "guess"}, schema)
    assert forms.locate(bad.value, ["bounds_mode", "low"]) == "bounds_mode"


def test_the_script_reproduces_the_release(
    config: web_config.ServeConfig, tmp_path: Path,
) -> None:
    assert config.ledger is not None
    schema = wizard.schema_of(config.data[0])
    for form in (_FORM, {"file": "1", "kind": "count", "epsilon": "0.3", "delta": "1e-7"},
                 {**_FORM, "kind": "histogram", "columns": ["sex"], "domain": "sex=F,M'\""}):
        spec = wizard.read_spec(config, form, schema)
        script = wizard.release_script(spec, schema, config.ledger)
        compile(script, "release.py", "exec")  # quotes in values stay inside their strings
    spec = wizard.read_spec(config, _FORM, schema)
    path = tmp_path / "release.py"
    path.write_text(wizard.release_script(spec, schema, config.ledger), encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "mean(age)" in done.stdout
    assert _spends(config.ledger) == 1


def test_serve_refuses_before_starting(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from approxdp.cli.app import cli

    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "error: --host 0.0.0.0 is not a loopback address" in result.stderr
    result = CliRunner().invoke(cli, ["serve", "--ledger", str(tmp_path / "b.sqlite")])
    assert result.exit_code == 2 and "--budget EPSILON DELTA" in result.stderr
    result = CliRunner().invoke(cli, ["serve", "--data", str(tmp_path / "none.csv")])
    assert result.exit_code == 2 and "not found" in result.stderr


def test_the_guard_lets_in_only_the_apps_own_pages() -> None:
    import asyncio

    from approxdp.web.guard import allowed_hosts, guard, request_allowed

    local = web_config.make_config(port=8123)
    hosts = allowed_hosts(local)
    assert hosts is not None and "127.0.0.1:8123" in hosts and "localhost:8123" in hosts

    def scope(kind: str = "http", **headers: str) -> dict[str, object]:
        return {"type": kind, "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}

    assert request_allowed(scope(host="127.0.0.1:8123"), hosts)
    assert request_allowed(scope(host="localhost:8123", origin="http://localhost:8123"), hosts)
    assert not request_allowed(scope(), hosts)  # no Host
    assert not request_allowed(scope(host="evil.example:8123"), hosts)  # DNS rebinding
    assert not request_allowed(scope(host="127.0.0.1:8123", origin="https://evil.example"),
                               hosts)  # another site's page (cross-site WebSocket)
    remote = web_config.make_config(host="0.0.0.0", port=8123, allow_remote=True)
    assert allowed_hosts(remote) is None
    assert request_allowed(scope(host="box:8123", origin="http://box:8123"), None)
    assert not request_allowed(scope(host="box:8123", origin="http://evil.example"), None)

    seen: list[str] = []
    sent: list[dict[str, object]] = []

    async def app(s: object, receive: object, send: object) -> None:
        seen.append("app")

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {}

    guarded = guard(app, local)
    asyncio.run(guarded(scope(host="127.0.0.1:8123"), receive, send))
    assert seen == ["app"] and not sent
    asyncio.run(guarded(scope("websocket", host="127.0.0.1:8123", origin="http://x.org"),
                        receive, send))
    assert seen == ["app"] and sent[-1] == {"type": "websocket.close", "code": 1008}
    asyncio.run(guarded(scope(host="evil.example"), receive, send))
    assert seen == ["app"] and sent[-2]["status"] == 403
    asyncio.run(guarded({"type": "lifespan"}, receive, send))
    assert seen == ["app", "app"]


def test_every_statistic_and_casting_in_the_wizard(tmp_path: Path) -> None:
    """Issue 24 §3: median, quantiles, variance, std and private bounds are statistics of the
    wizard (from the registry of kinds), and a dirty text column can be converted to numbers."""
    path = tmp_path / "dirty.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["person", "income"])
        for i in range(600):
            writer.writerow([i, "n/a" if i % 50 == 0 else str(1000 + 7 * i)])
    config = web_config.make_config(ledger=tmp_path / "b.sqlite", budget=(20.0, 1e-4),
                                    data=[path])
    schema = wizard.schema_of(config.data[0])
    assert schema["income"] == "string" and set(wizard.KINDS) >= {
        "median", "quantiles", "variance", "std", "bounds"}
    form = {"file": "1", "kind": "median", "column": "income", "low": "0", "high": "10000",
            "epsilon": "1", "delta": "1e-6"}
    with pytest.raises(DataError, match="convert") as bad:
        wizard.read_spec(config, form, schema)
    assert forms.locate(bad.value, ["column", "casts"]) == "column"
    with pytest.raises(DataError) as missing:
        wizard.read_spec(config, {**form, "casts": ["nothing"]}, schema)
    assert forms.locate(missing.value, ["column", "casts"]) == "casts"
    cast = {**form, "casts": ["income"]}
    for kind, extra in (("median", {}), ("quantiles", {"qs": "0.1, 0.9"}), ("variance", {}),
                        ("std", {}), ("bounds", {})):
        spec = wizard.read_spec(config, {**cast, "kind": kind, **extra}, schema)
        assert spec.casts == ("income",)
        simulated = wizard.simulate(spec, schema, "500")
        assert simulated["result"]["secure"] is False
        assert simulated["result"]["label"] == f"{kind}(income)"
        script = wizard.release_script(spec, schema, config.ledger)
        compile(script, "release.py", "exec")
    spec = wizard.read_spec(config, {**cast, "kind": "quantiles", "qs": "0.1, 0.9"}, schema)
    assert spec.qs == (0.1, 0.9)
    made = wizard.release(spec, schema, config.ledger)
    cells = made["result"]["cells"]
    assert [c["key"]["quantile"] for c in cells] == [0.1, 0.9]
    assert 0 <= cells[0]["value"] <= cells[1]["value"] <= 10000  # secure noise: not seeded
    # how many values were not numbers is exact (diagnostics, for the data holder): the page's
    # result, like every artifact, leaves it out (issue 23 §2)
    assert not any("were not numbers" in note for note in made["result"]["notes"])
    assert "diagnostics" not in made["result"]
    assert made["query"]["casts"] == ["income"] and made["query"]["cast_errors"] == "drop"
    refuse = wizard.read_spec(config, {**cast, "cast_errors": "error"}, schema)
    assert refuse.cast_errors == "error"
    assert "cast_errors='error'" in wizard.release_script(refuse, schema, config.ledger)
    spent = _spends(config.ledger)
    with pytest.raises(DataError, match="column 'income' has values that are not numbers") as e:
        wizard.release(refuse, schema, config.ledger)
    assert "n/a" not in str(e.value) and "12" not in str(e.value)  # no value, no count
    assert _spends(config.ledger) == spent
    with pytest.raises(InvalidParameterError) as bad_errors:
        wizard.read_spec(config, {**cast, "cast_errors": "coerce"}, schema)
    assert forms.locate(bad_errors.value, ["cast_errors"]) == "cast_errors"
    with pytest.raises(InvalidParameterError) as bad_q:
        wizard.read_spec(config, {**cast, "kind": "quantiles", "qs": "0.1, 2"}, schema)
    assert forms.locate(bad_q.value, ["qs"]) == "qs"


def test_the_guard_wants_the_token_on_every_request() -> None:
    """Issue 23 §7: with a token, an HTTP request or a WebSocket without it (or with another)
    is refused before the app sees it; the token in the query lets the request in and sets
    the cookie that later requests (the page's socket, its assets) carry."""
    import asyncio

    from approxdp.web.guard import cookie_name, guard

    token = web_config.new_token()
    assert len(token) >= 40 and token != web_config.new_token()
    config = web_config.make_config(port=8123, token=token)
    assert config.url == "http://127.0.0.1:8123/"
    assert config.open_url == f"http://127.0.0.1:8123/?token={token}"
    assert token not in repr(config)
    cookie = cookie_name(config)

    def scope(kind: str = "http", query: str = "", **headers: str) -> dict[str, object]:
        return {"type": kind, "query_string": query.encode(),
                "headers": [(k.encode(), v.encode()) for k, v in
                            {"host": "127.0.0.1:8123", **headers}.items()]}

    seen: list[dict[str, object]] = []
    sent: list[dict[str, object]] = []

    async def app(s: dict[str, object], receive: object, send: object) -> None:
        seen.append(s)
        await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {}

    guarded = guard(app, config)  # type: ignore[arg-type]

    def call(request: dict[str, object]) -> dict[str, object]:
        sent.clear()
        asyncio.run(guarded(request, receive, send))  # type: ignore[arg-type]
        return sent[0]

    for refused in (scope(), scope(query="token=" + "x" * 43), scope(cookie=f"{cookie}=nope"),
                    scope(cookie=f"approxdp-token-9999={token}"), scope(query="tok=" + token)):
        assert call(refused)["status"] == 403
        assert b"carries the access token" in sent[1]["body"]  # type: ignore[operator]
    for refused in (scope("websocket"), scope("websocket", cookie=f"{cookie}=nope")):
        assert call(refused) == {"type": "websocket.close", "code": 1008}
    assert not seen
    opened = call(scope(query=f"token={token}"))
    assert opened["status"] == 200
    assert (b"set-cookie", f"{cookie}={token}; Path=/; HttpOnly; SameSite=Strict".encode()
            ) in opened["headers"]  # type: ignore[operator]
    later = call(scope(cookie=f"other=1; {cookie}={token}"))
    assert later["status"] == 200 and not later["headers"]
    call(scope("websocket", cookie=f"{cookie}={token}"))
    assert len(seen) == 3 and seen[-1]["type"] == "websocket"
    # another site's page is refused even with the cookie (Host/Origin check first)
    assert call(scope(origin="https://evil.example", cookie=f"{cookie}={token}"))["status"] == 403
    # --no-token: the Host/Origin check only
    open_config = web_config.make_config(port=8123)
    assert open_config.token is None and open_config.open_url == open_config.url
    seen.clear()
    asyncio.run(guard(app, open_config)(scope(), receive, send))  # type: ignore[arg-type]
    assert len(seen) == 1
    with pytest.raises(InvalidParameterError, match="token"):
        web_config.make_config(token="short")


def test_serve_prints_the_token_url_and_refuses_a_busy_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 23 §7: the printed URL carries a fresh token (``--no-token``: none, and a warning);
    a port in use is a one-line error with exit status 4 (not 3, the budget's), printed
    before any URL."""
    import socket

    import uvicorn
    from click.testing import CliRunner

    from approxdp.cli.app import cli
    from approxdp.cli.output import EXIT_BUDGET_EXCEEDED, EXIT_PORT_IN_USE

    served: list[object] = []

    class Server:  # uvicorn's, without its logging set-up on the runner's closed streams
        def __init__(self, config: object) -> None:
            self.config = config

        def run(self, sockets: list[object] | None = None) -> None:
            served.append(sockets)

    monkeypatch.setattr(uvicorn, "Config", lambda app, **options: (app, options))
    monkeypatch.setattr(uvicorn, "Server", Server)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert result.exit_code == 0, result.stderr
    printed = result.stderr.split("open ", 1)[1].split(" ", 1)[0]
    assert printed.startswith(f"http://127.0.0.1:{port}/?token=") and len(printed) > 60
    assert "warning" not in result.stderr and len(served) == 1
    again = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert again.exit_code == 0
    assert again.stderr.split("open ", 1)[1].split(" ", 1)[0] != printed  # new per start
    result = CliRunner().invoke(cli, ["serve", "--port", str(port), "--no-token"])
    assert result.exit_code == 0
    assert f"open http://127.0.0.1:{port}/ (" in result.stderr
    assert "warning: --no-token: every user and program of this computer can open the app" in (
        result.stderr)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = busy.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--port", str(taken)])
    assert result.exit_code == EXIT_PORT_IN_USE == 4 != EXIT_BUDGET_EXCEEDED
    assert result.stderr.startswith(f"error: port {taken} on 127.0.0.1 is in use by another "
                                    "program")
    assert "--port" in result.stderr and "open http" not in result.stderr
    assert result.stderr.count("\n") == 1


def test_messages_are_in_the_pages_words() -> None:
    """Issue 23 §3, §7: no Python type names or parameter spellings on the page; a data
    check's error shows only its advice (its message holds exact facts about the data)."""
    from approxdp.errors import DataCheckError

    assert forms.error_text(InvalidParameterError(
        "epsilon must be in [0, inf), got epsilon=-1")) == "ε must be in [0, inf), got ε=-1"
    assert forms.error_text(InvalidParameterError(
        "mean(age): 12 rows are outside; use outside_domain='drop' or "
        "casts={'age': 'double'}; max_partitions must be >= 1")) == (
        "mean(age): 12 rows are outside; use “rows outside the domain: drop them” or "
        "“convert to numbers: age” (step 1); cells one unit may touch (k) must be >= 1")
    check = DataCheckError("3026 row(s) have column 'country' outside the declared domain "
                           "(e.g. ['Cambodia'])", advice="rows outside the declared domain: "
                           "add values or choose drop")
    shown = forms.error_text(check)
    assert shown == "rows outside the declared domain: add values or choose drop"
    assert "3026" not in shown and "Cambodia" not in shown
    internal = forms.error_text(KeyError("secret"))
    assert internal.startswith("internal error") and "KeyError" not in internal
    assert "secret" not in internal


def test_the_review_shows_the_whole_query(tmp_path: Path, people: Path) -> None:
    """Issue 23 §7: before the spend, the review lists every choice of the query (statistic,
    columns, bounds, domain or how cells are chosen without one, unit, ε, δ); the budget
    left is never shown below zero."""
    config = web_config.make_config(ledger=tmp_path / "b.sqlite", budget=(1.0, 1e-5),
                                    data=[people])
    schema = wizard.schema_of(config.data[0])
    mean = wizard.read_spec(config, {"file": "1", "kind": "mean", "column": "age", "low": "18",
                                     "high": "90", "by": ["sex"], "domain": "sex=F,M",
                                     "outside_domain": "drop", "epsilon": "0.5",
                                     "delta": "1e-6", "privacy_unit": "person",
                                     "max_partitions": "1", "max_rows_per_partition": "2"},
                            schema)
    rows = dict(wizard.query_rows(mean))
    assert rows["statistic"].startswith("mean")
    assert rows["value column"] == "age" and rows["group by"] == "sex"
    assert rows["bounds"].startswith("[18, 90]") and rows["domain"] == "sex = F, M"
    assert rows["rows outside the domain"] == "drop them"
    assert rows["privacy unit"] == "person (at most 1 cell(s), 2 row(s) per cell)"
    assert (rows["ε"], rows["δ"], rows["confidence level"]) == ("0.5", "1e-06", "0.95")
    cost = wizard.cost_preview(mean, config.ledger)
    assert cost["query"] == wizard.query_rows(mean)
    histogram = wizard.read_spec(config, {"file": "1", "kind": "histogram",
                                          "columns": ["sex"], "epsilon": "0.5",
                                          "delta": "1e-6"}, schema)
    rows = dict(wizard.query_rows(histogram))
    assert rows["count over"] == "sex" and rows["domain"] == wizard.PARTITION_SELECTION
    assert "bounds" not in rows
    from approxdp.web.widgets import left as _left

    assert _left(-0.25) == _left(0.0) and not _left(-0.25).startswith("-")


def test_the_wizards_downloads_hold_no_exact_count(tmp_path: Path) -> None:
    """Issue 23 §2: the browser's downloads (JSON, CSV, the Python script) of a release from a
    file of N = 7919 rows hold that number nowhere, nor the exact diagnostics' keys."""
    import re

    n = 7919
    path = tmp_path / "people.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["person", "age", "sex"])
        for i in range(n):
            writer.writerow([i, 18 + (i * 7) % 72, "F" if i % 3 else "M"])
    config = web_config.make_config(ledger=tmp_path / "b.sqlite", budget=(20.0, 1e-4),
                                    data=[path])
    schema = wizard.schema_of(config.data[0])
    assert config.ledger is not None
    for form in ({"kind": "count"},
                 {"kind": "mean", "column": "age", "low": "18", "high": "90"},
                 {"kind": "histogram", "columns": ["sex"], "domain": "sex=F,M"},
                 {"kind": "quantiles", "column": "age", "low": "18", "high": "90",
                  "qs": "0.5"}):
        spec = wizard.read_spec(config, {"file": "1", "epsilon": "1", "delta": "1e-6", **form},
                                schema)
        made = wizard.release(spec, schema, config.ledger)
        for name, text in (("json", wizard.release_json(made)),
                           ("csv", wizard.release_csv(made)),
                           ("script", wizard.release_script(spec, schema, config.ledger))):
            where = f"{form['kind']} {name}"
            # random hex ids and hashes (public, blind to the data) may spell n by chance
            text = re.sub(r"(?<![0-9A-Za-z])[0-9a-f]{32,}(?![0-9A-Za-z])", "<hex id>", text)
            assert re.search(rf"(?<![\d.]){n}(?![\d])(?!\.\d)", text.replace(",", "")) is None, (
                where)
            for key in ('"read"', '"used"', '"dropped"', "exact, not private"):
                assert key not in text, where


def test_the_review_of_private_bounds_says_so(config: web_config.ServeConfig) -> None:
    schema = wizard.schema_of(config.data[0])
    spec = wizard.read_spec(config, {**_FORM, "bounds_mode": "private"}, schema)
    rows = dict(wizard.query_rows(spec))
    assert rows["bounds"].startswith("estimated privately first, from 20 % of this ε and δ")


def test_review_gives_the_small_data_advice_at_the_assumed_rows(
    config: web_config.ServeConfig, people: Path,
) -> None:
    """Issue 23 §4 on the browser: the review shows the API's small-data advice (private
    bounds with too few values; most groups below the partition-selection threshold),
    computed at the assumed number of rows on synthetic data — never from the file: the same
    advice whatever the file holds, and no number of the data in it."""
    assert config.ledger is not None
    schema = wizard.schema_of(config.data[0])
    private = wizard.read_spec(config, {**_FORM, "bounds_mode": "private"}, schema)
    few = wizard.cost_preview(private, config.ledger, schema, rows="50")["small_data"]
    assert len(few) == 1 and "too few values for private bounds" in few[0]
    assert "nothing was spent" not in few[0]
    assert wizard.cost_preview(private, config.ledger, schema, rows="200000")["small_data"] == []
    grouped = wizard.read_spec(config, {**_FORM, "domain": ""}, schema)  # partition selection
    advice = wizard.cost_preview(grouped, config.ledger, schema, rows="20")["small_data"]
    assert any("partition-selection threshold" in a for a in advice)
    assert wizard.cost_preview(grouped, config.ledger, schema)["small_data"] == []  # no rows
    # the advice does not depend on the data: an emptier file gives the same words
    with open(people, "w", encoding="utf-8") as fh:
        fh.write("person,age,sex\n1,30,F\n")
    assert wizard.cost_preview(private, config.ledger, schema, rows="50")["small_data"] == few
    for text in few + advice:  # numbers in it are public: the threshold from ε and δ only
        assert "400" not in text and " 1 row" not in text
    assert _spends(config.ledger) == 0


def test_no_negative_remaining_on_the_ledger_page(tmp_path: Path) -> None:
    """A re-certified old ledger past its budget has a negative remaining ε internally; the
    Ledger page's table and the wizard show 0, never a negative number."""
    import shutil
    import warnings

    from approxdp.web import widgets

    path = tmp_path / "old.sqlite"
    shutil.copy(Path(__file__).parents[1] / "accounting" / "data" / "ledger_v2_attack.sqlite",
                path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        view = ledger.ledger_view(path)
    # re-certified, the attack's spends come within ~1e-6 of the ε budget (1), on either side
    # as the PLD's last digits move (1.0000007 up to e640430, 0.99999999 since its bounds
    # tightened): the page is checked on the negative remaining such a ledger can have
    status = {**view["status"],
              "remaining_epsilon": min(view["status"]["remaining_epsilon"], -7.1e-7)}
    assert status["remaining_epsilon"] < 0 and status["over_budget"]  # the case to guard
    html = str(widgets.budget_table(status, "t"))
    remaining_row = html[html.index("remaining</b>"):].split("</tr>")[0]
    assert "<b>0</b>" in remaining_row and "<b>-" not in remaining_row
    assert widgets.left(-7e-7) == "0" and widgets.left(0.25) == "0.25"


def test_the_quantile_trees_shape_in_the_wizard(config: web_config.ServeConfig) -> None:
    """The wizard takes a quantile tree's shape (bins, branching) as the API, the command line
    and batch files do; empty fields mean the default, shown as such in the review, and a bad
    shape is refused on its own field before anything is spent."""
    assert config.ledger is not None
    schema = wizard.schema_of(config.data[0])
    form = {"file": "1", "kind": "quantiles", "column": "age", "low": "0", "high": "100",
            "qs": "0.25, 0.75", "epsilon": "1", "delta": "1e-6"}
    default = wizard.read_spec(config, form, schema)
    assert (default.bins, default.branching) == (None, None)
    assert dict(wizard.query_rows(default))["quantile tree"] == (
        "1024 leaves, branching 32 (the default)")
    shaped = wizard.read_spec(config, {**form, "bins": "64", "branching": " 8 "}, schema)
    assert (shaped.bins, shaped.branching) == (64, 8)
    assert dict(wizard.query_rows(shaped))["quantile tree"] == "64 leaves, branching 8"
    script = wizard.release_script(shaped, schema, config.ledger)
    assert "bins=64" in script and "branching=8" in script
    compile(script, "release.py", "exec")
    made = wizard.release(shaped, schema, config.ledger)
    assert (made["query"]["bins"], made["query"]["branching"]) == (64, 8)
    assert [c["key"]["quantile"] for c in made["result"]["cells"]] == [0.25, 0.75]
    median = wizard.read_spec(config, {**form, "kind": "median", "bins": "16",
                                       "branching": "4"}, schema)
    assert (median.bins, median.branching) == (16, 4)
    mean = wizard.read_spec(config, {**form, "kind": "mean", "bins": "16"}, schema)
    assert mean.bins is None and "quantile tree" not in dict(wizard.query_rows(mean))
    spent = _spends(config.ledger)
    for change, field, error in (({"bins": "100", "branching": "8"}, "bins",
                                  InvalidParameterError),
                                 ({"branching": "1"}, "branching", InvalidParameterError),
                                 ({"bins": "sixty-four"}, "bins", ParameterTypeError)):
        with pytest.raises(error) as bad:
            wizard.read_spec(config, {**form, **change}, schema)
        assert forms.locate(bad.value, ["bins", "branching"]) == field, (change, bad.value)
    assert _spends(config.ledger) == spent


def test_the_ledger_page_shows_the_renyi_share_order_by_order(
    tmp_path: Path, people: Path
) -> None:
    """``approxdp serve --rdp-share`` creates the ledger with its share; the page's view and
    its table show each order's budget, what is used and the order with the most left; the
    review says the share is there."""
    from approxdp.web import widgets

    path = tmp_path / "shared.sqlite"
    config = web_config.make_config(ledger=path, budget=(4.0, 1e-6), rdp_share=(3.0, 5e-7),
                                    rdp_orders=[4, 8, 16], data=[people])
    with dp.PrivacyAccountant(ledger=path) as acct:  # a DP-SGD job on the same ledger
        acct.spend(dp.GaussianEvent(sigma=30.0, label="first"))
        for _ in range(100):
            acct.spend(dp.SubsampledEvent(dp.GaussianEvent(sigma=1.0), 0.01))
        used = acct.rdp_share.used  # type: ignore[union-attr]
    view = ledger.ledger_view(path)
    share = view["status"]["rdp_share"]
    assert share["used"] == list(used) and share["orders"] == [4.0, 8.0, 16.0]
    assert len(view["burn_down"]) == 101  # the replay keeps the share: nothing refused
    html = str(widgets.rdp_share_table(share, "t"))
    best = f"{share['best_order']:g} (most left)"
    assert best in html and html.count("<tr") == 4  # a header and three orders
    assert "Rényi share" in html and "admits nothing more" not in html
    schema = {"person": "integer", "age": "integer", "sex": "string"}
    spec = wizard.read_spec(config, {"file": "1", "kind": "count", "epsilon": "0.1",
                                     "delta": "1e-8"})
    cost = wizard.cost_preview(spec, path, schema)
    assert cost["rdp_share"]["epsilon"] == 3.0 and cost["fits"]


def test_sub_budgets_table() -> None:
    from approxdp.reports.ledger import sub_budget_dicts
    from approxdp.web import widgets

    acc = dp.PrivacyAccountant((2.0, 1e-5), sub_budgets={"reports": (0.5, 1e-6)})
    acc.sub("reports").spend(dp.GaussianEvent(sigma=20.0))
    subs = sub_budget_dicts(acc)
    assert subs["reports"]["budget"] == {"epsilon": 0.5, "delta": 1e-6}
    assert subs["reports"]["status"]["count"] == 1
    html = str(widgets.sub_budgets_table(subs, "s"))
    assert "reports" in html and "<td>1</td>" in html


def test_the_wizard_pays_from_a_sub_budget(tmp_path: Path, people: Path) -> None:
    """``approxdp serve --sub-budget`` creates the ledger and a file per sub-budget; the
    wizard may pay from one (``ledger_sub``, one of the ledger's own), reviewed and released
    through it, and its script does the same; the Ledger page lists them."""
    from approxdp.web import widgets

    path = tmp_path / "study.sqlite"
    config = web_config.make_config(ledger=path, budget=(4.0, 1e-6), data=[people],
                                    sub_budgets={"reports": (1.0, 2e-7)})
    assert config.sub_budgets == ("reports",) and (tmp_path / "study.reports.sqlite").is_file()
    again = web_config.make_config(ledger=path, data=[people])  # the stored split, kept
    assert again.sub_budgets == ("reports",)
    with pytest.raises(InvalidParameterError, match="--sub-budget differs"):
        web_config.make_config(ledger=path, sub_budgets={"reports": (0.5, 2e-7)})
    schema = wizard.schema_of(config.data[0])
    form = {**_FORM, "ledger_sub": "reports"}
    spec = wizard.read_spec(config, form, schema)
    assert spec.ledger_sub == "reports"
    cost = wizard.cost_preview(spec, path, schema)
    assert cost["ledger_sub"] == "reports" and cost["now"]["budget_epsilon"] == 1.0
    made = wizard.release(spec, schema, path)
    assert made["ledger_sub"] == "reports" and made["budget"]["count"] == 1
    assert made["budget"]["budget_epsilon"] == 1.0
    view = ledger.ledger_view(path)
    assert view["status"]["count"] == 0
    assert view["status"]["sub_budgets"]["reports"]["status"]["count"] == 1
    html = str(widgets.sub_budgets_table(view["status"]["sub_budgets"], "s"))
    assert "study.reports.sqlite" in html
    script = wizard.release_script(spec, schema, path)
    assert "pays = accountant.sub('reports')" in script and "accountant=pays" in script
    compile(script, "release.py", "exec")
    for bad in ("other", "../x"):
        with pytest.raises(InvalidParameterError, match=r"ledger_sub must be one of the "
                                                        r"ledger's sub-budgets \['reports'\]"):
            wizard.read_spec(config, {**_FORM, "ledger_sub": bad}, schema)
    assert wizard.read_spec(config, {**_FORM, "ledger_sub": ""}, schema).ledger_sub is None
