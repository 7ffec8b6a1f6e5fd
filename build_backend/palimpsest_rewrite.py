"""The wheel's import rewrite: the source's ``events.x``, ``projections.x`` and ``actors.x`` become ``palimpsest.…``.

The repository keeps the layers as top-level folders (``events/``, ``projections/``, ``actors/``) and its code
imports them by those names; the wheel installs them under ``palimpsest/`` so that ``palimpsest`` is its only
top-level name. :func:`rewrite` turns one module's source into the wheel's, edited at the positions ``ast`` and
``tokenize`` give, so nothing else in the file changes (line numbers included):

- ``from events.x import y`` → ``from palimpsest.events.x import y``;
  ``import events.x as y`` → ``import palimpsest.events.x as y``;
  ``import events`` → ``import palimpsest.events as events``;
- a module path in a string: ``"actors.reads_user_stats"`` (given to ``importlib``), ``"projections.queries"``
  (``importlib.resources``), ``"projections."`` (the prefix of ``pkgutil.walk_packages``),
  ``"module:function"``, ``"module.Name"`` (a name the module defines, e.g. in an error text).

A string naming ``events.<word>`` (or another layer) that is no module of the tree, no name such a module defines
and no entry of :data:`NOT_MODULES` stops the build (:class:`RewriteError` lists each with its fix), as does an
import form the rewrite cannot keep (``import events.x`` binds ``events``, which the wheel does not have).
Docstrings are left as written: they document the source. After the edits the new source is parsed again and
must name no layer by its top-level name.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "palimpsest"
LAYERS = ("events", "projections", "actors")
# Text that looks like a layer's module path but is none (the layer's name used as a plain word), each with why.
NOT_MODULES = {
    "events.parquet": "the audit's export file (events.parquet, events.parquet.part)",
    "events.event_id": "a column of the log's DuckDB table `events` in SQL",
}
# A layer's name followed by a dotted path, not itself part of a dotted name ("palimpsest.events" is not matched).
_LAYER = "|".join(LAYERS)
REFERENCE = re.compile(rf"(?<![\w.])(?:{_LAYER})(?:\.\w+)+(?::\w+)?|(?<![\w.])(?:{_LAYER}):\w+")
PACKAGE_PREFIX = re.compile(rf"(?:{_LAYER})\.")  # a whole string such as "projections." (pkgutil's prefix)


class RewriteError(Exception):
    """The source names a layer in a way the wheel's rewrite cannot keep; each problem says where and the fix."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("the wheel's import rewrite stopped:\n" + "\n".join(f"  {p}" for p in self.problems))


@dataclass(frozen=True)
class SourceTree:
    """The modules of the layers (dotted names) and the names each defines at its top level."""

    names: Mapping[str, frozenset[str]]

    @classmethod
    def scan(cls, folders: Mapping[str, Path]) -> SourceTree:
        """``folders``: each layer's source folder (``{"events": Path("events"), ...}``)."""
        names = {}
        for layer, folder in folders.items():
            for path in sorted(folder.rglob("*.py")):
                if "__pycache__" in path.parts:
                    continue
                parts = (layer, *path.relative_to(folder).with_suffix("").parts)
                module = ".".join(parts).removesuffix(".__init__")
                names[module] = _defined(ast.parse(path.read_text(encoding="utf-8"), str(path)).body)
        return cls(names)

    def classify(self, reference: str) -> str | None:
        """None if ``reference`` (``a.b.c`` or ``a.b:c``) is a module path of the tree, else what is wrong."""
        path, _, attribute = reference.partition(":")
        parts = path.split(".")
        depth = max((i for i in range(2, len(parts) + 1) if ".".join(parts[:i]) in self.names), default=1)
        module, rest = ".".join(parts[:depth]), parts[depth:]
        if module not in self.names:
            return f"{module!r} is no module of this tree"
        if attribute and rest:
            return f"{module!r} has no submodule {'.'.join(rest)!r}"
        name = attribute or (rest[0] if rest else None)
        if name is not None and name not in self.names[module]:
            return f"{module!r} defines no {name!r} and has no such submodule"
        return None


def _defined(body: list[ast.stmt]) -> frozenset[str]:
    """Names a module binds at its top level (also inside top-level ``if``/``try``/``with``/loop blocks)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for block in ("body", "orelse", "finalbody"):
                found |= _defined([n for n in getattr(node, block, []) if isinstance(n, ast.stmt)])
            for handler in getattr(node, "handlers", []):
                found |= _defined(handler.body)
    return frozenset(found)


def _candidates(text: str) -> list[re.Match]:
    """The layer references in ``text`` (plain words such as "events" are none)."""
    return list(REFERENCE.finditer(text))


@dataclass
class _Survey:
    """What one walk of a module's tree finds: its imports, its docstrings and its annotations."""

    imports: list[ast.Import | ast.ImportFrom]
    docstrings: list[ast.Constant]
    annotations: list[ast.expr]

    @classmethod
    def of(cls, module: ast.Module) -> _Survey:
        survey = cls([], [], [])
        for node in ast.walk(module):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                survey.imports.append(node)
            elif isinstance(node, ast.arg) and node.annotation is not None:
                survey.annotations.append(node.annotation)
            elif isinstance(node, ast.AnnAssign):
                survey.annotations.append(node.annotation)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
                survey.annotations.append(node.returns)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    survey.docstrings.append(first.value)
        return survey


