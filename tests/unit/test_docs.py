"""The documentation: the README stays short and starts with the two commands, the MkDocs site builds in strict
mode with no warning, no page but the design-notes map names a design note, and every Python block of Getting
started runs, in order, in one session."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_build import built_site

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DESIGN_NOTE = re.compile(r"seed[- ]?0[0-9]{2}", re.IGNORECASE)


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def test_the_readme_is_short_and_opens_with_make_demo_and_make_test():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    first_block = re.search(r"^```\n(.*?)^```", readme, re.S | re.M).group(1).splitlines()
    assert [line.split()[:2] for line in first_block[:2]] == [["make", "demo"], ["make", "test"]]
    for lab_note in ("load average", "/tmp/", "p50/p95", "measured here"):
        assert lab_note not in readme


def test_every_page_the_readme_links_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)\)", readme)
    assert links
    generated = {f"docs/reference/{page}.md" for page in ("cli", "events", "http", "settings")}
    assert [link for link in links if not (ROOT / link).exists() and link not in generated] == []


def test_no_page_but_the_design_notes_map_names_a_design_note():
    pages = [p for p in DOCS.rglob("*.md") if p.name != "design-notes.md"]
    assert [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages
            for m in DESIGN_NOTE.finditer(p.read_text(encoding="utf-8"))] == []


def test_the_site_builds_in_strict_mode_without_warnings(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[docs]' (make install does)")
    pytest.importorskip("material", reason="mkdocs-material is not installed: pip install -e '.[docs]'")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: pip install -e '.[docs]'")
    build = built_site()  # one build for this test and the browser tests of the site
    assert build.returncode == 0, build.output
    assert "WARNING" not in build.output
    site = build.site
    for page in ("index.html", "getting-started/index.html", "reference/python/index.html",
                 "reference/cli/index.html", "reference/events/index.html", "reference/http/index.html"):
        assert (site / page).is_file(), page
    rendered = [p for p in site.rglob("*.html") if "design-notes" not in p.parts]
    assert [str(p.relative_to(site)) for p in rendered if DESIGN_NOTE.search(p.read_text(encoding="utf-8"))] == []
    cli = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    assert "palimpsest reembed" in cli and "palimpsest keys create" in cli
    assert "message_recorded" in (site / "reference/events/index.html").read_text(encoding="utf-8")


@pytest.mark.integration
@pytest.mark.model
def test_every_python_block_of_getting_started_runs(tmp_path):
    blocks = python_blocks(DOCS / "getting-started.md")
    assert len(blocks) >= 5
    script = tmp_path / "getting_started.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    out = run.stdout
    assert "3 stored" in out
    assert "1 superseded Maya prefers green tea in the morning" in out
    assert "2 active Maya switched to coffee" in out
    # The context: the turn that says all its note does (and more) stands for it; the superseded turn is left out.
    context = out.split("[decision]\nDecision: use PostgreSQL for the Atlas project")[1].split("Maya switched")[0]
    assert "Maya: I switched to coffee, green tea keeps me awake" in context and "I prefer green tea" not in context
    # the search example's output is printed on the page as the code prints it
    shown = re.search(r"```text\n(.*?)```", (DOCS / "getting-started.md").read_text(encoding="utf-8"), re.S)
    ranked = [line for line in out.splitlines() if re.match(r"\d \d{4}-\d\d-\d\d ", line)]
    assert ranked[:3] == shown.group(1).splitlines()
