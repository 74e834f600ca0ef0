"""Headless Chromium for the demo's browser test and its screenshot (``python -m blocks.demo.browser out.png``).

Debian's chromium and chromium-driver (``make install-browser``), driven by Selenium (the test extra).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def chromium(width: int = 1150, height: int = 1300):
    """Headless Chromium as root on a closed network: no sandbox, no background connections, a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if CHROMIUM is None or CHROMEDRIVER is None:
        raise RuntimeError("no chromium and chromedriver on PATH: run make install-browser")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
        f"--window-size={width},{height}",
    ):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def screenshot(out: Path, index: int = 3, step: int = 8) -> Path:
    """The page after the default agent ran board ``index`` of dev, its slider on ``step``: the README's picture."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from blocks.corpus.download import default_data_root
    from blocks.demo.app import DemoApp
    from blocks.demo.server import DemoServer

    server = DemoServer(DemoApp(default_data_root(), "checkpoints"), "127.0.0.1", 0)
    server.start_in_thread()
    browser = chromium(1150, 1080)
    try:
        browser.get(f"{server.url}/?board={index}&agent=read_and_plan&run=1&step={step}")  # a shared link
        wait = WebDriverWait(browser, 60)
        wait.until(lambda b: "final error" in b.find_element(By.ID, "result").text)
        browser.execute_script("window.scrollTo(0, 0);")
        out.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(out))
    finally:
        browser.quit()
        server.shutdown()
        server.server_close()
    return out


if __name__ == "__main__":
    print(screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/demo.png")))
