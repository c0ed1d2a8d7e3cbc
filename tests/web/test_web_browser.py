"""``approxdp serve`` in a real browser: Playwright drives Chromium (issue 18).

The server runs as ``python -m approxdp serve`` on a free loopback port with a ledger that
already holds five spends (and a basic and a Rényi share) and a small CSV. Chromium is
Debian's ``chromium`` package (or ``APPROXDP_CHROMIUM``), never Playwright's own download;
``scripts/test.py`` installs it when missing and running as root. Without a browser these
tests skip with the reason — except in CI (``CI=true``), where they fail: there they are
required.

Screenshots of every page go to the tests' temporary folder (``APPROXDP_SCREENSHOTS`` names
another) so that a person can look at them.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import approxdp as dp
from approxdp.accounting import read_ledger_settings

_IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
_TIMEOUT_MS = 30_000


def _unavailable(reason: str) -> None:
    if _IN_CI:
        pytest.fail(f"browser tests are required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _chromium() -> str | None:
    given = os.environ.get("APPROXDP_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spends(ledger: Path) -> int:
    with dp.PrivacyAccountant(read_ledger_settings(ledger).budget, ledger=ledger) as acct:
        return len(acct.history())


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page screenshots go."""
    folder = os.environ.get("APPROXDP_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``approxdp serve`` on a free port: its URL, ledger (five spends, a basic and a Rényi
    share, a sub-budget) and data file."""
    pytest.importorskip("shiny", reason="approxdp serve needs the web extra")
    folder = tmp_path_factory.mktemp("serve")
    data = folder / "people.csv"
    with open(data, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["person", "age", "sex"])
        for i in range(500):
            writer.writerow([i, 18 + (i * 7) % 72, "F" if i % 3 else "M"])
    ledger = folder / "budget.sqlite"
    with dp.PrivacyAccountant((3.0, 1e-5), ledger=ledger, basic_share=(0.5, 2e-7),
                              rdp_share=(1.0, 2e-7), rdp_orders=[8, 16, 32],
                              sub_budgets={"reports": (0.5, 1e-7)}) as acct:
        acct.spend(dp.GaussianEvent(sigma=6.0, label="survey wave 1"))
        acct.spend(dp.EpsilonDeltaEvent(epsilon=0.25, delta=1e-7, label="survey wave 2"))
        for _ in range(3):  # DP-SGD steps from the same ledger: charged to its Rényi share
            acct.spend(dp.SubsampledEvent(dp.GaussianEvent(sigma=2.0), 0.01, label="step"))
    port = _free_port()
    log = open(folder / "server.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "approxdp", "serve", "--port", str(port), "--ledger",
         str(ledger), "--data", str(data)],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        opened = ""
        while True:
            printed = re.search(r"open (http://\S+)", (folder / "server.log").read_text("utf-8"))
            if printed:
                opened = printed.group(1)
                try:
                    with urllib.request.urlopen(opened, timeout=2) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("approxdp serve did not start: "
                            + (folder / "server.log").read_text(encoding="utf-8"))
            time.sleep(0.2)
        token = opened.split("?token=", 1)[1]
        yield {"url": url, "open": opened, "token": token,
               "cookie": f"approxdp-token-{port}={token}", "ledger": ledger, "data": data,
               "log": folder / "server.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's package) under Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (it is in the test extra)")
    executable = _chromium()
    if executable is None:
        _unavailable("no Chromium found: install Debian's package (apt-get install chromium; "
                     "scripts/test.py does this when run as root) or set APPROXDP_CHROMIUM")
    with sync_playwright() as play:
        launched = play.chromium.launch(executable_path=executable, headless=True,
                                        args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, served: dict[str, Any]) -> Iterator[Any]:
    """A fresh page (its own session) on the app, checked for failed requests afterwards."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(_TIMEOUT_MS)
    from playwright.sync_api import expect

    # assertions wait as long as actions: on a busy machine a Shiny recomputation can take more
    # than expect()'s own default of 5 s (the failures read "with timeout 5000ms")
    expect.set_options(timeout=_TIMEOUT_MS)
    failed: list[str] = []
    tab.on("requestfailed", lambda request: failed.append(request.url))
    tab.on("response", lambda r: failed.append(f"{r.status} {r.url}")
           if r.status >= 400 and not r.url.endswith("favicon.ico") else None)
    tab.goto(served["open"])  # the printed URL, with its token
    tab.wait_for_selector("#cal_methods")
    yield tab
    context.close()
    assert not failed, f"requests that failed (offline assets?): {failed}"


