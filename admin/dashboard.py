"""The dashboard's page and static files (``admin/static/``), served by the admin app.

Owns: ``StaticFiles``, the fixed set of files the page needs (its HTML, script and style,
and uPlot, vendored from npm as built: MIT license, its header and ``uPlot.LICENSE.txt``
kept), their content types, and reading them once, in a worker thread, on first use.
The page holds no data: it reads ``/v1/metrics``, ``/v1/pools`` and ``/v1/dashboard``
with the token the user gives it, so these files are public.
Must not: serve any path outside that fixed set.
"""

from __future__ import annotations

from pathlib import Path

import trio

STATIC_DIR = Path(__file__).resolve().parent / "static"
PAGE = "dashboard.html"
CONTENT_TYPES = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "cluster.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
    "uPlot.iife.min.js": "text/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
    "uPlot.LICENSE.txt": "text/plain; charset=utf-8",
}
HTML = "text/html; charset=utf-8"


class StaticFiles:
    def __init__(self, directory: Path = STATIC_DIR) -> None:
        self.directory = directory
        self._cache: dict[str, bytes] = {}

    def known(self, name: str) -> bool:
        return name in CONTENT_TYPES or name == PAGE

    async def get(self, name: str) -> tuple[bytes, str]:
        """The file's bytes and content type; ``KeyError`` for a name not in the set."""
        if not self.known(name):
            raise KeyError(name)
        data = self._cache.get(name)
        if data is None:
            data = await trio.to_thread.run_sync((self.directory / name).read_bytes)
            self._cache[name] = data
        return data, CONTENT_TYPES.get(name, HTML)
