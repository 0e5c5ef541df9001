"""Pages looked at in a real browser: Debian's Chromium, driven by Python Playwright.

    page = open_page(url)                      # a fresh page, loaded ("load"), HTTP 200 asked
    visible_text(page, "h1")                   # the text a person sees (innerText)
    follow(page, "Fleet")                      # a link by its text (or selector=...): the new URL
    tab_order(page, 5)                         # Tab pressed 5 times: what got the focus, and
                                               # whether it showed it (Focus)
    accessibility_violations(page)             # axe-core's WCAG 2 A/AA rules: one line each
    page_problems(page)                        # script and console errors, failed requests

The browser is Debian's (`apt-get install chromium`), started by Playwright from its
`executable_path`: never `playwright install`, which downloads a browser of its own. It runs
headless, without a sandbox (CI runs as root), without first-run, background networking,
component updates or sync, with its profile and temporary files in a folder of its own. Nothing
it asks for leaves this machine: every request goes through a proxy at a 127.0.0.1 port that
nobody listens on (127.0.0.1 and localhost excepted), and names other than localhost resolve to
nothing. One browser per pytest worker, started on first use (about 1 s) and stopped at the
session's end (`stop`, from tests/conftest.py); if closing it fails, its process group is
killed by its pid.

Each test gets a fresh context (cookies, storage, cache), closed after it by tests/conftest.py,
which also fails the test when one of its pages had a problem the test did not take with
`page_problems`: an uncaught script error, a console error (a Content-Security-Policy refusal is
one), a request that failed or was answered 400 or more (but the document `open_page` was told
to expect). A test that drives the browser carries the `browser` marker (open_page fails
without it): `pytest -m browser` runs them, as `.ci/run` does in its stage 3.

axe-core (pinned in tests/mermaid/package-lock.json, `npm ci --prefix tests/mermaid`) is read
from that folder and evaluated in the page, past its CSP. Without Chromium, axe-core or
Playwright the tests fail, saying what to install; none is skipped.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.cli import REPO

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

AXE = REPO / "tests" / "mermaid" / "node_modules" / "axe-core" / "axe.min.js"
#: axe-core's tags for the WCAG 2.0, 2.1 and 2.2 success criteria of levels A and AA.
WCAG_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: How long a step (a click, an element awaited, a page loaded) may take before it fails.
TIMEOUT_MS = 20_000
#: How long closing the browser may take before its process group is killed.
CLOSE_WAIT_S = 20.0
#: Debian's /usr/bin/chromium is a shell launcher that adds flags of its own (remote extensions
#: on, which also drops its --disable-background-networking) and Google's API keys to the
#: environment, then runs this binary: the binary is started, with only the flags below.
DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")


@dataclass(frozen=True)
class Focus:
    """One element the focus reached: its tag (lower case), its text as shown (or its
    aria-label, value or title), its href (links), and whether focusing it changed how it
    looks (outline, box-shadow, border, background or text colour, underline)."""

    tag: str
    text: str
    href: str | None
    visible_indicator: bool


def chromium_executable() -> str:
    """Chromium's binary, or the test fails saying what to install."""
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("Chromium is needed for the browser tests: apt-get install chromium")
    with open(found, "rb") as head:
        launcher = head.read(2) == b"#!"
    return str(DEBIAN_BINARY) if launcher and DEBIAN_BINARY.is_file() else found


@contextlib.contextmanager
def _tmpdir(folder: str) -> Iterator[None]:
    """TMPDIR is `folder` for the processes started meanwhile (Playwright's driver, and so the
    browser's profile and temporary files)."""
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = before