class _Source:
    """Positions in one source text: ``ast`` gives (line, UTF-8 byte column), ``tokenize`` (line, character)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, row: int, column: int) -> int:
        """Character offset of a tokenize position."""
        return self.starts[row - 1] + column

    def node_offset(self, row: int, byte_column: int) -> int:
        """Character offset of an ast position."""
        return self.starts[row - 1] + len(self.lines[row - 1].encode("utf-8")[:byte_column].decode("utf-8"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.node_offset(node.lineno, node.col_offset), self.node_offset(node.end_lineno, node.end_col_offset)


def rewrite(text: str, where: str, tree: SourceTree) -> str:
    """The wheel's source of one module (``where`` names it in errors); raises :class:`RewriteError`."""
    module = ast.parse(text, where)
    source = _Source(text)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in character offsets
    problems: list[tuple[int, str]] = []  # (line, what is wrong and the fix)
    survey = _Survey.of(module)
    _import_edits(survey, source, tokens, edits, problems)
    _string_edits(survey, source, tokens, tree, edits, problems)
    if problems:
        raise RewriteError(f"{where}:{line}: {what}" for line, what in sorted(problems))
    out = text
    for start, end, replacement in sorted(edits, reverse=True):
        out = out[:start] + replacement + out[end:]
    _check(out, where)
    return out


def _import_edits(survey: _Survey, source: _Source, tokens: list[tokenize.TokenInfo], edits: list,
                  problems: list) -> None:
    """``from events.x import y`` and ``import events.x as y`` gain the prefix; ``import events`` keeps its name."""
    at = {source.offset(*t.start): i for i, t in enumerate(tokens)}
    for node in survey.imports:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] in LAYERS:
            i = at[source.node_offset(node.lineno, node.col_offset)] + 1  # the token after "from"
            while tokens[i].type in (tokenize.NL, tokenize.COMMENT):
                i += 1
            start = source.offset(*tokens[i].start)
            edits.append((start, start, f"{PREFIX}."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top not in LAYERS:
                    continue
                start = source.node_offset(alias.lineno, alias.col_offset)
                if alias.asname is not None:
                    edits.append((start, start, f"{PREFIX}."))
                elif "." not in alias.name:
                    edits.append((start, start + len(top), f"{PREFIX}.{top} as {top}"))
                else:
                    package, _, name = alias.name.rpartition(".")
                    problems.append((node.lineno, f"`import {alias.name}` binds `{top}`, which the wheel does not "
                                                  f"install; write `from {package} import {name}` or "
                                                  f"`import {alias.name} as <name>`"))


def _string_edits(survey: _Survey, source: _Source, tokens: list[tokenize.TokenInfo], tree: SourceTree,
                  edits: list, problems: list) -> None:
    """Each module path in a plain string literal gains the prefix; docstrings are left as written."""
    docstrings = [source.span(d) for d in survey.docstrings]
    annotations = [source.span(a) for a in survey.annotations]
    for token in tokens:
        if token.type != tokenize.STRING:
            continue  # an f-string's parts (Python 3.12 on) are checked on the rewritten tree (_check)
        found = [m for m in _candidates(token.string) if not _plain_word(m.group())]
        whole = PACKAGE_PREFIX.fullmatch(_body(token.string) or "")
        start = source.offset(*token.start)
        if not (found or whole) or any(a <= start < b for a, b in docstrings):
            continue
        line = token.start[0]
        prefix = re.match(r"[A-Za-z]*", token.string).group().lower()
        if "f" in prefix or "b" in prefix or any(a <= start < b for a, b in annotations):
            problems.append((line, f"{token.string} names a layer in an f-string, bytes or an annotation; write "
                                   "the module path as a plain string literal"))
            continue
        if whole:  # "projections.", the prefix of pkgutil.walk_packages
            at = start + token.string.index(whole.group())
            edits.append((at, at, f"{PREFIX}."))
            continue
        for match in found:
            wrong = tree.classify(match.group())
            if wrong is not None:
                problems.append((line, f"the string {token.string} names {match.group()!r}: {wrong}; fix the "
                                       "name, or, if it is no module path, add it to NOT_MODULES in "
                                       "build_backend/palimpsest_rewrite.py with why"))
            else:
                edits.append((start + match.start(), start + match.start(), f"{PREFIX}."))


def _plain_word(reference: str) -> bool:
    """The reference is an entry of :data:`NOT_MODULES` (or continues one: ``events.parquet.part``)."""
    return ".".join(reference.partition(":")[0].split(".")[:2]) in NOT_MODULES


def _body(literal: str) -> str | None:
    """The characters between the quotes of a plain (unprefixed or ``r``) string literal."""
    match = re.fullmatch(r"[rR]?('''|\"\"\"|'|\")(.*)\1", literal, re.DOTALL)
    return match.group(2) if match else None


def _check(text: str, where: str) -> None:
    """The rewritten module imports no layer by its top-level name and no string names one."""
    module = ast.parse(text, where)
    survey = _Survey.of(module)
    docstrings = {id(d) for d in survey.docstrings}
    problems = []
    for node in survey.imports:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module] * (node.level == 0)
        problems += [(node.lineno, f"still imports {n!r}") for n in names if n.split(".")[0] in LAYERS]
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            left = [m.group() for m in _candidates(node.value) if not _plain_word(m.group())]
            if left or PACKAGE_PREFIX.fullmatch(node.value):
                problems.append((node.lineno, f"the string {node.value!r} still names {left or node.value!r} "
                                              "(split into parts, escaped, or in an f-string?); write the module "
                                              "path as one plain string literal"))
    if problems:
        raise RewriteError(f"{where}:{line}: {what}" for line, what in sorted(problems))
