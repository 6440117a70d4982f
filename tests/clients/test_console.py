"""The web console in a real browser: Debian's Chromium driven by Selenium against a
`covenant serve` (started here, with an auth file) holding realistic data: Avro, JSON Schema
and Protobuf subjects, eleven versions of one, a refused change, consumers with usage, a
data profile and a deprecation with blockers. Clicks through every page, runs a diff, tests a
candidate, advances a deprecation, checks what a reader without permission sees, and that
markup in a schema's doc or a subject name never runs. Screenshots of the main pages go to
target/screenshots/ (docs/screenshots/ with COVENANT_UPDATE_SCREENSHOTS=1)."""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

# Drivers are given explicitly: Selenium Manager must not look for downloads.
os.environ.setdefault("SE_OFFLINE", "true")
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# The test run writes its screenshots under target/; COVENANT_UPDATE_SCREENSHOTS=1 refreshes
# the ones README shows (docs/screenshots).
SHOTS = ROOT / ("docs" if os.environ.get("COVENANT_UPDATE_SCREENSHOTS") == "1" else "target") / "screenshots"
SUBJECT = "orders-value"
HOSTILE_SUBJECT = "orders-<img src=x onerror=window.__pwned=3>"
HOSTILE_DOC = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
DAILY_REPORTS = [1, 2, 4, 3, 5, 6, 4, 7, 5, 2]
PASSWORDS = {"steward": "s-pass", "reader": "r-pass", "svc-billing": "b-pass", "svc-analytics": "a-pass",
             "svc-mystery": "m-pass"}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(base, method, path, body=None, user="steward", raw=None):
    """A JSON API call as `user`; returns (status, parsed body)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(base + path, data=data, method=method)
    token = base64.b64encode(f"{user}:{PASSWORDS[user]}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    request.add_header("Content-Type", "application/json")
    request.add_header("User-Agent", "console-test")
    try:
        with urllib.request.urlopen(request) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def ok(base, method, path, body=None, **kw):
    status, answer = call(base, method, path, body, **kw)
    assert status == 200, f"{method} {path}: {status} {answer}"
    return answer


def quoted(subject):
    return urllib.parse.quote(subject, safe="")


def avro(fields, doc="Orders as placed."):
    return json.dumps({"type": "record", "name": "Order", "namespace": "shop", "doc": doc, "fields": fields})


def order_fields(n):
    """The fields of version n + 1 of the orders subject: each version adds an optional note,
    and the sixth renamed `amount` to `total`."""
    fields = [{"name": "id", "type": "string"}, {"name": "total" if n >= 5 else "amount", "type": "double"}]
    return fields + [{"name": f"note{k}", "type": ["null", "string"], "default": None} for k in range(1, n + 1)]


def seed(base, bin_path, tmp, clock):
    versions = f"/subjects/{SUBJECT}/versions"
    # The subject began without a compatibility level: v6 renamed `amount` to `total`, which
    # BACKWARD would have refused (the diff of v5 and v6 shows it); it has been BACKWARD since.
    ok(base, "PUT", f"/config/{SUBJECT}", {"compatibility": "NONE"})
    for n in range(0, 11):
        doc = HOSTILE_DOC if n == 10 else "Orders as placed."
        ok(base, "POST", versions, {"schema": avro(order_fields(n), doc)})
    fields = order_fields(10)
    ok(base, "PUT", f"/config/{SUBJECT}", {"compatibility": "BACKWARD"})
    refused = fields + [{"name": "currency", "type": "string"}]
    status, answer = call(base, "POST", versions, {"schema": avro(refused)})
    assert status == 409, answer
    customer = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}
    ok(base, "POST", "/subjects/orders-customer-json/versions", {"schema": json.dumps(customer), "schemaType": "JSON"})
    customer["properties"]["email"] = {"type": "string"}
    ok(base, "POST", "/subjects/orders-customer-json/versions", {"schema": json.dumps(customer), "schemaType": "JSON"})
    proto = 'syntax = "proto3";\npackage pay;\nmessage Payment {\n  string id = 1;\n}\n'
    ok(base, "POST", "/subjects/payments-value/versions", {"schema": proto, "schemaType": "PROTOBUF"})
    proto2 = proto.replace("  string id = 1;\n", "  string id = 1;\n  int64 cents = 2;\n")
    ok(base, "POST", "/subjects/payments-value/versions", {"schema": proto2, "schemaType": "PROTOBUF"})
    ok(base, "POST", f"/subjects/{quoted(HOSTILE_SUBJECT)}/versions", {"schema": avro(fields[:2])})
    line_item = {"type": "record", "name": "LineItem", "namespace": "shop",
                 "fields": [{"name": "order", "type": "shop.Order"}, {"name": "sku", "type": "string"}]}
    ok(base, "POST", "/subjects/orders-line-value/versions", {
        "schema": json.dumps(line_item),
        "references": [{"name": "shop.Order", "subject": SUBJECT, "version": 11}],
    })
    for name, level, record in [("inventory.stock-value", "FULL", "Stock"), ("shipping.parcel-value", "FORWARD", "Parcel"),
                                ("shop.cart-key", "NONE", "CartKey"), ("shop.cart-value", "BACKWARD_TRANSITIVE", "Cart")]:
        ok(base, "PUT", f"/config/{name}", {"compatibility": level})
        schema = {"type": "record", "name": record, "fields": [{"name": "id", "type": "string"}]}
        ok(base, "POST", f"/subjects/{name}/versions", {"schema": json.dumps(schema)})
    for name, client, read in [
        ("billing", "svc-billing", ["id", "note1"]),
        ("analytics", "svc-analytics", ["total", "note2"]),
    ]:
        ok(base, "POST", "/covenant/v1/consumers", {
            "name": name, "owner": f"{name}-team", "purpose": f"{name} of orders",
            "cadence": "daily", "criticality": "high", "contact": f"{name}@example.com",
            "clients": [client], "reads": [{"subject": SUBJECT, "fields": read}],
        })
    # Usage over the last ten days: the server reads governance time from a clock file, moved
    # back a day at a time, then set to now again.
    now_ms = int(time.time() * 1000)
    for days_ago, reports in zip(range(9, -1, -1), DAILY_REPORTS):
        clock.write_text(str(now_ms - days_ago * 86_400_000))
        for _ in range(reports):
            ok(base, "POST", "/covenant/v1/usage", {
                "subject": SUBJECT, "client_id": "svc-billing", "fields_read": ["note1", "id"],
                "records_by_version": {"11": 500},
            }, user="svc-billing")
    clock.write_text(str(now_ms))
    for client, read in [("svc-analytics", ["total"]), ("svc-mystery", ["note1"])]:
        ok(base, "POST", "/covenant/v1/usage", {
            "subject": SUBJECT, "client_id": client, "fields_read": read, "records_by_version": {"11": 500},
        }, user=client)
    ok(base, "GET", f"/subjects/{SUBJECT}/versions/latest")
    ok(base, "POST", "/covenant/v1/deprecations", {
        "target": {"kind": "field", "subject": SUBJECT, "path": "note1"},
        "contract": "order notes", "old_promise": "note1 holds the courier's remark",
        "new_promise": "note2 holds every remark", "replacement": "note2",
        "owners": [{"role": "producer", "name": "orders-team"}],
    })
    records = tmp / "orders.jsonl"
    for start, window, filled in [("2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z", 80),
                                  ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", 40)]:
        lines = [json.dumps({"id": str(i), "total": i * 1.5, "note1": "x" if i < filled else None,
                             "note2": "y" if i >= filled else None}) for i in range(100)]
        records.write_text("\n".join(lines) + "\n")
        profile = tmp / "orders.profile.json"
        subprocess.run([bin_path, "profile", str(records), "-o", str(profile)], check=True, capture_output=True)
        path = f"/covenant/v1/subjects/{SUBJECT}/profiles?from={urllib.parse.quote(start)}&to={urllib.parse.quote(window)}"
        status, answer = call(base, "POST", path, raw=profile.read_bytes())
        assert status == 200, answer


@pytest.fixture(scope="module")
def server():
    bin_path = os.environ.get("COVENANT_BIN")
    if not bin_path:
        pytest.skip("COVENANT_BIN is not set; run scripts/client-tests.sh")
    tmp = Path(tempfile.mkdtemp(prefix="covenant-console-"))
    auth = tmp / "auth.json"
    for user, password in PASSWORDS.items():
        subprocess.run([bin_path, "auth", "add-user", str(auth), user, "--password-stdin"],
                       input=f"{password}\n", text=True, check=True, capture_output=True)
    for user, op, resource in [("steward", "Admin", "Config:"), ("steward", "Admin", "Subject:.*"),
                               ("reader", "Read", "SubjectPrefix:orders-"),
                               ("svc-billing", "Govern", "Config:"), ("svc-analytics", "Govern", "Config:"),
                               ("svc-mystery", "Govern", "Config:")]:
        subprocess.run([bin_path, "auth", "grant", str(auth), user, op, resource], check=True, capture_output=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp / "server.log", "w")
    clock = tmp / "clock"
    clock.write_text(str(int(time.time() * 1000)))
    proc = subprocess.Popen([bin_path, "serve", "--clock-file", str(clock), "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp / "data"),
                             "--auth-file", str(auth)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            urllib.request.urlopen(base + "/health/live")
            break
        except OSError:
            time.sleep(0.05)
    seed(base, bin_path, tmp, clock)
    yield base
    proc.terminate()
    proc.wait(timeout=10)
    log.close()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromedriver are required (scripts/client-tests.sh installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="covenant-chromium-")
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1000"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    driver.implicitly_wait(2)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return Math.min(document.body.scrollHeight, 2400)")
    driver.set_window_size(1280, max(700, height + 160))
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1280, 1000)


def click_through(driver, element, confirm=None):
    """Clicks `element` and waits for the next page (accepting the confirmation first when
    `confirm` is a word the question must contain), so no lookup lands on the old page."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    if confirm is not None:
        WebDriverWait(driver, 5).until(EC.alert_is_present())
        alert = driver.switch_to.alert
        assert confirm in alert.text, alert.text
        alert.accept()
    WebDriverWait(driver, 10).until(lambda _: replaced(old))