def _open(page: Any, name: str) -> None:
    page.click(f"a[data-value={name}]")


def _row(page: Any, table: str, key: str) -> Any:
    return page.locator(f"#{table} tr[data-row='{key}']")


def _plot_src(page: Any, output: str) -> str:
    page.wait_for_selector(f"#{output} img")
    return str(page.locator(f"#{output} img").get_attribute("src"))


def test_calibrate_page(page: Any, shots: Path) -> None:
    """σ = 3.7306 at (1, 1e-5); ε = 10 makes the classical formula NOT private and redraws the
    plots; the plots are inline images (no request leaves the machine)."""
    from playwright.sync_api import expect

    expect(page.locator("#cal_sigma")).to_have_text("σ = 3.7306")
    expect(_row(page, "cal_methods", "dwork-roth-2014")).to_contain_text("yes")
    profile, failure = _plot_src(page, "cal_profile"), _plot_src(page, "cal_failure")
    assert profile.startswith("data:image/png;base64,")
    expect(page.locator("#binding")).to_contain_text("reachable from this computer only")
    page.screenshot(path=str(shots / "calibrate.png"), full_page=True)

    page.fill("#cal_epsilon", "10")
    expect(page.locator("#cal_sigma")).not_to_have_text("σ = 3.7306")
    expect(_row(page, "cal_methods", "dwork-roth-2014")).to_contain_text("NO — not private")
    expect(_row(page, "cal_methods", "optimal")).to_contain_text("yes")
    page.wait_for_function(
        "([id, old]) => { const i = document.querySelector('#' + id + ' img');"
        " return i && i.getAttribute('src') !== old; }", arg=["cal_profile", profile])
    assert _plot_src(page, "cal_failure") != failure
    page.screenshot(path=str(shots / "calibrate-eps10.png"), full_page=True)


def test_bad_input_shows_one_line_by_the_field(page: Any, shots: Path) -> None:
    """The API's typed error, one line, under the field, in the page's words (ε, not
    epsilon; no Python type name) — never a traceback."""
    from playwright.sync_api import expect

    page.fill("#cal_epsilon", "-1")
    error = page.locator("[data-field=cal_epsilon]")
    expect(error).to_have_text("ε must be in [0, inf), got ε=-1")
    assert page.locator("[data-field=cal_delta]").count() == 0
    page.fill("#cal_epsilon", "1")
    page.fill("#cal_delta", "abc")
    expect(page.locator("[data-field=cal_delta]")).to_have_text(
        "δ must be a number, got 'abc'")
    expect(page.locator("[data-field=cal_epsilon]")).to_have_count(0)
    page.screenshot(path=str(shots / "calibrate-error.png"), full_page=True)
    assert "Traceback" not in page.content()


def test_compose_and_dpsgd_page(page: Any, shots: Path) -> None:
    """Every rule and accountant with its label; the noise multiplier for a target ε."""
    from playwright.sync_api import expect

    _open(page, "compose")
    expect(_row(page, "cmp_rules", "exact-gaussian")).to_contain_text("exact")
    for name in dp.DPSGD_ACCOUNTANTS:
        expect(_row(page, "sgd_accountants", name)).to_be_visible()
    expect(_row(page, "sgd_accountants", "gdp-clt")).to_contain_text("approximation")
    expect(_row(page, "sgd_accountants", "pld")).to_contain_text("upper bound")
    _plot_src(page, "sgd_curve")
    page.click("#sgd_find")
    expect(page.locator("#sgd_sigma")).to_contain_text("σ = 0.9")
    page.fill("#sgd_sample_rate", "2")
    expect(page.locator("[data-field=sgd_sample_rate]")).to_contain_text(
        "sample_rate must be in (0, 1], got sample_rate=2")
    page.fill("#sgd_sample_rate", "0.01")
    expect(page.locator("[data-field=sgd_sample_rate]")).to_have_count(0)
    page.screenshot(path=str(shots / "compose-dpsgd.png"), full_page=True)


