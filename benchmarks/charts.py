"""The benchmark charts: PNG files drawn with matplotlib's Agg canvas (no display, no pyplot state).

Each function takes plain numbers from one result file and ``source``, the line that says where they came from
(command, date, machine); that line is printed under the chart, so a PNG copied anywhere still names its run.
A missing value (``None``) is left out of the chart, never drawn as zero.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, PercentFormatter

WIDTH_IN = 9.0
DPI = 110
SOURCE_CHARS = 140  # the source line wraps at this many characters


def _figure(panels: int = 1, height: float = 4.2) -> tuple[Figure, list]:
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, panels, i + 1) for i in range(panels)]
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    return fig, axes


def _legend(ax, entries: int) -> None:
    """Above the plot, in rows of at most four: never over the data."""
    ax.legend(fontsize=8, ncols=min(4, max(1, entries)), loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)


def _save(fig: Figure, path: Path, title: str, source: str) -> Path:
    lines = textwrap.wrap(source, SOURCE_CHARS) or [""]
    fig.suptitle(title, fontsize=12)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=7, color="#555555", va="bottom", ha="left", family="monospace")
    fig.tight_layout(rect=(0, 0.03 + 0.028 * len(lines), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def grouped_bars(path: Path, title: str, groups: Sequence[str], series: dict[str, Sequence[float | None]], *,
                 ylabel: str, source: str, percent: bool = False) -> Path:
    """One group of bars per entry of ``groups``, one bar per series in each (same colour across groups)."""
    fig, (ax,) = _figure()
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g, v in enumerate(values) if v is not None]
        ys = [v for v in values if v is not None]
        ax.bar(xs, ys, width * 0.95, label=name, color=f"C{i % 10}")
    ax.set_xticks(range(len(groups)), list(groups), fontsize=9)
    ax.set_ylabel(ylabel)
    if percent:
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_ylim(0, 1)
    _legend(ax, len(series))
    return _save(fig, path, title, source)


def lines(path: Path, title: str, x: Sequence[float], series: dict[str, Sequence[float | None]], *, xlabel: str,
          ylabel: str, source: str, percent: bool = False, log_y: bool = False,
          x_labels: Sequence[str] | None = None, dashed: Sequence[str] = ()) -> Path:
    """One line with markers per series over the shared ``x``; the series named in ``dashed`` are drawn dashed."""
    fig, (ax,) = _figure()
    for i, (name, values) in enumerate(series.items()):
        points = [(a, v) for a, v in zip(x, values, strict=True) if v is not None]
        if points:
            ax.plot(*zip(*points), marker="o", label=name, color=f"C{i % 10}",
                    linestyle="--" if name in dashed else "-")
    ax.set_xticks(list(x), list(x_labels) if x_labels else [f"{v:g}" for v in x], fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if percent:
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    if log_y:
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # 20, 50, 100 rather than 2×10¹
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(plain)
    _legend(ax, len(series))
    return _save(fig, path, title, source)


def two_bar_panels(path: Path, title: str, left: tuple[str, dict[str, float | None]],
                   right: tuple[str, dict[str, float | None]], *, source: str) -> Path:
    """Two bar charts side by side, each ``(y label, {bar label: value})``: figures in different units."""
    fig, axes = _figure(panels=2)
    for ax, (ylabel, bars) in zip(axes, (left, right)):
        shown = {k: v for k, v in bars.items() if v is not None}
        ax.bar(range(len(shown)), list(shown.values()), color=[f"C{i % 10}" for i in range(len(shown))])
        ax.set_xticks(range(len(shown)), list(shown), fontsize=8, rotation=20, ha="right")
        ax.set_ylabel(ylabel)
        for i, v in enumerate(shown.values()):
            ax.annotate(f"{v:,.0f}" if v >= 100 else f"{v:.3g}", (i, v), ha="center", va="bottom", fontsize=8)
    return _save(fig, path, title, source)
