"""The browser the UI and docs-site tests drive: Debian's Chromium through Playwright (no browser download).

Where ``make install`` can install Chromium itself (root with apt-get, as in CI) a missing browser is a failure,
not a skip: a green run there means the browser tests ran. ``PALIMPSEST_CHROMIUM`` names another binary;
``PALIMPSEST_SKIP_BROWSER=1`` skips on purpose.
"""

from __future__ import annotations

import os
import shutil

import pytest

INSTALLABLE = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None
CHROMIUM = os.environ.get("PALIMPSEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(sync_api):
    """A launched Chromium (a generator for a fixture: yields it, closes it after), or the failure or skip above."""
    if not CHROMIUM and INSTALLABLE and not os.environ.get("PALIMPSEST_SKIP_BROWSER"):
        pytest.fail("no Chromium although `make install` runs as root with apt-get here: run `make browser` and read "
                    "why apt-get could not install chromium (or set PALIMPSEST_SKIP_BROWSER=1 to skip on purpose)")
    if not CHROMIUM:
        pytest.skip("no Chromium found: `apt-get install -y chromium` (make install does it) or set PALIMPSEST_CHROMIUM")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()