def test_ledger_page(page: Any, served: dict[str, Any], shots: Path) -> None:
    """The ledger's spends, totals and burn-down, read-only."""
    from playwright.sync_api import expect

    before = served["ledger"].read_bytes()
    count = _spends(served["ledger"])
    _open(page, "ledger")
    expect(page.locator("#ledger_count")).to_have_text(f"{count} spend(s)")
    expect(page.locator("#ledger_table")).to_contain_text("survey wave 1")
    expect(page.locator("#ledger_status tr[data-row=budget]")).to_contain_text("3")
    # which filter and mode certify the total, and what the spent figures are
    expect(page.locator("#ledger_certified")).to_contain_text("filter 'gdp'")
    expect(page.locator("#ledger_certified")).to_contain_text("fully adaptive")
    expect(page.locator("#ledger_spent_meaning")).to_contain_text("the guarantee")
    expect(page.locator("#ledger_rdp_share_summary")).to_contain_text("Rényi share")
    expect(page.locator("#ledger_rdp_share")).to_contain_text("(most left)")
    expect(page.locator("#ledger_rdp_share tr")).to_have_count(4)  # a header, three orders
    expect(page.locator("#ledger_basic_share")).to_contain_text("(0.5, 2e-07)")
    expect(page.locator("#ledger_sub_budgets")).to_contain_text("budget.reports.sqlite")
    _plot_src(page, "ledger_burn")
    page.screenshot(path=str(shots / "ledger.png"), full_page=True)
    assert served["ledger"].read_bytes() == before


def test_wizard_simulates_free_and_spends_once(
    page: Any, served: dict[str, Any], shots: Path, tmp_path: Path,
) -> None:
    """Simulate and review spend nothing; the spend button releases exactly once; the
    downloads and the ledger page follow."""
    from playwright.sync_api import expect

    ledger = served["ledger"]
    start = _spends(ledger)
    _open(page, "wizard")
    page.wait_for_selector("#wiz_columns_table")
    page.select_option("#wiz_column", "age")
    page.fill("#wiz_low", "18")
    page.fill("#wiz_high", "90")
    page.click("#wiz_simulate")
    box = page.locator("#wiz_simulation_box")
    expect(box).to_contain_text("SIMULATION on synthetic data — not your data, NOT private, "
                                "nothing spent")
    expect(page.locator("#wiz_simulated_cells")).to_be_visible()
    assert _spends(ledger) == start

    page.click("#wiz_review")
    expect(page.locator("#wiz_price")).to_have_text("ε = 0.5, δ = 1e-06")
    query = page.locator("#wiz_query_table")  # the whole query, before the spend
    for text in ("mean", "value column", "age", "[18, 90]", "each row", "ε", "0.5", "δ",
                 "1e-06", "confidence level", "people.csv"):
        expect(query).to_contain_text(text)
    expect(page.locator("#wiz_spend")).to_be_visible()
    assert _spends(ledger) == start
    page.screenshot(path=str(shots / "wizard-review.png"), full_page=True)

    page.fill("#wiz_epsilon", "0.4")  # the reviewed cost no longer holds: no button
    page.press("#wiz_epsilon", "Enter")
    expect(page.locator("#wiz_stale")).to_be_visible()
    expect(page.locator("#wiz_spend")).to_have_count(0)
    page.fill("#wiz_epsilon", "0.5")  # exactly the reviewed form again: its cost holds
    page.press("#wiz_epsilon", "Enter")
    expect(page.locator("#wiz_spend")).to_be_visible()
    assert _spends(ledger) == start
    page.click("#wiz_spend")
    expect(page.locator("#wiz_released_box")).to_contain_text("Released: mean(age)")
    assert _spends(ledger) == start + 1
    expect(page.locator("#wiz_spend")).to_have_count(0)  # consumed by its click
    page.screenshot(path=str(shots / "wizard-released.png"), full_page=True)

    texts = {}
    for name in ("json", "csv", "script"):
        with page.expect_download() as info:
            page.click(f"#wiz_download_{name}")
        target = tmp_path / info.value.suggested_filename
        info.value.save_as(target)
        texts[name] = target.read_text(encoding="utf-8")
    assert '"label": "mean(age)"' in texts["json"]
    assert texts["csv"].splitlines()[0].startswith("value,std,ci_low,ci_high")
    assert "dp.PrivateTable(" in texts["script"]
    assert "table.release_kind('mean', KindInputs(columns=('age',)" in texts["script"]
    assert _spends(ledger) == start + 1

    # the inputs change: the last result and simulation are no longer shown as if current
    page.fill("#wiz_high", "80")
    page.press("#wiz_high", "Enter")
    expect(page.locator("#wiz_released_stale")).to_be_visible()
    expect(page.locator("#wiz_released_box")).to_have_count(0)
    expect(page.locator("#wiz_simulation_stale")).to_be_visible()
    expect(page.locator("#wiz_simulation_box")).to_have_count(0)
    # a histogram without a domain: the page explains partition selection, and so does the
    # review of exactly that query
    page.select_option("#wiz_kind", "histogram")
    page.evaluate("Shiny.setInputValue('wiz_columns', ['sex'])")
    expect(page.locator("#wiz_selection_explained")).to_contain_text("DP partition selection")
    page.click("#wiz_review")
    expect(page.locator("#wiz_query_table")).to_contain_text(
        "none: cells are chosen by DP partition selection")
    expect(page.locator("#wiz_query_table")).to_contain_text("count over")
    assert _spends(ledger) == start + 1

    _open(page, "ledger")
    expect(page.locator("#ledger_count")).to_have_text(f"{start + 1} spend(s)")


