"""Regenerate the screenshots of ``selp serve`` in docs/ (not a test: run it by hand).

    PYTHONPATH=. python3 tests/serve/screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.paths import ROOT, TRADE  # noqa: E402
from helpers.serve import bio_store, browser, running_server, wait_for  # noqa: E402

DOCS = ROOT / "docs"


def shoot(driver, url: str, css: str, name: str, width: int = 1280) -> None:
    """Open ``url``, wait for ``css``, and save the whole page (up to 2000 px) as docs/NAME."""
    metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.get(url)
    wait_for(driver, css)
    height = min(2000, driver.execute_script("return document.documentElement.scrollHeight"))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": height})
    driver.save_screenshot(str(DOCS / name))
    print("wrote", DOCS / name)


def main() -> None:
    query = "TOP 2 dealsWith(Cuba, *) // exports(Cuba, tobacco) RANK BY confidence"
    with browser() as driver:
        with running_server(str(TRADE / "trade.dl"), "--db", str(TRADE / "db")) as url:
            shoot(driver, url, "p.note", "serve-program.png")
            shoot(driver, url + "ask?" + urlencode({"query": query, "fact": "dealsWith(Cuba, France)"}), "figure.tree", "serve-ask.png")
            shoot(driver, url + "instrument?" + urlencode({"pattern": "dealsWith(Cuba, *) // exports(Cuba, tobacco)"}), "#instrumented", "serve-instrument.png")
        with tempfile.TemporaryDirectory() as tmp, running_server(str(bio_store(Path(tmp) / "bio"))) as url:
            shoot(driver, url, "#summary", "serve-cdss.png")
            shoot(driver, url + "instances?peer=PBioSQL", "td.null", "serve-cdss-instances.png")
            shoot(driver, url + "tuple?" + urlencode({"peer": "PBioSQL", "fact": "B(3, 2)", "k": "3"}), "figure.tree", "serve-cdss-tuple.png")
            proql = "FOR [U $x] INCLUDE PATH [$x] <-+ [] RETURN $x"
            shoot(driver, url + "proql?" + urlencode({"query": proql}), "#bindings", "serve-proql.png")


if __name__ == "__main__":
    main()
