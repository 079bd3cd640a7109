"""``selp serve`` as a user starts it (a real process on a free port), and a headless Chromium
driven by Selenium to look at its pages."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from helpers.paths import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
_URL = re.compile(r"at (http://\S+/) ")


@contextmanager
def running_server(*args: str, timeout: float = 60.0) -> Iterator[str]:
    """``selp serve ARGS --port 0`` until the block ends; yields its base URL (from the line it
    prints on start). Stopped with SIGINT, as Ctrl-C stops it, and waited for."""
    env = {k: v for k, v in os.environ.items() if k != "SELP_ENGINE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "selp", "serve", *args, "--port", "0"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    found: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = _URL.search(line)
            if m and not found:
                found.append(m.group(1))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        end = time.monotonic() + timeout
        while not found and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        assert found, f"selp serve did not start: {''.join(lines)[-2000:]}"
        yield found[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    assert "Traceback" not in "".join(lines), "".join(lines)[-3000:]


@contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[object]:
    """A headless Chromium (Debian's, with its chromedriver) under Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER or "chromedriver"), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def have_browser() -> bool:
    """Whether Chromium, its driver and Selenium are installed (``.ci/install`` installs them)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return CHROMIUM is not None and CHROMEDRIVER is not None


def wait_for(driver: object, css: str, timeout: float = 60.0) -> list:
    """The elements matching ``css`` once at least one is there (the page may first show a
    job's progress and reload itself)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))


def bio_store(dest: Path) -> Path:
    """The bio example with a store in which every peer imported and published its data and
    PBioSQL exchanged (the README's peer workflow)."""
    from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok

    d = make_cdss(dest)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "-q"))
    return d
