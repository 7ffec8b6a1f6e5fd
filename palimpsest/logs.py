"""structlog set-up for the CLI and the demo: human-readable lines on stderr."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "warning", json_lines: bool = False) -> None:
    renderer = structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        # Resolve sys.stderr at each use: it may be swapped (pytest capture, redirection) after configure().
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
