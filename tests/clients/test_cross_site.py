"""Forged cross-site writes, tried from a real page: a `covenant serve` with its default
settings (loopback, no authentication), and a page on another origin, opened in Debian's
Chromium, that sends the writes a browser lets any page send without asking the server first
(`fetch` with `mode: "no-cors"`, a body without a content type or with `text/plain`): a
registration, a consumer, an exporter pointed at a listener of the page's choosing. None may
land. A client that is not a browser, sending the same body without a content type, still
registers, as Confluent reads such a body as JSON."""

import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

os.environ.setdefault("SE_OFFLINE", "true")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

FORGED_SCHEMA = json.dumps({"type": "record", "name": "Forged", "fields": [{"name": "x", "type": "string"}]})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(base, path):
    with urllib.request.urlopen(base + path) as r:
        return json.loads(r.read())


ATTACK = """<!doctype html><html><head><title>waiting</title></head><body><script>
const registry = REGISTRY;
const listener = LISTENER;
const schema = JSON.stringify({schema: SCHEMA});
const blob = (value) => new Blob([typeof value === "string" ? value : JSON.stringify(value)]);
const send = (path, body, headers) =>
  fetch(registry + path, {method: "POST", mode: "no-cors", body, headers: headers || {}});
Promise.allSettled([
  send("/subjects/forged-value/versions", blob(schema)),
  send("/subjects/forged-text/versions", schema, {"Content-Type": "text/plain"}),
  send("/covenant/v1/consumers", blob({name: "forged-consumer", owner: "page", purpose: "p",
                                       contact: "c", subjects: [{subject: "forged-value"}]})),
  send("/exporters", blob({name: "forged-exporter", subjects: ["*"],
                           config: {"schema.registry.url": listener}})),
  fetch(registry + "/subjects/forged-delete", {method: "DELETE", mode: "no-cors"}),
]).then((results) => { document.title = "sent " + results.map((r) => r.status).join(","); });
</script></body></html>"""


@pytest.fixture(scope="module")
def registry():
    bin_path = os.environ.get("COVENANT_BIN")
    if not bin_path:
        pytest.skip("COVENANT_BIN is not set; run scripts/client-tests.sh")
    tmp = Path(tempfile.mkdtemp(prefix="covenant-cross-site-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen([bin_path, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp / "data")],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            urllib.request.urlopen(base + "/health/live")
            break
        except OSError:
            time.sleep(0.05)
    # A subject the page tries to delete.
    request = urllib.request.Request(base + "/subjects/forged-delete/versions", method="POST",
                                     data=json.dumps({"schema": FORGED_SCHEMA}).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request).read()
    yield base
    proc.terminate()
    proc.wait(timeout=10)
    log.close()
    shutil.rmtree(tmp, ignore_errors=True)


class Listener(http.server.BaseHTTPRequestHandler):
    """The page's own server: the attack page, and whatever an exporter would push."""

    page = b""
    pushed = []

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(Listener.page)

    def do_POST(self):  # noqa: N802
        Listener.pushed.append(self.path)
        self.send_response(200)
        self.end_headers()

    do_PUT = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def page_origin(registry):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    port = server.server_address[1]
    # `localhost` against the registry's `127.0.0.1`: another site, as a browser sees it.
    origin = f"http://localhost:{port}"
    Listener.page = (ATTACK.replace("REGISTRY", json.dumps(registry))
                     .replace("LISTENER", json.dumps(origin))
                     .replace("SCHEMA", json.dumps(FORGED_SCHEMA))).encode()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield origin
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromedriver are required (scripts/client-tests.sh installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="covenant-chromium-")
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def test_a_page_on_another_origin_changes_nothing(registry, page_origin, browser):
    browser.get(page_origin + "/attack.html")
    WebDriverWait(browser, 20).until(lambda d: d.title.startswith("sent"))
    # The page's POSTs left the browser (no-cors fetches resolve with opaque answers); a
    # cross-site DELETE the browser refuses to send at all (no-cors allows GET, HEAD, POST).
    assert browser.title == "sent " + ",".join(["fulfilled"] * 4 + ["rejected"]), browser.title
    time.sleep(0.5)
    subjects = get(registry, "/subjects")
    assert "forged-value" not in subjects and "forged-text" not in subjects, subjects
    assert "forged-delete" in subjects, "nothing deleted it"
    assert "forged-exporter" not in get(registry, "/exporters")
    consumers = json.dumps(get(registry, "/covenant/v1/consumers"))
    assert "forged-consumer" not in consumers, consumers
    assert Listener.pushed == [], Listener.pushed
    # Each attempt is on record as refused (identical refusals as one entry with a count).
    trail = get(registry, "/covenant/v1/audit?outcome=denied&limit=1000")["entries"]
    refused = sum(e.get("count", 1) for e in trail if e.get("detail", "").startswith("CrossSite"))
    assert refused == 4, trail


def test_a_client_that_is_not_a_browser_still_writes_without_a_content_type(registry):
    # http.client sends exactly the headers given (urllib would add a form content type).
    host, port = registry.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("POST", "/subjects/plain-client/versions",
                       body=json.dumps({"schema": FORGED_SCHEMA}).encode())
    answer = connection.getresponse()
    assert answer.status == 200, answer.read()
    assert "id" in json.loads(answer.read())
    connection.close()
    request = urllib.request.Request(registry + "/subjects/plain-octets/versions", method="POST",
                                     data=json.dumps({"schema": FORGED_SCHEMA}).encode(),
                                     headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(request) as r:
        assert r.status == 200
    # The same site's own page (the console's forms) is not refused: same origin.
    request = urllib.request.Request(registry + "/subjects/same-origin/versions", method="POST",
                                     data=json.dumps({"schema": FORGED_SCHEMA}).encode(),
                                     headers={"Content-Type": "application/json", "Origin": registry,
                                              "Sec-Fetch-Site": "same-origin"})
    with urllib.request.urlopen(request) as r:
        assert r.status == 200
    request = urllib.request.Request(registry + "/subjects/other-origin/versions", method="POST",
                                     data=json.dumps({"schema": FORGED_SCHEMA}).encode(),
                                     headers={"Content-Type": "application/json", "Origin": "http://evil.example"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 403