def test_wizard_reviews_a_release_from_a_sub_budget(page: Any, served: dict[str, Any]) -> None:
    """A ledger with sub-budgets: the wizard's "pay from" lists them; the review prices the
    release against the chosen one. Nothing is spent."""
    from playwright.sync_api import expect

    start = _spends(served["ledger"])
    _open(page, "wizard")
    page.wait_for_selector("#wiz_columns_table")
    page.select_option("#wiz_column", "age")
    page.select_option("#wiz_ledger_sub", "reports")
    page.click("#wiz_review")
    expect(page.locator("#wiz_cost_box")).to_contain_text(
        "from sub-budget 'reports' of ledger budget.sqlite")
    expect(page.locator("#wiz_cost_table")).to_contain_text("now")
    assert _spends(served["ledger"]) == start


def test_no_path_traversal(page: Any, served: dict[str, Any]) -> None:
    """A tampered file choice is refused by the field; no URL serves a file outside the app;
    requests naming another host, or coming from another site's page, are refused."""
    from playwright.sync_api import expect

    _open(page, "wizard")
    page.wait_for_selector("#wiz_columns_table")
    page.evaluate("Shiny.setInputValue('wiz_file', '../../../../etc/passwd')")
    expect(page.locator("[data-field=wiz_file]")).to_contain_text(
        "data file must be one of the data files given to 'approxdp serve "
        "--data', got '../../../../etc/passwd'")
    assert "root:" not in page.content()
    base = served["url"]
    for path in ("../../../../etc/passwd", "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                 "lib/..%2f..%2f..%2f..%2fetc/passwd", "session/x/download/wiz_download_json"):
        request = urllib.request.Request(base + path, headers={"Cookie": served["cookie"]})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                body = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            assert exc.code in (400, 403, 404), (path, exc.code)
            continue
        assert "root:" not in body, path
    # another name for this address (DNS rebinding) or another site's page: refused
    for headers in ({"Host": f"evil.example:{base.rsplit(':', 1)[1].strip('/')}",
                     "Cookie": served["cookie"]},
                    {"Origin": "https://evil.example", "Cookie": served["cookie"]}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(base, headers=headers), timeout=5)
        assert refused.value.code == 403


def _websocket_status(url: str, cookie: str | None) -> int:
    """The HTTP status of a WebSocket handshake on Shiny's socket (101: accepted)."""
    parts = urllib.parse.urlsplit(url)
    head = ["GET /websocket/ HTTP/1.1", f"Host: {parts.netloc}", "Upgrade: websocket",
            "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13", f"Origin: http://{parts.netloc}"]
    if cookie is not None:
        head.append(f"Cookie: {cookie}")
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        line = sock.recv(4096).split(b"\r\n", 1)[0].decode()
    return int(line.split()[1])


def test_every_request_needs_the_token(browser: Any, served: dict[str, Any]) -> None:
    """Issue 23 §7: the printed URL carries a secret token made at start; an HTTP request or a
    WebSocket without it (or with another) is refused, and with it gets through; the browser
    that opened the URL keeps it in a cookie for the socket and the downloads."""
    from playwright.sync_api import expect

    base = served["url"]
    assert served["open"] == f"{base}?token={served['token']}" and len(served["token"]) >= 40
    for url in (base, f"{base}?token=wrong{served['token'][5:]}", f"{base}lib/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=5)
        assert refused.value.code == 403
        assert b"carries the access token" in refused.value.read()
    with urllib.request.urlopen(urllib.request.Request(
            base, headers={"Cookie": served["cookie"]}), timeout=5) as response:
        assert response.status == 200
    assert _websocket_status(base, None) == 403
    assert _websocket_status(base, "approxdp-token-1=" + served["token"]) == 403
    assert _websocket_status(base, served["cookie"]) == 101
    context = browser.new_context()
    try:
        tab = context.new_page()
        response = tab.goto(base)  # no token: the app never loads
        assert response is not None and response.status == 403
        expect(tab.locator("body")).to_contain_text("refused: open the address approxdp serve "
                                                    "printed")
        tab.goto(served["open"])  # the printed URL: the app, whose socket the cookie opens
        tab.wait_for_selector("#cal_methods", timeout=_TIMEOUT_MS)
        cookies = {c["name"]: c for c in context.cookies()}
        jar = cookies[served["cookie"].split("=", 1)[0]]
        assert jar["httpOnly"] and jar["sameSite"] == "Strict"
    finally:
        context.close()


def test_review_shows_the_small_data_advice_without_data_numbers(
    page: Any, served: dict[str, Any], shots: Path,
) -> None:
    """Issue 23 §4 in the browser: the review step shows the small-data advice for the assumed
    number of rows (a public guess) — private bounds with too few values, groups below the
    partition-selection threshold — in words and public thresholds only."""
    from playwright.sync_api import expect

    ledger = served["ledger"]
    start = _spends(ledger)
    _open(page, "wizard")
    page.wait_for_selector("#wiz_columns_table")
    page.select_option("#wiz_column", "age")
    page.check("#wiz_bounds_mode input[value=private]")
    page.fill("#wiz_rows", "50")
    page.press("#wiz_rows", "Enter")
    page.click("#wiz_review")
    advice = page.locator("#wiz_small_data")
    expect(advice).to_contain_text("too few values for private bounds")
    expect(advice).to_contain_text("your guess, not the data")
    text = advice.inner_text()
    assert "500" not in text and "nothing was spent" not in text  # the file has 500 rows
    page.screenshot(path=str(shots / "wizard-small-data.png"), full_page=True)
    page.fill("#wiz_rows", "200000")  # enough rows: no advice
    page.press("#wiz_rows", "Enter")
    page.click("#wiz_review")
    expect(page.locator("#wiz_price")).to_be_visible()
    expect(page.locator("#wiz_small_data")).to_have_count(0)
    page.select_option("#wiz_kind", "histogram")  # partition selection on 20 assumed rows
    page.evaluate("Shiny.setInputValue('wiz_columns', ['sex'])")
    page.fill("#wiz_rows", "20")
    page.press("#wiz_rows", "Enter")
    page.click("#wiz_review")
    expect(page.locator("#wiz_small_data")).to_contain_text("partition-selection threshold")
    assert _spends(ledger) == start


def test_the_wizard_takes_a_quantile_trees_shape(page: Any, served: dict[str, Any]) -> None:
    """The tree's shape fields show for median and quantiles only; what is typed reaches the
    review, and a bad shape is refused on its field before anything is spent."""
    from playwright.sync_api import expect

    ledger = served["ledger"]
    start = _spends(ledger)
    _open(page, "wizard")
    page.wait_for_selector("#wiz_columns_table")
    expect(page.locator("#wiz_bins")).to_be_hidden()  # mean: no tree
    page.select_option("#wiz_kind", "quantiles")
    page.select_option("#wiz_column", "age")
    page.fill("#wiz_low", "18")
    page.fill("#wiz_high", "90")
    expect(page.locator("#wiz_bins")).to_be_visible()
    page.fill("#wiz_bins", "100")
    page.fill("#wiz_branching", "8")
    page.press("#wiz_branching", "Enter")
    page.click("#wiz_review")
    expect(page.locator("[data-field=wiz_bins]")).to_contain_text("bins")
    expect(page.locator("#wiz_spend")).to_have_count(0)
    page.fill("#wiz_bins", "64")
    page.press("#wiz_bins", "Enter")
    page.click("#wiz_review")
    expect(page.locator("#wiz_query_table")).to_contain_text("64 leaves, branching 8")
    expect(page.locator("#wiz_spend")).to_be_visible()
    assert _spends(ledger) == start
