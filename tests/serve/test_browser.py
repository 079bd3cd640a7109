"""``selp serve`` in a real browser: headless Chromium opens the running server's pages."""

from __future__ import annotations

import pytest

from helpers.paths import TRADE
from helpers.serve import bio_store, browser, have_browser, running_server, wait_for

pytestmark = pytest.mark.skipif(not have_browser(), reason="needs chromium, chromedriver and selenium (.ci/install)")

QUERY = "TOP 2 dealsWith(Cuba, *) // exports(Cuba, tobacco) RANK BY confidence"


@pytest.fixture(scope="module")
def trade_url():
    with running_server(str(TRADE / "trade.dl"), "--db", str(TRADE / "db")) as url:
        yield url


@pytest.fixture(scope="module")
def chrome():
    with browser() as driver:
        yield driver


def _ask(driver, url: str, query: str, fact: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "ask")
    driver.find_element(By.ID, "query").send_keys(query)
    driver.find_element(By.ID, "fact").send_keys(fact)
    driver.find_element(By.ID, "go").click()


def test_trade_query_draws_the_two_trees_of_dealsWith_Cuba_France(trade_url, chrome):
    from selenium.webdriver.common.by import By

    _ask(chrome, trade_url, QUERY, "dealsWith(Cuba, France)")
    figures = wait_for(chrome, "figure.tree")
    assert len(figures) == 2
    weights = [f.find_element(By.CSS_SELECTOR, ".weight").text for f in figures]
    assert weights == ["weight 0.4", "weight 0.28"]
    for f in figures:
        svg = f.find_element(By.CSS_SELECTOR, "svg.tree")
        assert svg.is_displayed() and svg.size["width"] > 100
        labels = [t.get_attribute("textContent") for t in svg.find_elements(By.TAG_NAME, "text")]
        assert labels[0].startswith("dealsWith(Cuba, France)  [r")
        assert "exports(Cuba, tobacco)  (fact 1)" in labels  # a leaf with its fact weight
        # the pattern's part: the root matches its root node, the tobacco leaf its // child
        matched = [r.find_element(By.XPATH, "following-sibling::*").get_attribute("textContent") for r in svg.find_elements(By.CSS_SELECTOR, "rect.m")]
        assert labels[0] in matched and "exports(Cuba, tobacco)  (fact 1)" in matched
    assert chrome.find_element(By.CSS_SELECTOR, "h2.fact").text == "dealsWith(Cuba, France)"


def test_a_subtree_collapses_and_expands_on_a_click(trade_url, chrome):
    from selenium.webdriver.common.by import By

    _ask(chrome, trade_url, QUERY, "dealsWith(Cuba, France)")
    svg = wait_for(chrome, "svg.tree")[0]
    root = svg.find_element(By.CSS_SELECTOR, "g.n.c")
    leaf = [t for t in svg.find_elements(By.TAG_NAME, "text") if t.get_attribute("textContent").startswith("exports(Cuba, tobacco)")][0]
    assert leaf.is_displayed()
    root.click()
    assert not leaf.is_displayed()
    root.click()
    assert leaf.is_displayed()


def test_a_bad_query_shows_its_located_error(trade_url, chrome):
    from selenium.webdriver.common.by import By

    _ask(chrome, trade_url, "TOP 2 dealsWith(Cuba, * RANK BY confidence", "")
    error = wait_for(chrome, "#error")[0].text
    assert error.startswith("error: query:1:24: syntax error")
    assert not chrome.find_elements(By.CSS_SELECTOR, "figure.tree")
    assert chrome.find_element(By.ID, "query").get_attribute("value") == "TOP 2 dealsWith(Cuba, * RANK BY confidence"


def test_the_program_page_lists_rules_relations_and_sizes(trade_url, chrome):
    from selenium.webdriver.common.by import By

    chrome.get(trade_url)
    wait_for(chrome, "p.note")  # the sizes are in (the page reloads itself until then)
    rows = {r.find_elements(By.TAG_NAME, "td")[1].text: [c.text for c in r.find_elements(By.TAG_NAME, "td")]
            for r in chrome.find_elements(By.CSS_SELECTOR, "table.relations tr")[1:]}
    assert rows["dealsWith/2"][0] == "IDB" and rows["dealsWith/2"][-1] == "9"
    assert rows["imports/2"][0] == "EDB" and rows["imports/2"][-1] == "4"
    rules = [r.text for r in chrome.find_elements(By.CSS_SELECTOR, "table.rules td code")]
    assert "r2 (0.5): dealsWith(a, b) :- imports(a, c), exports(b, c)." in rules


def test_the_cdss_tuple_page_shows_B_3_2_with_its_derivations(tmp_path_factory, chrome):
    from selenium.webdriver.common.by import By

    store = bio_store(tmp_path_factory.mktemp("serve") / "bio")
    with running_server(str(store)) as url:
        from selenium.webdriver.support.ui import Select

        chrome.get(url + "tuple")
        Select(chrome.find_element(By.ID, "peer")).select_by_visible_text("PBioSQL")
        chrome.find_element(By.ID, "fact").send_keys("B(3, 2)")
        chrome.find_element(By.ID, "go").click()
        figures = wait_for(chrome, "figure.tree")
        assert [f.find_element(By.CSS_SELECTOR, ".weight").text for f in figures] == ["cost 3", "cost 5", "cost 7"]
        first = [t.get_attribute("textContent") for t in figures[0].find_elements(By.TAG_NAME, "text")]
        assert first == ["B(3, 2)  [m4 2]", "B(3, 5)  (fact 0)", "U(2, 5)  (fact 1)"]
        explained = chrome.find_element(By.ID, "explain").text
        assert "B(3, 2)  <- m4 from PBioSQL, PuBio  [cost 2]" in explained
        graph = chrome.find_element(By.CSS_SELECTOR, "#graph svg")
        nodes = {t.text for t in graph.find_elements(By.TAG_NAME, "text")}
        assert {"B(3,2)", "m4(3,5,2)", "m1(3,5,2)", "G(3,5,2)"} <= nodes
        # the instance page marks the labeled nulls of U
        chrome.get(url + "instances?peer=PBioSQL")
        nulls = [c.text for c in wait_for(chrome, "td.null")]
        assert "f_m3_c(2)" in nulls


def test_a_long_computation_shows_progress_and_the_cancel_button_stops_it(tmp_path, chrome):
    from selenium.webdriver.common.by import By

    (tmp_path / "db").mkdir()
    (tmp_path / "tc.dl").write_text(".decl e(a: int, b: int)\n.decl tc(a: int, b: int)\nt1: tc(x, y) :- e(x, y).\nt2: tc(x, z) :- tc(x, y), e(y, z).\n")
    (tmp_path / "db" / "e.csv").write_text("a,b\n" + "".join(f"{i},{i + 1}\n" for i in range(4000)))
    with running_server(str(tmp_path / "tc.dl"), "--db", str(tmp_path / "db"), "--engine", "reference") as url:
        chrome.get(url)  # the sizes need an evaluation of minutes on the reference engine (8M tuples)
        box = wait_for(chrome, ".job")[0]
        assert "computing" in box.text
        wait_for(chrome, ".job .elapsed:not(:empty)")  # the page polls the job's progress
        box.find_element(By.CSS_SELECTOR, "button.cancel").click()
        assert wait_for(chrome, "#cancelled")[0].text.startswith("cancelled after")
        assert not chrome.find_elements(By.CSS_SELECTOR, ".job")