def replaced(element):
    """Whether the page holding `element` has gone; while it goes, Chromium may answer with
    a stale-element error or another inspector error, both meaning the same."""
    try:
        element.is_enabled()
        return False
    except WebDriverException:
        return True


def assert_nothing_ran(driver):
    try:
        alert = driver.switch_to.alert
        pytest.fail(f"an alert opened: {alert.text}")
    except NoAlertPresentException:
        pass
    assert driver.execute_script("return window.__pwned === undefined"), "injected markup ran"


def sign_in(driver, base, user):
    driver.delete_all_cookies()
    driver.get(base + "/ui/subjects")
    assert driver.current_url.endswith("/ui/sign-in"), "an anonymous visitor is sent to sign in"
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(PASSWORDS[user])
    click_through(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/ui/sign-in'] button"))
    who = driver.find_element(By.ID, "who").text
    assert who == f"Signed in as {user}", driver.page_source[:3000]


def test_wrong_password_is_refused(server, browser):
    browser.delete_all_cookies()
    browser.get(server + "/ui/sign-in")
    browser.find_element(By.NAME, "username").send_keys("steward")
    browser.find_element(By.NAME, "password").send_keys("wrong")
    click_through(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/ui/sign-in'] button"))
    assert "Sign-in failed" in (browser.find_elements(By.CSS_SELECTOR, "[role=alert]") or [browser.find_element(By.TAG_NAME, "body")])[0].text, browser.page_source


def test_subjects_page_searches_and_shows_badges(server, browser):
    sign_in(browser, server, "steward")
    rows = browser.find_elements(By.CSS_SELECTOR, "#subjects tbody tr")
    names = [r.find_element(By.CSS_SELECTOR, "td a").text for r in rows]
    assert SUBJECT in names and "payments-value" in names and HOSTILE_SUBJECT in names
    orders = next(r for r in rows if r.find_element(By.CSS_SELECTOR, "td a").text == SUBJECT)
    assert "v11" in orders.text and "BACKWARD" in orders.text and "deprecated: announced" in orders.text
    assert_nothing_ran(browser)
    shot(browser, "subjects")
    Select(browser.find_element(By.NAME, "type")).select_by_value("PROTOBUF")
    click_through(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#subjects tbody td a")]
    assert names == ["payments-value"]
    browser.get(server + "/ui/subjects?level=FULL")
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#subjects tbody td a")] == ["inventory.stock-value"]
    browser.get(server + "/ui/subjects?q=customer")
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#subjects tbody td a")] == ["orders-customer-json"]


def test_subject_page_and_hostile_doc(server, browser):
    browser.get(server + "/ui/subjects")
    click_through(browser, browser.find_element(By.LINK_TEXT, SUBJECT))
    assert browser.find_element(By.ID, "subject-name").text == SUBJECT
    assert len(browser.find_elements(By.CSS_SELECTOR, "#versions tbody tr")) == 11
    assert "BACKWARD (set on the subject)" in browser.find_element(By.ID, "level").text
    schema = browser.find_element(By.ID, "schema").text
    assert "<script>window.__pwned=1</script>" in schema, "the doc is shown as text"
    assert browser.find_elements(By.CSS_SELECTOR, "#schema span.s"), "strings are highlighted"
    assert "orders-line-value v1" in browser.find_element(By.ID, "referenced-by").text
    assert_nothing_ran(browser)
    shot(browser, "subject")
    click_through(browser, browser.find_element(By.LINK_TEXT, "orders-line-value v1"))
    assert f"{SUBJECT} v11" in browser.find_element(By.ID, "references").text
    browser.get(server + "/ui/subjects/payments-value")
    keywords = [k.text for k in browser.find_elements(By.CSS_SELECTOR, "#schema span.k")]
    assert "message" in keywords and "syntax" in keywords, keywords
    browser.get(server + "/ui/subjects/" + quoted(HOSTILE_SUBJECT))
    assert browser.find_element(By.ID, "subject-name").text == HOSTILE_SUBJECT
    assert_nothing_ran(browser)


def test_diff_shows_findings_anchored_to_lines(server, browser):
    browser.get(server + f"/ui/subjects/{SUBJECT}")
    Select(browser.find_element(By.ID, "diff-a")).select_by_value("5")
    Select(browser.find_element(By.ID, "diff-b")).select_by_value("6")
    click_through(browser, browser.find_element(By.CSS_SELECTOR, "#diff-form button"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "v5 → v6"
    assert browser.find_element(By.ID, "verdict").text.startswith("✗")
    links = browser.find_elements(By.CSS_SELECTOR, "#findings a[href^='#']")
    assert links, "findings link to the lines they concern"
    target = links[0].get_attribute("href").split("#")[1]
    line = browser.find_element(By.ID, target)
    assert "⚑" in line.text
    changed = browser.find_elements(By.CSS_SELECTOR, "#diff td.mk[aria-label=chg]")
    assert changed and all(c.text == "~" for c in changed), "changed lines are marked in words, not colour alone"
    assert browser.find_elements(By.CSS_SELECTOR, "#diff td.mk[aria-label=ins]"), "added lines are marked"
    assert "total" in line.text
    shot(browser, "diff")


def test_candidate_is_judged_with_its_rollout_plan(server, browser):
    browser.get(server + f"/ui/subjects/{SUBJECT}")
    # The change the registry refused while seeding: a new field without a default.
    fields = order_fields(10) + [{"name": "currency", "type": "string"}]
    area = browser.find_element(By.ID, "candidate")
    area.clear()
    area.send_keys(avro(fields))
    click_through(browser, browser.find_element(By.CSS_SELECTOR, "#candidate-form button"))
    verdict = browser.find_element(By.ID, "verdict").text
    assert verdict.startswith("✗"), verdict
    rules = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#findings tbody td:first-child")]
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in rules, rules
    link = browser.find_element(By.XPATH, "//table[@id='findings']//a[text()='/fields/currency']")
    line = browser.find_element(By.ID, link.get_attribute("href").split("#")[1])
    assert "currency" in line.text and "⚑" in line.text, line.text
    plan = browser.find_elements(By.CSS_SELECTOR, "#plan tbody tr")
    assert len(plan) == 4, "old/old, old/new, new/old, new/new"
    assert any("unsafe" in r.text for r in plan)
    shot(browser, "candidate")


def test_consumers_page(server, browser):
    browser.get(server + f"/ui/subjects/{SUBJECT}/consumers")
    declared = browser.find_element(By.ID, "declared").text
    assert "billing" in declared and "note1" in declared and "daily" in declared
    assert "svc-mystery" in browser.find_element(By.ID, "unattributed").text
    assert "steward" in browser.find_element(By.ID, "readers").text
    chart = browser.find_element(By.CSS_SELECTOR, "#usage svg")
    assert chart.get_attribute("role") == "img"
    total = sum(DAILY_REPORTS) + 2
    assert f"{total} reports" in browser.find_element(By.CSS_SELECTOR, "#usage figcaption").text
    labels = [t.text for t in chart.find_elements(By.CSS_SELECTOR, "text.val")]
    assert labels[-10:] == [str(n) for n in DAILY_REPORTS[:-1]] + [str(DAILY_REPORTS[-1] + 2)], labels
    shot(browser, "consumers")


def test_profiles_page(server, browser):
    browser.get(server + f"/ui/subjects/{SUBJECT}/profiles")
    bars = browser.find_element(By.CSS_SELECTOR, "#prevalence svg").get_attribute("innerHTML")
    assert "/note1" in bars and "40%" in bars
    trend = browser.find_element(By.ID, "trend").text
    assert "80%" in trend and "40%" in trend
    sparks = [e.get_attribute("aria-label") for e in browser.find_elements(By.CSS_SELECTOR, "#trend svg.spark")]
    assert "/note1: 80% → 40%" in sparks and "/note2: 20% → 60%" in sparks, sparks
    shot(browser, "profiles")


def test_deprecation_blockers_and_advancing_a_stage(server, browser):
    browser.get(server + "/ui/subjects")
    click_through(browser, browser.find_element(By.LINK_TEXT, "Deprecations"))
    record = browser.find_element(By.CSS_SELECTOR, "article.record")
    assert "note1" in record.text and "Stage: announced" in record.text
    blockers = record.find_element(By.CSS_SELECTOR, "ul.blockers").text
    assert "consumer_declared" in blockers and "billing" in blockers
    shot(browser, "deprecations")
    click_through(browser, record.find_element(By.CSS_SELECTOR, "button[id^=advance-]"), confirm="frozen")
    record = browser.find_element(By.CSS_SELECTOR, "article.record")
    assert "Stage: frozen" in record.text
    record.find_element(By.CSS_SELECTOR, "details:nth-of-type(1) summary").click()
    form = record.find_element(By.CSS_SELECTOR, "form[action$='/evidence']")
    form.find_element(By.NAME, "claim").send_keys("analytics reads note2 only")
    form.find_element(By.NAME, "consumer").send_keys("analytics")
    form.find_element(By.NAME, "statement").send_keys("moved in November")
    click_through(browser, form.find_element(By.CSS_SELECTOR, "button"), confirm="sign-off")
    record = browser.find_element(By.CSS_SELECTOR, "article.record")
    assert "sign-off of analytics by steward: moved in November" in record.find_element(By.CSS_SELECTOR, "ul.evidence").text
    record.find_element(By.CSS_SELECTOR, "details:nth-of-type(2) summary").click()
    form = record.find_element(By.CSS_SELECTOR, "form[action$='/exceptions']")
    form.find_element(By.NAME, "party").send_keys("billing")
    form.find_element(By.NAME, "reason").send_keys("billing moves in Q1")
    Select(form.find_element(By.NAME, "overrides")).select_by_value("consumer_declared")
    click_through(browser, form.find_element(By.CSS_SELECTOR, "button"), confirm="Override")
    assert "billing moves in Q1" in browser.find_element(By.CSS_SELECTOR, "ul.exceptions").text


def test_audit_page_records_console_actions(server, browser):
    browser.get(server + "/ui/audit?principal=steward")
    trail = browser.find_element(By.ID, "audit").text
    for operation in ["deprecation.stage", "deprecation.evidence", "deprecation.exception", "register"]:
        assert operation in trail, operation
    shot(browser, "audit")


def test_pages_break_no_content_security_policy(server, browser):
    """Every page visited so far kept to the policy: no inline script or style was needed."""
    for page in ["/ui/subjects", f"/ui/subjects/{SUBJECT}", f"/ui/subjects/{SUBJECT}/diff?a=5&b=6",
                 f"/ui/subjects/{SUBJECT}/consumers", f"/ui/subjects/{SUBJECT}/profiles", "/ui/deprecations", "/ui/audit"]:
        browser.get(server + page)
    violations = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert not violations, violations
    # The control: a script added to the page is refused by the policy, and the refusal is seen.
    browser.execute_script(
        "var s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
        " document.body.appendChild(s);")
    assert browser.execute_script("return window.__inline === undefined")
    refused = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e["message"]]
    assert refused, "an inline script is refused and logged"


def test_phone_width_keeps_the_page_within_the_screen(server, browser):
    browser.set_window_size(390, 844)
    browser.get(server + "/ui/subjects")
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    browser.get(server + f"/ui/subjects/{SUBJECT}")
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    browser.save_screenshot(str(SHOTS / "subject-phone.png"))
    browser.set_window_size(1280, 1000)


def test_reader_sees_neither_hidden_subjects_nor_actions(server, browser):
    sign_in(browser, server, "reader")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#subjects tbody td a")]
    assert SUBJECT in names and "payments-value" not in names
    assert not browser.find_elements(By.LINK_TEXT, "Deprecations")
    browser.get(server + "/ui/subjects/payments-value")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    browser.get(server + "/ui/deprecations")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert not browser.find_elements(By.CSS_SELECTOR, "button[id^=advance-]")
    browser.get(server + f"/ui/subjects/{SUBJECT}/consumers")
    assert not browser.find_elements(By.ID, "declared"), "declared consumers need Govern"
    status, _ = call(server, "GET", "/covenant/v1/deprecations", user="reader")
    assert status == 403, "the API agrees"
