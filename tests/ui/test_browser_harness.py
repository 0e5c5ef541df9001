"""The browser harness (tests/support/browser.py) on small static pages served from a temp folder
on 127.0.0.1, with a strict Content-Security-Policy as the UI's pages have: what axe-core finds
and does not, links followed, the keyboard's focus order, script errors, CSP refusals and missing
files reported, nothing reaching off this machine, the browser ended by its pid."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support import browser
from tests.support.browser import (
    Focus,
    accessibility_violations,
    follow,
    open_page,
    page_problems,
    tab_order,
    visible_text,
)

CSS = """
body { font-family: sans-serif; color: #222; background: #fff; }
.faint { color: #c8c8c8; }
.no-ring:focus { outline: none; }
button.ring:focus-visible { outline: none; box-shadow: 0 0 0 3px #1a4d8f; }
.hidden { display: none; }
nav a { display: inline-block; padding: 6px 8px; }
"""


def _page(title: str, body: str, head: str = "") -> str:
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'<link rel="stylesheet" href="/site.css">{head}</head>\n'
        f"<body><main>\n{body}\n</main></body></html>\n"
    )


PAGES = {
    "site.css": CSS,
    "clean.html": _page(
        "Clean",
        '<h1>The fleet</h1>\n<nav><a href="flawed.html">Flawed page</a> '
        '<a href="keys.html">Keys</a> <a href="nowhere.html">Broken link</a></nav>\n'
        '<label for="q">Job name</label> <input id="q" type="text">\n'
        '<p id="note">Two jobs\nrunning</p><p class="hidden" id="secret">not shown</p>',
    ),
    "flawed.html": _page(
        "Flawed",
        '<h1>Flawed</h1>\n<input id="nameless" type="text">\n<p class="faint">Barely seen</p>',
    ),
    "keys.html": _page(
        "Keys",
        '<h1>Keys</h1>\n<a href="clean.html">Ringed link</a>\n'
        '<button class="ring" type="button">Shadowed button</button>\n'
        '<a class="no-ring" href="clean.html">Ringless link</a>\n'
        '<label for="k">Key</label> <input id="k" value="v1">',
    ),
    "boom.js": 'document.title = "Boom";\nthrow new Error("boom from boom.js");\n',
    "boom.html": _page(
        "Boom", "<h1>Boom</h1>", '<script src="boom.js"></script><script>let inline = 1;</script>'
    ),
    "gone.html": _page("Gone", "<h1>Gone</h1>", '<link rel="stylesheet" href="gone.css">'),
    "no-csp/outside.html": _page(
        "Outside",
        "<h1>Outside</h1>",
        '<link rel="stylesheet" href="http://example.com/x.css">'
        '<link rel="stylesheet" href="https://192.0.2.7/y.css">',
    ),
}


class _Handler(SimpleHTTPRequestHandler):
    """The folder's files, with the UI's strict CSP (but under no-csp/, where a page may ask
    for other sites' files, to show that the browser cannot reach them)."""

    def end_headers(self) -> None:
        if not self.path.startswith("/no-csp/"):
            self.send_header("Content-Security-Policy", "default-src 'self'")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The pages above at http://127.0.0.1:<port>/, stopped after the module's tests."""
    folder = tmp_path_factory.mktemp("site")
    (folder / "no-csp").mkdir()
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.browser
def test_axe_finds_the_unlabeled_input_and_the_faint_text(site: str):
    found = accessibility_violations(open_page(site + "flawed.html"))
    assert len(found) == 2, found
    contrast, label = sorted(found)
    assert label.startswith("label (critical) #nameless: Form elements must have labels.")
    assert contrast.startswith("color-contrast (serious) p: Elements must meet minimum color")
    assert "insufficient color contrast of 1.67 (foreground color: #c8c8c8" in contrast
    assert "Expected contrast ratio of 4.5:1" in contrast


@pytest.mark.browser
def test_a_clean_page_has_no_violation_and_its_text_reads_as_shown(site: str):
    page = open_page(site + "clean.html")
    assert accessibility_violations(page) == []
    assert visible_text(page, "h1") == "The fleet"
    assert visible_text(page, "#note") == "Two jobs running"  # white space as the page shows it
    with pytest.raises(AssertionError, match="#secret is on the page but not visible"):
        visible_text(page, "#secret")
    assert page_problems(page) == []


@pytest.mark.browser
def test_links_are_followed_by_their_text_or_a_selector(site: str):
    page = open_page(site + "clean.html")
    assert follow(page, "Flawed page") == site + "flawed.html"
    assert visible_text(page, "h1") == "Flawed"
    page = open_page(site + "clean.html")
    assert follow(page, selector="nav a[href='keys.html']") == site + "keys.html"
    assert follow(page, "Ringed link") == site + "clean.html"
    with pytest.raises(AssertionError, match=r"nowhere.html answered HTTP 404"):
        follow(page, "Broken link")
    assert page_problems(page) == [f"GET {site}nowhere.html: HTTP 404"]


@pytest.mark.browser
def test_a_page_that_must_answer_404_says_so(site: str):
    page = open_page(site + "nowhere.html", status=404)
    assert page_problems(page) == []  # asked for: not a problem
    with pytest.raises(AssertionError, match="answered HTTP 404, not 200"):
        open_page(site + "nowhere.html")
    browser.end_test()  # that second page's 404 is a problem: taken here
    browser.begin_test(marked=True)


@pytest.mark.browser
def test_the_tab_order_and_which_elements_show_their_focus(site: str):
    page = open_page(site + "keys.html")
    assert tab_order(page, 5) == [
        Focus("a", "Ringed link", "clean.html", True),  # the browser's own focus ring
        Focus("button", "Shadowed button", None, True),  # outline none, a box-shadow instead
        Focus("a", "Ringless link", "clean.html", False),  # outline none, nothing instead
        Focus("input", "v1", None, True),
        Focus("body", "", None, False),  # past the last: the focus leaves the page
    ]
    page = open_page(site + "keys.html")
    assert [f.text for f in tab_order(page, 2)] == ["Ringed link", "Shadowed button"]
    assert page.evaluate("document.activeElement.textContent") == "Shadowed button"


@pytest.mark.browser
def test_a_script_error_and_a_refused_inline_script_are_reported(site: str):
    page = open_page(site + "boom.html")
    problems = page_problems(page)
    assert len(problems) == 2, problems
    refused, thrown = sorted(problems)
    assert refused.startswith("console error: Executing inline script violates")
    assert "Content Security Policy directive" in refused
    assert thrown == "uncaught Error: boom from boom.js"
    assert page_problems(page) == []  # taken


@pytest.mark.browser
def test_a_missing_stylesheet_is_reported(site: str):
    page = open_page(site + "gone.html")
    assert page_problems(page) == [f"GET {site}gone.css: HTTP 404"]


@pytest.mark.browser
def test_nothing_reaches_off_this_machine(site: str):
    page = open_page(site + "no-csp/outside.html")
    assert sorted(page_problems(page)) == [
        "GET http://example.com/x.css failed: net::ERR_PROXY_CONNECTION_FAILED",
        "GET https://192.0.2.7/y.css failed: net::ERR_PROXY_CONNECTION_FAILED",
    ]
    assert browser._browser is not None and browser._browser.pid is not None
    with open(f"/proc/{browser._browser.pid}/cmdline", "rb") as cmdline:
        flags = cmdline.read().decode().split("\0")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        assert flag in flags
    profile = next(f for f in flags if f.startswith("--user-data-dir="))
    assert profile.startswith(f"--user-data-dir={browser._browser.folder}/")


@pytest.mark.browser
def test_problems_left_unread_fail_the_test_and_each_test_has_a_fresh_context(site: str):
    page = open_page(site + "gone.html")
    page.evaluate("localStorage.setItem('seen', 'yes')")
    assert browser.end_test() == [f"{site}gone.html: GET {site}gone.css: HTTP 404"]
    assert page.is_closed()  # its context closed with the test
    browser.begin_test(marked=True)
    page = open_page(site + "clean.html")
    assert page.evaluate("localStorage.getItem('seen')") is None


@pytest.mark.browser
def test_an_unmarked_test_may_not_drive_the_browser(site: str):
    browser.begin_test(marked=False)
    with pytest.raises(pytest.fail.Exception, match="carries the `browser` marker"):
        open_page(site + "clean.html")
    browser.begin_test(marked=True)


@pytest.mark.browser
def test_a_browser_that_will_not_close_is_killed_by_its_pid(
    site: str, monkeypatch: pytest.MonkeyPatch
):
    open_page(site + "clean.html")
    running = browser._browser
    assert running is not None and running.pid is not None
    pid, folder = running.pid, running.folder
    assert _running(pid)

    def hang() -> None:  # as a close that never ends would, until the process is gone
        deadline = time.monotonic() + 60
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)

    monkeypatch.setattr(running.browser, "close", hang)
    monkeypatch.setattr(browser, "CLOSE_WAIT_S", 1.0)
    began = time.monotonic()
    browser.end_test()
    browser.stop()
    assert time.monotonic() - began < 30
    assert not _running(pid)
    assert not os.path.exists(folder)
    browser.begin_test(marked=True)  # the next page starts another browser
    assert visible_text(open_page(site + "clean.html"), "h1") == "The fleet"
    assert browser._browser is not None and browser._browser.pid != pid


def _running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_without_chromium_the_tests_fail_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        browser.chromium_executable()


def test_without_axe_core_the_tests_fail_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    monkeypatch.setattr(browser, "AXE", tmp_path / "node_modules" / "axe-core" / "axe.min.js")
    with pytest.raises(pytest.fail.Exception, match=f"npm ci --prefix {tmp_path}`"):
        accessibility_violations(page=None)  # type: ignore[arg-type]


def test_without_playwright_the_tests_fail_saying_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # as if not installed
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'"):
        browser._Browser()
