"""The dashboard's routes: the page and its files are public, its data needs the token and
is what the Spark jobs left in dashboard.data.dir (none yet, a file, a broken file).
The page itself is drawn by a real browser in tests/spark/test_trends.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..support.brokers import BrokerThread
from .conftest import ADMIN, TOKEN, error_code


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path / "dashboard"
    b = BrokerThread(
        tmp_path / "data", {**ADMIN, "admin.token": TOKEN, "dashboard.data.dir": str(data_dir)}
    ).start()
    with httpx.Client(base_url=b.admin_url, timeout=10) as http:
        yield http, data_dir
    b.stop()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_page_and_its_files_need_no_token(board: tuple[httpx.Client, Path]) -> None:
    http, _ = board
    page = http.get("/dashboard")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for src in ("/dashboard/static/dashboard.js", "/dashboard/static/uPlot.iife.min.js"):
        assert src in page.text
        r = http.get(src)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    css = http.get("/dashboard/static/uPlot.min.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    lib = http.get("/dashboard/static/uPlot.iife.min.js").text
    assert lib.startswith("/*! https://github.com/leeoniya/uPlot")  # the license header kept
    assert "MIT License" in http.get("/dashboard/static/uPlot.LICENSE.txt").text


def test_only_the_dashboard_files_are_served(board: tuple[httpx.Client, Path]) -> None:
    http, _ = board
    for name in ("dashboard.html", "..%2Fapp.py", "nope.js", "__init__.py"):
        r = http.get(f"/dashboard/static/{name}")
        assert r.status_code == 404 and error_code(r) == "not-found", name
    assert http.get("/dashboard/static/../../v1/metrics").status_code in (401, 404)


def test_the_data_needs_the_token_and_is_empty_before_the_jobs_ran(
    board: tuple[httpx.Client, Path],
) -> None:
    http, data_dir = board
    assert http.get("/v1/dashboard").status_code == 401
    assert http.get("/v1/metrics").status_code == 401  # what the page polls, too
    body = http.get("/v1/dashboard", headers=AUTH).json()
    assert body == {
        "data_dir": str(data_dir),
        "trends": None,
        "recommendations": None,
        "problems": [],
    }


def test_the_data_is_what_the_jobs_wrote(board: tuple[httpx.Client, Path]) -> None:
    http, data_dir = board
    data_dir.mkdir()
    trends = {"schema": "trio-broker.dashboard/1", "brokers": []}
    (data_dir / "dashboard.json").write_text(json.dumps(trends))
    (data_dir / "recommendations.json").write_text("{not json")
    body = http.get("/v1/dashboard", headers=AUTH).json()
    assert body["trends"] == trends
    assert body["recommendations"] is None
    assert len(body["problems"]) == 1 and body["problems"][0].startswith("recommendations.json")
