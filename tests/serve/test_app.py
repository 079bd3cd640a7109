"""``selp serve`` over HTTP: the data links agree with the CLI, bad requests get a 4xx with the
located error, long computations report progress and can be cancelled, nothing is written."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import httpx
import pytest

from helpers.cli import selp
from helpers.paths import TRADE
from helpers.serve import running_server

QUERY = "TOP 2 dealsWith(Cuba, *) // exports(Cuba, tobacco) RANK BY confidence"


@pytest.fixture(scope="module")
def trade(tmp_path_factory):
    """A copy of the trade example served (the copy shows that nothing is written to it)."""
    d = tmp_path_factory.mktemp("trade")
    shutil.copytree(TRADE, d, dirs_exist_ok=True)
    with running_server(str(d / "trade.dl"), "--db", str(d / "db")) as url:
        yield url, d


def settled(url: str, params: dict[str, str], timeout: float = 120.0) -> httpx.Response:
    """GET a page until its job is over (a page shows a job's progress while it runs)."""
    end = time.monotonic() + timeout
    while True:
        r = httpx.get(url, params=params, timeout=timeout)
        if 'class="job"' not in r.text or time.monotonic() > end:
            return r
        time.sleep(0.2)


def _files(d: Path) -> dict[str, float]:
    return {str(p.relative_to(d)): p.stat().st_mtime for p in d.rglob("*")}


def test_binds_to_loopback_by_default(trade):
    url, _ = trade
    assert url.startswith("http://127.0.0.1:")


def test_a_foreign_host_name_is_refused_on_loopback(trade):
    # a DNS name rebound to 127.0.0.1 must not let another site's page read the server
    url, _ = trade
    assert httpx.get(url, headers={"Host": "evil.example"}, timeout=60).status_code == 400
    assert httpx.get(url.replace("127.0.0.1", "localhost"), timeout=60).status_code == 200


def test_json_and_dot_links_give_what_selp_query_prints(trade):
    url, d = trade
    params = {"query": QUERY, "fact": "dealsWith(Cuba, France)"}
    page = settled(url + "ask", params)
    assert page.status_code == 200 and 'id="json"' in page.text
    got = httpx.get(url + "ask.json", params=params, timeout=120)
    assert got.status_code == 200 and got.headers["content-type"].startswith("application/json")
    cli = selp("query", str(d / "trade.dl"), "--db", str(d / "db"), QUERY, "--fact", "dealsWith(Cuba, France)", "--format", "json", "-q")
    assert cli.returncode == 0, cli.stderr
    assert got.json() == json.loads(cli.stdout)
    assert [t["weight"] for t in got.json()["results"][0]["trees"]] == [0.4, 0.28]
    dot = httpx.get(url + "ask.dot", params=params, timeout=120)
    cli_dot = selp("query", str(d / "trade.dl"), "--db", str(d / "db"), QUERY, "--fact", "dealsWith(Cuba, France)", "--format", "dot", "-q")
    assert dot.status_code == 200 and dot.text == cli_dot.stdout


@pytest.mark.parametrize(
    ("path", "params", "status", "message"),
    [
        ("ask", {"query": "TOP 2 dealsWith(Cuba, * RANK BY confidence"}, 400, "error: query:1:24: syntax error"),
        ("ask", {"fact": "dealsWith(Cuba, France", "k": "2"}, 400, "error: fact:1:"),
        ("ask", {"fact": "dealsWith(Cuba, France)", "k": "two"}, 400, "error: k: expected an integer from 1 to 2147483647, got &#39;two&#39;"),
        ("ask", {"fact": "dealsWith(Cuba, France)", "k": "0"}, 400, "error: k: expected an integer"),
        ("ask", {"fact": "dealsWith(Cuba, France)", "monoid": "os:system"}, 400, "error: monoid &#39;os:system&#39; is not loaded: a monoid is never imported from a query"),
        ("ask", {"fact": "dealz(Cuba, France)"}, 400, "error: pattern:1:1: unknown relation dealz"),
        ("ask", {"query": "x" * 10_001}, 400, "error: query: at most 10000 characters, got 10001"),
        ("instrument", {"pattern": "dealsWith(Cuba, *) // "}, 400, "error: pattern:1:"),
        ("nowhere", {}, 404, "error: 404: Not Found"),
    ],
)
def test_malformed_requests_get_a_4xx_page_with_the_located_error(trade, path, params, status, message):
    url, _ = trade
    r = settled(url + path, params)
    assert r.status_code == status, r.text[:500]
    assert message in r.text
    assert "Traceback" not in r.text


def test_malformed_data_requests_get_a_4xx_json_error(trade):
    url, _ = trade
    r = httpx.get(url + "ask.json", params={"query": "TOP 2 dealsWith(Cuba, * RANK BY confidence"}, timeout=60)
    assert r.status_code == 400
    assert r.json()["error"].startswith("query:1:24: syntax error")
    assert httpx.get(url + "jobs/999999", timeout=60).status_code == 404
    assert httpx.post(url + "ask", timeout=60).status_code == 405


def test_large_answers_page(trade):
    url, _ = trade
    params = {"query": "TOP 5 dealsWith(*, *) RANK BY confidence"}
    whole = httpx.get(url + "ask.json", params=params, timeout=120).json()
    trees = sum(len(r["trees"]) for r in whole["results"])
    assert trees > 10  # more than one page of 10
    first = settled(url + "ask", params).text
    assert first.count('<figure class="tree">') == 10
    assert f"{trees} tree(s)" in first and 'id="next"' in first
    last = httpx.get(url + "ask", params={**params, "page": str(-(-trees // 10))}, timeout=120).text
    assert last.count('<figure class="tree">') == trees - 10 * (-(-trees // 10) - 1)


def test_the_instrumentation_page_shows_P_p_and_the_summary(trade):
    url, d = trade
    pattern = "dealsWith(Cuba, *) // exports(Cuba, tobacco)"
    r = httpx.get(url + "instrument", params={"pattern": pattern}, timeout=60)
    assert r.status_code == 200
    cli = selp("instrument", str(d / "trade.dl"), "--pattern", pattern)
    for line in cli.stderr.strip().splitlines()[:-1]:  # the summary selp instrument prints (but its time)
        assert line.replace("'", "&#39;").replace(">", "&gt;").replace("<", "&lt;") in r.text
    assert "dealsWith@v0(" in r.text


def test_nothing_is_written(trade):
    url, d = trade
    before = _files(d)
    for params in ({"fact": "dealsWith(Cuba, France)", "k": "3"}, {"query": QUERY}):
        assert settled(url + "ask", params).status_code == 200
    settled(url, {})
    assert _files(d) == before


def test_a_long_computation_shows_progress_and_is_cancelled(tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "tc.dl").write_text(".decl e(a: int, b: int)\n.decl tc(a: int, b: int)\nt1: tc(x, y) :- e(x, y).\nt2: tc(x, z) :- tc(x, y), e(y, z).\n")
    (tmp_path / "db" / "e.csv").write_text("a,b\n" + "".join(f"{i},{i + 1}\n" for i in range(4000)))
    with running_server(str(tmp_path / "tc.dl"), "--db", str(tmp_path / "db"), "--engine", "reference") as url:
        page = httpx.get(url, timeout=60).text  # the sizes need an evaluation of minutes (8M tuples), cancelled after a second
        assert 'class="job"' in page and "Cancel" in page
        job = page.split('data-job="', 1)[1].split('"', 1)[0]
        time.sleep(1.0)
        state = httpx.get(f"{url}jobs/{job}", timeout=60).json()
        assert state["status"] == "running"
        cancelled = httpx.post(f"{url}jobs/{job}/cancel", timeout=60).json()
        assert cancelled["status"] == "cancelled"
        assert httpx.get(f"{url}jobs/{job}", timeout=60).json()["status"] == "cancelled"
        again = httpx.get(url, timeout=60).text  # the page now says so, and offers to run again
        assert 'id="cancelled"' in again and "rerun=1" in again


def _size(page: str, relation: str) -> str:
    row = page.split(f"<td>{relation}</td>", 1)[1].split("</tr>", 1)[0]
    return row.rsplit('<td class="num size">', 1)[1].split("<", 1)[0]


def test_pages_follow_edits_of_the_program_and_its_data(tmp_path):
    shutil.copytree(TRADE, tmp_path, dirs_exist_ok=True)
    with running_server(str(tmp_path / "trade.dl"), "--db", str(tmp_path / "db")) as url:
        assert _size(settled(url, {}).text, "dealsWith/2") == "9"
        with open(tmp_path / "db" / "dealsWith_edb.csv", "a") as f:
            f.write("Spain,Italy\n")
        time.sleep(0.01)  # a new modification time, even on a coarse clock
        page = settled(url, {}).text
        assert _size(page, "dealsWith_edb/2") == "2" and _size(page, "dealsWith/2") != "9"
        with open(tmp_path / "trade.dl", "a") as f:
            f.write("r9: dealsWith(a, b) :- nosuch(a, b\n")
        page = settled(url, {}).text
        assert "error: " in page and "trade.dl:" in page


def test_a_tree_a_thousand_levels_deep_is_drawn(tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "tc.dl").write_text(".decl e(a: int, b: int)\n.decl tc(a: int, b: int)\nt1: tc(x, y) :- e(x, y).\nt2 (0.9): tc(x, z) :- e(x, y), tc(y, z).\n")
    (tmp_path / "db" / "e.csv").write_text("a,b\n" + "".join(f"{i},{i + 1}\n" for i in range(4000)))
    with running_server(str(tmp_path / "tc.dl"), "--db", str(tmp_path / "db")) as url:
        page = settled(url + "ask", {"fact": "tc(0, 1200)", "k": "1"})
        assert page.status_code == 200, page.text[-500:]
        assert page.text.count("<svg") == 1 and page.text.count('class="t"') == 2 * 1200  # a chain and its leaves
        data = httpx.get(url + "ask.json", params={"fact": "tc(0, 1200)", "k": "1"}, timeout=120)
        assert data.status_code == 200
        # (json.loads recurses and cannot read it back; the document is selp's iter_json)
        assert data.text.count('"relation": "tc"') == 1 + 1200 and data.text.count('"relation": "e"') == 1200


def test_a_cdss_without_a_store_shows_its_configuration_and_says_what_to_do(tmp_path):
    from helpers.cdss import make_cdss

    d = make_cdss(tmp_path)
    with running_server(str(d)) as url:
        overview = httpx.get(url, timeout=60)
        assert overview.status_code == 200
        assert "3 peer(s), 3 relation(s), 4 mapping(s)" in overview.text and "No store yet" in overview.text
        assert "m4: B(i, c), U(n, c) -&gt; B(i, n)" in overview.text
        tuple_page = httpx.get(url + "tuple", params={"peer": "PBioSQL", "fact": "B(3, 2)"}, timeout=60)
        assert tuple_page.status_code == 400
        assert f"error: no store in {d}: create it with `selp cdss init {d}`, then exchange" in tuple_page.text
        bad = httpx.get(url + "tuple", params={"peer": "PBioSQL", "fact": "B(3, 2)", "k": "-1"}, timeout=60)
        assert bad.status_code == 400 and "error: k: expected an integer" in bad.text
