"""Generated pages opened in a real browser: Debian's chromium (apt, tools/bootstrap.sh) driven by Playwright.

:func:`open_page` loads a page from disk in a 1280 x 800 window and returns what a reader meets: console errors,
requests that failed, images that did not load, links to files that do not exist, and whether the verdict line is
visible without scrolling; it keeps a screenshot of the first screen and one of the whole page in
``test-artifacts/screenshots/`` (README: Tests), where CI keeps them.
"""
import dataclasses
import pathlib
import shutil
import urllib.parse

import pytest

from repo_paths import REPO

SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}
CHROMIUM_ARGUMENTS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Without the background-networking flags chromium tries Google's hosts at every start; this machine has no
network, and a test must not depend on one."""


def chromium() -> str:
    """Debian's chromium; the test fails (not skips) without it: tools/bootstrap.sh installs it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed: run tools/bootstrap.sh (apt-get install chromium)")
    return path


@dataclasses.dataclass
class PageVisit:
    console_errors: list
    failed_requests: list
    broken_images: list
    missing_links: list
    verdict_text: str
    verdict_in_first_screen: bool
    screenshot: pathlib.Path


def _missing_links(page_file: pathlib.Path, hrefs) -> list[str]:
    missing = []
    for href in hrefs:
        parts = urllib.parse.urlsplit(href)
        if parts.scheme not in ("", "file") or not parts.path:
            continue
        target = pathlib.Path(urllib.parse.unquote(parts.path))
        target = target if target.is_absolute() else page_file.parent / target
        if not target.exists():
            missing.append(href)
    return missing


def open_page(page_file, name: str) -> PageVisit:
    """Open ``page_file`` in chromium; screenshots ``<name>.png`` (first screen) and ``<name>_full.png``."""
    sync_api = pytest.importorskip("playwright.sync_api")
    page_file = pathlib.Path(page_file).resolve()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    console_errors, failed_requests = [], []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGUMENTS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("console", lambda message: console_errors.append(message.text)
                    if message.type == "error" else None)
            page.on("pageerror", lambda error: console_errors.append(str(error)))
            page.on("requestfailed", lambda request: failed_requests.append(request.url))
            page.goto(page_file.as_uri(), wait_until="load")
            broken = page.eval_on_selector_all(
                "img", "images => images.filter(i => !i.complete || i.naturalWidth === 0)"
                       ".map(i => i.getAttribute('src'))")
            hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
            verdict = page.locator("#verdict")
            text = verdict.inner_text() if verdict.count() else ""
            box = verdict.bounding_box() if verdict.count() else None
            first_screen = (box is not None and verdict.is_visible() and box["y"] >= 0
                            and box["y"] + box["height"] <= VIEWPORT["height"])
            screenshot = SCREENSHOTS / f"{name}.png"
            page.screenshot(path=str(screenshot))
            page.screenshot(path=str(SCREENSHOTS / f"{name}_full.png"), full_page=True)
        finally:
            browser.close()
    return PageVisit(console_errors, failed_requests, broken, _missing_links(page_file, hrefs), text, first_screen,
                     screenshot)