class _Browser:
    """Playwright's driver and one Chromium, owned by one pytest worker."""

    def __init__(self) -> None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            pytest.fail("Playwright is needed for the browser tests: pip install -e '.[test]'")
        executable = chromium_executable()
        self.owner = os.getpid()
        self.folder = tempfile.mkdtemp(prefix="fsr-browser-")
        # Bound, never listening: a connection to it is refused at once.
        self.dead_end = socket.socket()
        self.dead_end.bind(("127.0.0.1", 0))
        self.playwright: Playwright | None = None
        self.browser: Browser | None = None
        self.pid: int | None = None
        try:
            with _tmpdir(self.folder):
                self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(
                executable_path=executable,
                headless=True,
                chromium_sandbox=False,  # --no-sandbox: CI runs as root
                timeout=60_000,
                args=[
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-domain-reliability",
                    "--no-pings",
                    f"--proxy-server=http://127.0.0.1:{self.dead_end.getsockname()[1]}",
                    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
                ],
            )
            session = self.browser.new_browser_cdp_session()
            processes = session.send("SystemInfo.getProcessInfo")["processInfo"]
            session.detach()
            self.pid = next(p["id"] for p in processes if p["type"] == "browser")
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)

    def alive(self) -> bool:
        return (
            self.owner == os.getpid() and self.browser is not None and self.browser.is_connected()
        )

    def stop(self) -> None:
        """Close the browser (killed by pid if that fails or hangs), then the driver."""
        atexit.unregister(self.stop)
        if self.owner != os.getpid():
            return  # a forked child's copy: the parent's to stop
        watchdog = threading.Timer(CLOSE_WAIT_S, self._kill)
        watchdog.start()
        try:
            if self.browser is not None:
                self.browser.close()
        except Exception:  # noqa: BLE001 - killed below whatever went wrong
            pass
        finally:
            watchdog.cancel()
        self._kill()
        if self.playwright is not None:
            with contextlib.suppress(Exception):
                self.playwright.stop()
        self.dead_end.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _kill(self) -> None:
        """The browser's process group, if it is still this browser's (its command line names
        our folder: a pid taken again by another process is left alone)."""
        if self.pid is None:
            return
        try:
            with open(f"/proc/{self.pid}/cmdline", "rb") as cmdline:
                ours = self.folder.encode() in cmdline.read()
            if ours and os.getpgid(self.pid) == self.pid:
                os.killpg(self.pid, signal.SIGKILL)  # its renderers and helpers too
            elif ours:
                os.kill(self.pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass  # ended


_browser: _Browser | None = None


def browser() -> Browser:
    """This worker's browser, started on first use."""
    global _browser
    if _browser is None or not _browser.alive():
        if _browser is not None and _browser.owner == os.getpid():
            _browser.stop()
        _browser = _Browser()
    assert _browser.browser is not None
    return _browser.browser


def stop() -> None:
    """Stop this worker's browser, if it started one (the session's end)."""
    global _browser
    if _browser is not None and _browser.owner == os.getpid():
        _browser.stop()
    _browser = None


# -- one test ----------------------------------------------------------------------------------


class _Test:
    def __init__(self, marked: bool) -> None:
        self.marked = marked
        self.context: BrowserContext | None = None
        #: Each page's problems not yet taken, with what each came from (a Response or None).
        self.problems: dict[Page, list[tuple[object, str]]] = {}

    def note(self, page: Page | None, text: str, source: object = None) -> None:
        if page is not None:
            self.problems.setdefault(page, []).append((source, text))


_test = _Test(marked=False)


def begin_test(marked: bool) -> None:
    """A test begins (tests/conftest.py): `marked` if it carries the `browser` marker."""
    global _test
    _test = _Test(marked)


def end_test() -> list[str]:
    """The test ended (tests/conftest.py): its context closed; the problems of its pages that
    it did not take, one line each (the test fails on them)."""
    global _test
    test, _test = _test, _Test(marked=False)
    left = [f"{page.url}: {text}" for page, found in test.problems.items() for _, text in found]
    if test.context is not None:
        try:
            test.context.close()
        except Exception:  # noqa: BLE001 - the browser went away: the next test starts another
            stop()
    return left


def _page_of(request: Any) -> Page | None:
    try:
        return request.frame.page
    except Exception:  # noqa: BLE001 - a service worker's request has no frame
        return None


def _on_response(test: _Test, response: Any) -> None:
    if response.status >= 400:
        line = f"{response.request.method} {response.url}: HTTP {response.status}"
        test.note(_page_of(response.request), line, response)


def _on_request_failed(test: _Test, request: Any) -> None:
    # A request the page itself dropped (a 404 stylesheet, the old page's when navigating) is
    # ERR_ABORTED: its status, if any, is reported by the response.
    if request.failure != "net::ERR_ABORTED":
        test.note(_page_of(request), f"{request.method} {request.url} failed: {request.failure}")


def _on_console(test: _Test, message: Any) -> None:
    # "Failed to load resource" repeats a failed request, reported with its URL above.
    if message.type == "error" and not message.text.startswith("Failed to load resource"):
        where = message.location.get("url", "")
        line = message.location.get("lineNumber")
        text = f"console error: {message.text}" + (f" ({where}:{line})" if where else "")
        test.note(message.page, text)


def _on_web_error(test: _Test, error: Any) -> None:
    test.note(error.page, f"uncaught {error.error.name}: {error.error.message}")


def _context() -> BrowserContext:
    """This test's context, made on its first page."""
    if not _test.marked:
        pytest.fail(
            "a test that drives Chromium carries the `browser` marker (@pytest.mark.browser): "
            ".ci/run runs them in stage 3, where Chromium is installed"
        )
    if _test.context is None:
        context = browser().new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(TIMEOUT_MS)
        context.on("response", partial(_on_response, _test))
        context.on("requestfailed", partial(_on_request_failed, _test))
        context.on("console", partial(_on_console, _test))
        context.on("weberror", partial(_on_web_error, _test))
        _test.context = context
    return _test.context


# -- what tests use ----------------------------------------------------------------------------


def open_page(url: str, *, status: int = 200) -> Page:
    """A new page of this test's context at `url`, once loaded (its "load" event): fails unless
    the document is answered `status` (a page that must say 404 asks for it)."""
    page = _context().new_page()
    response = page.goto(url, wait_until="load")
    assert response is not None, f"{url} loaded no document"
    assert response.status == status, f"{url} answered HTTP {response.status}, not {status}"
    # The document's own status, asked for, is not a problem.
    found = _test.problems.get(page, [])
    found[:] = [(source, text) for source, text in found if source is not response]
    return page


def visible_text(page: Page, selector: str) -> str:
    """The text of the one element `selector` matches, as shown (innerText: a line per block,
    a tab between table cells), awaited; fails if several match or it is hidden."""
    element = page.locator(selector)
    text = element.inner_text()
    assert element.is_visible(), f"{selector} is on the page but not visible"
    return text.strip()


def follow(page: Page, text: str | None = None, *, selector: str | None = None) -> str:
    """Click the link whose shown text is `text` (or the element `selector` matches), wait for
    the new page to load, and return its URL; fails if it is answered 400 or more."""
    if (text is None) == (selector is None):
        raise TypeError("follow: a link's text or a selector, one of them")
    if text is not None:
        exactly = re.compile(rf"^\s*{re.escape(text)}\s*$")
        target = page.locator("a[href]").filter(has_text=exactly)
    else:
        target = page.locator(str(selector))
    with page.expect_navigation(wait_until="load") as navigation:
        target.click()
    response = navigation.value
    if response is not None:
        assert response.status < 400, f"{response.url} answered HTTP {response.status}"
    return page.url


#: An element's looks that a focus indicator changes.
_LOOKS = """(element) => {
  const style = getComputedStyle(element);
  const props = ["outline-style", "outline-width", "outline-color", "outline-offset",
    "box-shadow", "border-top-color", "border-right-color", "border-bottom-color",
    "border-left-color", "border-top-width", "background-color", "color",
    "text-decoration-line"];
  return Object.fromEntries(props.map((p) => [p, style.getPropertyValue(p)]));
}"""
_DESCRIBE = """(element) => ({
  tag: element.tagName.toLowerCase(),
  text: element === document.body ? "" : (element.innerText || element.getAttribute("aria-label")
        || element.value || element.getAttribute("title") || "").replace(/\\s+/g, " ").trim(),
  href: element.getAttribute("href"),
})"""


def _shows_focus(focused: dict[str, str], unfocused: dict[str, str]) -> bool:
    outline = focused["outline-style"] != "none" and focused["outline-width"] != "0px"
    if outline and any(focused[p] != unfocused[p] for p in focused if p.startswith("outline")):
        return True
    return any(focused[p] != unfocused[p] for p in focused if not p.startswith("outline"))


def tab_order(page: Page, n: int) -> list[Focus]:
    """Tab pressed `n` times from where the focus is (a page just opened: its start): each
    element that got the focus, in order. Past the last one the focus leaves the page (`body`),
    then starts again. Each element's looks are read focused, and again after the next Tab
    took the focus away; then Shift+Tab puts the focus back on the n-th (when that is not
    the page's end)."""
    handles: list[Any] = []
    focused: list[dict[str, str]] = []
    unfocused: list[dict[str, str]] = []
    for step in range(n + 1):
        page.keyboard.press("Tab")
        if handles:
            unfocused.append(handles[-1].evaluate(_LOOKS))
        if step < n:
            handles.append(page.evaluate_handle("document.activeElement"))
            focused.append(handles[-1].evaluate(_LOOKS))
    page.keyboard.press("Shift+Tab")
    order = []
    for handle, looks, looks_after in zip(handles, focused, unfocused, strict=True):
        order.append(
            Focus(**handle.evaluate(_DESCRIBE), visible_indicator=_shows_focus(looks, looks_after))
        )
        handle.dispose()
    return order


def accessibility_violations(page: Page) -> list[str]:
    """axe-core's WCAG 2.0/2.1/2.2 A and AA rules on the page as it is now (contrast, labels,
    names, landmarks, language, ...): one line per element that breaks one, "rule (impact)
    target: help. what is wrong"; none on an accessible page."""
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed: run `npm ci --prefix {AXE.parents[2]}`")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))  # as the devtools would: past the CSP
    violations = page.evaluate(
        """async (tags) => {
          const result = await axe.run(document, {
            runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
          return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map((n) => ({target: n.target.flat(Infinity).join(" "),
                                        summary: n.failureSummary || ""}))}));
        }""",
        WCAG_A_AA,
    )
    lines = []
    for rule in violations:
        for node in rule["nodes"]:
            wrong = "; ".join(
                line.strip()
                for line in node["summary"].splitlines()[1:]
                if line.strip() and not line.startswith("Fix ")
            )
            lines.append(
                f"{rule['id']} ({rule['impact']}) {node['target']}: {rule['help']}. {wrong}"
            )
    return lines


def page_problems(page: Page) -> list[str]:
    """The page's problems since it opened or since the last call, one line each, taken: a
    test that looked at them (a page made to fail) is not failed for them."""
    found = _test.problems.pop(page, [])
    return [text for _, text in found]
