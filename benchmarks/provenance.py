"""Where a benchmark result came from, stored in the result itself: the command, the date, the machine, the code.

:func:`stamp` is called by a benchmark's ``main`` right before it writes its JSON; ``benchmarks.report``
prints it under every table and figure, so a figure never travels without the run that made it.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command(module: str, argv: list[str] | None) -> str:
    """The command line that reproduces the run: ``python -m MODULE ARGS`` (``argv`` as parsed, or sys.argv's)."""
    args = sys.argv[1:] if argv is None else list(argv)
    return shlex.join(["python", "-m", module, *args])


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _commit() -> str | None:
    """The short commit of the checkout, with ``+dirty`` when tracked files differ from it; None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def machine() -> dict:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gb": _memory_gb(),
            "system": f"{platform.system()} {platform.machine()}", "python": platform.python_version(),
            "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


def stamp(module: str, argv: list[str] | None = None) -> dict:
    """``{"command", "recorded_at" (UTC, ISO 8601), "machine", "commit"}`` of the run now ending."""
    return {"command": command(module, argv), "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine(), "commit": _commit()}
