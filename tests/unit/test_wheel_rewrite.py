"""The wheel's import rewrite (build_backend/palimpsest_rewrite.py) on tricky sources, and on the whole tree."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_backend"))
from palimpsest_rewrite import LAYERS, RewriteError, SourceTree, rewrite  # noqa: E402


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> SourceTree:
    """A small source tree: events/errors.py, projections/queries/ranker.py, actors/reads_user_stats.py."""
    root = tmp_path_factory.mktemp("tree")
    files = {
        "events/__init__.py": "",
        "events/errors.py": "class StoreError(Exception):\n    pass\n",
        "projections/__init__.py": "",
        "projections/queries/__init__.py": "",
        "projections/queries/ranker.py": "if True:\n    MODEL = 1\n\ndef rank():\n    pass\n",
        "actors/__init__.py": "",
        "actors/reads_user_stats.py": "from actors.declared import reader\n",
        "actors/declared.py": "def reader(name):\n    pass\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return SourceTree.scan({layer: root / layer for layer in LAYERS})


def rewritten(source: str, tree: SourceTree) -> str:
    source = textwrap.dedent(source)
    out = rewrite(source, "m.py", tree)
    assert out.count("\n") == source.count("\n")  # every line stays where it was (tracebacks point right)
    compile(out, "m.py", "exec")
    return out


def test_imports_of_every_form_move_under_palimpsest(tree):
    out = rewritten('''
        import os, events
        import projections.queries.ranker as ranker
        from events.errors import StoreError
        from projections.queries import (  # a comment
            ranker,
        )
        from \\
            actors.declared import reader
        from  events . errors import StoreError as E
        s = "中文"; import actors
        def late():
            from projections.queries.ranker import rank
        from . import sibling
        from palimpsest.cli import main
    ''', tree)

    assert out.splitlines()[1:] == [
        "import os, palimpsest.events as events",
        "import palimpsest.projections.queries.ranker as ranker",
        "from palimpsest.events.errors import StoreError",
        "from palimpsest.projections.queries import (  # a comment",
        "    ranker,",
        ")",
        "from \\",
        "    palimpsest.actors.declared import reader",
        "from  palimpsest.events . errors import StoreError as E",
        's = "中文"; import palimpsest.actors as actors',
        "def late():",
        "    from palimpsest.projections.queries.ranker import rank",
        "from . import sibling",
        "from palimpsest.cli import main",
    ]


def test_module_paths_in_strings_move_and_other_text_stays(tree):
    out = rewritten('''
        """Docstrings document the source: events.errors stays."""
        READER = "actors.reads_user_stats"
        RENDER = 'projections.queries.ranker:rank'
        PREFIX = "projections."
        CAUSE = ("events.errors.StoreError: ", "StoreError: ")
        FIX = "; register one with @actors.declared.reader"
        OWN = "palimpsest.cli_feedback:print_signals"
        FILES = ("events.parquet", "events.parquet.part")
        SQL = "UPDATE events SET touch = 1 WHERE events.event_id = t.event_id"
        WORDS = ("events", "source events:", "recorded as events.", "actors")
        RAW = r"events.errors"
        def f():
            """Also projections.queries.nowhere, in a docstring."""
            return "projections.queries"
    ''', tree)

    values = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(out).body if isinstance(n, ast.Assign)}
    assert values["READER"] == "palimpsest.actors.reads_user_stats"
    assert values["RENDER"] == "palimpsest.projections.queries.ranker:rank"
    assert values["PREFIX"] == "palimpsest.projections."
    assert values["CAUSE"] == ("palimpsest.events.errors.StoreError: ", "StoreError: ")
    assert values["FIX"] == "; register one with @palimpsest.actors.declared.reader"
    assert values["OWN"] == "palimpsest.cli_feedback:print_signals"
    assert values["FILES"] == ("events.parquet", "events.parquet.part")
    assert values["SQL"] == "UPDATE events SET touch = 1 WHERE events.event_id = t.event_id"
    assert values["WORDS"] == ("events", "source events:", "recorded as events.", "actors")
    assert values["RAW"] == "palimpsest.events.errors"
    assert "Docstrings document the source: events.errors stays." in out
    assert "Also projections.queries.nowhere, in a docstring." in out
    assert 'return "palimpsest.projections.queries"' in out


@pytest.mark.parametrize(("source", "says"), [
    ("import events.errors\n", "`import events.errors` binds `events`"),
    ('X = "events.nosuch"\n', "'events' defines no 'nosuch'"),
    ('X = "projections.queries.ranker.nosuch"\n', "'projections.queries.ranker' defines no 'nosuch'"),
    ('X = "actors.nowhere:run"\n', "'actors' has no submodule 'nowhere'"),
    ('X = "actors.declared:run"\n', "'actors.declared' defines no 'run'"),
    ('X = "projections.queries.ranker.MODEL:rank"\n', "has no submodule 'MODEL'"),
    ('X = f"events.errors.{1}"\n', "an f-string, bytes or an annotation"),
    ('X = b"events.errors"\n', "an f-string, bytes or an annotation"),
    ('def f(x: "events.errors.StoreError"): pass\n', "an f-string, bytes or an annotation"),
    ('X = "actors" ".declared"\n', "still names ['actors.declared']"),  # split in two literals
    ('X = "events\\x2eerrors"\n', "still names ['events.errors']"),  # an escaped dot
])
def test_a_layer_named_in_a_form_the_rewrite_cannot_keep_stops_it(tree, source, says):
    with pytest.raises(RewriteError) as caught:
        rewrite(source, "m.py", tree)

    assert caught.value.problems and all(p.startswith("m.py:1: ") for p in caught.value.problems)
    assert says in str(caught.value)


def test_every_problem_of_a_module_is_listed_in_line_order(tree):
    with pytest.raises(RewriteError) as caught:
        rewrite('A = "events.nosuch"\nimport actors.declared\nB = "projections.nosuch"\n', "m.py", tree)

    assert [p.split(": ")[0] for p in caught.value.problems] == ["m.py:1", "m.py:2", "m.py:3"]


def test_every_module_of_the_repository_is_rewritten_and_names_no_layer_after():
    real = SourceTree.scan({layer: ROOT / layer for layer in LAYERS})
    modules = [p for folder in (*LAYERS, "palimpsest") for p in sorted((ROOT / folder).rglob("*.py"))]

    for path in modules:
        out = rewrite(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), real)
        for node in ast.walk(ast.parse(out)):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module.split(".")[0] not in LAYERS, path
    assert len(modules) > 200
