"""How the CLI's text reaches a person: colours, line width, "… and N more", and the pager.

Standard library only (the client path stays light: ``tests/unit/test_cli_client.py``).

- Colours only when stdout is a terminal, ``NO_COLOR`` is unset or empty (https://no-color.org), ``TERM`` is not
  ``dumb`` and the command does not print JSON. :func:`session` decides once per command; every printer paints
  through :func:`paint`, which is a no-op otherwise.
- A read command's output goes through a pager (``$PAGER``, default ``less -FRX``) when stdout is a terminal and
  the output is longer than the screen, unless ``--no-pager``; when stdout is not a terminal everything is printed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator

DEFAULT_PAGER = "less -FRX"
ELLIPSIS = "…"
_ESCAPES = {"bold": "1", "dim": "2", "rank": "1", "date": "36", "speaker": "33", "why": "32", "warn": "31",
            "heading": "1;4", "id": "2"}
_colour = False  # set per command by session()
_columns: int | None = None  # the terminal's width when a session's stream is a terminal (its output may be paged)


def colour_wanted(stream, *, json: bool = False) -> bool:
    """Whether text printed to ``stream`` may carry colour escapes."""
    if json or os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, role: str) -> str:
    """``text`` in the colour of ``role`` (``rank``, ``date``, ``speaker``, ``why``, ``warn``, ``dim``, ...) when
    colours are on, else ``text`` unchanged."""
    if not _colour or not text:
        return text
    return f"\033[{_ESCAPES[role]}m{text}\033[0m"


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and full-width characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def one_line(text: str) -> str:
    """``text`` on one line: each line break (with the blanks around it) and each tab as one space."""
    return re.sub(r"[ \t]*[\r\n\v\f\u2028\u2029]+[ \t]*|\t", " ", text)


def truncate(text: str, width: int | None) -> str:
    """``text`` on one line, cut to ``width`` columns with an ellipsis when longer; ``None``: not cut."""
    text = one_line(text)
    if width is None or display_width(text) <= width:
        return text
    room, out = max(width - 1, 0), []
    for ch in text:
        room -= display_width(ch)
        if room < 0:
            break
        out.append(ch)
    return "".join(out).rstrip() + ELLIPSIS


def line_width(stream=None) -> int | None:
    """The columns a line may take: ``$COLUMNS`` when set, else the terminal's width when ``stream`` (default
    stdout) is a terminal; ``None`` when it is not (a file or a pipe gets whole lines)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if stream is None and _columns is not None:  # a command's output collected for the pager: the terminal's
        return _columns
    stream = stream if stream is not None else sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return None


def more(hidden: int | None, option: str) -> str | None:
    """The line that says a list was cut: ``… and 12 more (use --limit)`` (``None``: more, how many unknown);
    None when nothing was left out."""
    if hidden is not None and hidden <= 0:
        return None
    return paint(f"{ELLIPSIS} and {'more' if hidden is None else f'{hidden} more'} (use {option})", "dim")


def _screen_rows(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).lines
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().lines


def _rows(text: str, columns: int) -> int:
    """Screen rows ``text`` fills once long lines wrap."""
    return sum(max(1, -(-display_width(re.sub(r"\033\[[0-9;]*m", "", line)) // columns))
               for line in text.splitlines())


def page(text: str, stream, pager: str | None = None) -> None:
    """Write ``text`` to ``stream``, through the pager when ``stream`` is a terminal that it would overflow.

    The pager is ``pager``, else ``$PAGER``, else ``less -FRX`` (``$LESS`` defaults to ``FRX``, as git sets it);
    ``$PAGER`` empty or ``cat``, or naming no program found on ``$PATH``, prints directly."""
    command = pager if pager is not None else os.environ.get("PAGER", DEFAULT_PAGER)
    overflow = False
    try:
        if stream.isatty():
            columns = os.get_terminal_size(stream.fileno()).columns
            overflow = _rows(text, max(columns, 1)) >= _screen_rows(stream)
    except (AttributeError, OSError, ValueError):
        overflow = False
    try:
        program = shlex.split(command)[0] if command.strip() else ""
    except ValueError:  # unbalanced quotes
        program = ""
    if overflow and command.strip() != "cat" and program and shutil.which(program):
        env = {**os.environ, "LESS": os.environ.get("LESS") or "FRX"}
        try:
            stream.flush()
            with subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=stream, env=env,
                                  encoding="utf-8", errors="replace") as proc:
                try:
                    proc.stdin.write(text)
                    proc.stdin.close()
                except BrokenPipeError:  # the reader quit the pager before the end: nothing more to show
                    pass
                proc.wait()
            return
        except OSError:  # no such pager: print directly
            pass
    stream.write(text)
    stream.flush()


@contextlib.contextmanager
def session(*, json: bool = False, pager: bool = True, stream=None) -> Iterator[None]:
    """One command's output: colours decided for ``stream`` (default stdout), and with ``pager`` everything the
    command prints collected and shown through :func:`page` when it ends (also when it fails half way)."""
    global _colour, _columns
    stream = stream if stream is not None else sys.stdout
    previous = _colour, _columns
    _colour = colour_wanted(stream, json=json)
    try:
        isatty = stream.isatty()
        _columns = os.get_terminal_size(stream.fileno()).columns if isatty else None
    except (AttributeError, OSError, ValueError):
        isatty, _columns = False, None
    if not (pager and isatty):
        try:
            yield
        finally:
            _colour, _columns = previous
        return
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    finally:
        _colour, _columns = previous
        if buffer.getvalue():
            page(buffer.getvalue(), stream)
