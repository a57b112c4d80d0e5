"""Headless Chromium (Debian's ``chromium``, installed by scripts/test) for page tests.

``load(url, ...)`` runs one browser with a fresh profile: ``--dump-dom`` returns the DOM
once the page's scripts have run (``--virtual-time-budget`` lets its timers and fetches
settle), ``screenshot=`` writes a PNG. No browser is ever downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("chromium is missing: scripts/test installs it (apt-get install chromium)")


def load(
    url: str,
    *,
    screenshot: Path | None = None,
    window: tuple[int, int] = (1400, 2200),
    budget_ms: int = 8000,
) -> str:
    """The page's DOM after its scripts ran (and its screenshot, if asked)."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        args = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            f"--window-size={window[0]},{window[1]}",
        ]
        dom = subprocess.run([*args, "--dump-dom", url], capture_output=True, text=True, timeout=90)
        assert dom.returncode == 0, dom.stderr[-2000:]
        if screenshot is not None:
            shot = subprocess.run(
                [*args, f"--screenshot={screenshot}", url],
                capture_output=True,
                text=True,
                timeout=90,
            )
            assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    return dom.stdout
