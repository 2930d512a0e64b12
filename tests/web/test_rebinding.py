"""DNS rebinding in a real browser (Debian's headless Chromium, driven by Playwright).

The attacker's page is served at http://attacker.example:PORT/ (the port of `ascension web`);
then the name is made to resolve to 127.0.0.1 (Chromium's --host-resolver-rules), so the
page's same-origin calls reach the gateway: the browser itself would let the script read the
answers. The gateway refuses them (Host: attacker.example), and the script reads only that.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS, WebServer, have_chromium, missing

sync_api = pytest.importorskip("playwright.sync_api")

ATTACKER = """<!doctype html><title>pending</title><script>
async function probe(path, body) {
  try {
    const r = await fetch(path, body === undefined ? {} :
      {method: "POST", headers: {"content-type": "application/json"}, body});
    return {status: r.status, text: (await r.text()).slice(0, 300)};
  } catch (e) { return {error: String(e)}; }
}
(async () => {
  const out = {
    page: await probe("/config.json"),
    list: await probe("/ascension.v1.Engine/ListGames", "{}"),
    create: await probe("/ascension.v1.Engine/CreateGame",
                        JSON.stringify({seats: [{name: "Mallory"}, {name: "Eve"}]})),
  };
  document.body.textContent = JSON.stringify(out);
  document.title = "done";
})();
</script><body></body>"""


@pytest.fixture(scope="module")
def rebinding_browser(web: WebServer) -> Iterator[Any]:
    if not have_chromium():
        missing(f"Chromium ({CHROMIUM})")
    rules = "--host-resolver-rules=MAP attacker.example 127.0.0.1"
    # Recent Chromium blocks a public page's calls to loopback by itself (Local Network
    # Access); other browsers do not: turned off, it is the gateway's check that is tested.
    lna = (
        "--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessSendPreflights,"
        "PrivateNetworkAccessRespectPreflightResults,BlockInsecurePrivateNetworkRequests"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules, lna])
        try:
            yield b
        finally:
            b.close()


def test_a_rebound_name_cannot_read_or_drive_the_gateway(
    rebinding_browser: Any, web: WebServer
) -> None:
    port = urllib.parse.urlsplit(web.url).port
    origin = f"http://attacker.example:{port}"
    page = rebinding_browser.new_context().new_page()
    try:
        # The attacker's own server answers the first load (before the rebinding) ...
        page.route(
            origin + "/",
            lambda route: route.fulfill(status=200, content_type="text/html", body=ATTACKER),
        )
        page.goto(origin + "/")
        page.wait_for_function("document.title === 'done'", timeout=30_000)
        seen = json.loads(page.inner_text("body"))
        # ... then every call of its script reaches the gateway, which refuses it.
        for call in ("page", "list", "create"):
            assert seen[call].get("status") == 421, seen
            assert "--allow-host" in seen[call]["text"], seen
        # And navigating to the rebound name shows the refusal, not the lobby.
        page.unroute(origin + "/")
        response = page.goto(origin + "/")
        assert response is not None and response.status == 421
        assert "Misdirected Request" in page.inner_text("body")
    finally:
        page.context.close()


def test_the_same_script_on_the_pages_own_origin_is_answered(
    rebinding_browser: Any, web: WebServer
) -> None:
    """The control: the same calls from the gateway's own origin succeed (the refusals above
    are the gateway's, not the browser's)."""
    page = rebinding_browser.new_context().new_page()
    try:
        page.route(
            web.url + "attacker.html",
            lambda route: route.fulfill(status=200, content_type="text/html", body=ATTACKER),
        )
        page.goto(web.url + "attacker.html")
        page.wait_for_function("document.title === 'done'", timeout=30_000)
        seen = json.loads(page.inner_text("body"))
        assert [seen[c].get("status") for c in ("page", "list", "create")] == [200] * 3, seen
    finally:
        page.context.close()
