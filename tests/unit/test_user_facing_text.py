"""What a user reads never names the internal design notes ("seed 001"): CLI help, the HTTP API's OpenAPI
schema and the MCP tools are walked whole; features are named by what they do (the one page that maps the
notes to features is docs/design/design-notes.md)."""

from __future__ import annotations

import argparse
import re

import pytest

DESIGN_NOTE = re.compile(r"seed[- ]?0[0-9]{2}", re.IGNORECASE)


def _parser_texts(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str]]:
    texts = [(path, parser.description or ""), (path, parser.epilog or ""), (path, parser.format_help())]
    for action in parser._actions:  # argparse keeps no public list of arguments or subparsers
        texts.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action.help or ""))
        if isinstance(action, argparse._SubParsersAction):
            texts.extend((f"{path} {choice.dest}", choice.help or "") for choice in action._choices_actions)
            for name, sub in action.choices.items():
                texts.extend(_parser_texts(sub, f"{path} {name}"))
    return texts


def _strings(node: object, where: str = "") -> list[tuple[str, str]]:
    if isinstance(node, str):
        return [(where, node)]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(v, f"{where}/{k}")]
    if isinstance(node, list):
        return [s for i, v in enumerate(node) for s in _strings(v, f"{where}/{i}")]
    return []


def _offending(texts: list[tuple[str, str]]) -> list[str]:
    return [f"{where}: {DESIGN_NOTE.search(text).group(0)!r} in {text[:120]!r}"
            for where, text in texts if DESIGN_NOTE.search(text)]


def test_no_command_or_argument_help_names_a_design_note():
    from palimpsest.cli import build_parser

    texts = _parser_texts(build_parser(), "palimpsest")
    assert len(texts) > 100  # every subcommand was walked
    assert _offending(texts) == []


def test_the_openapi_schema_names_no_design_note():
    pytest.importorskip("fastapi")
    from palimpsest.server.app import build_app

    schema = build_app(4 << 20).openapi()
    assert "/v1/users/{user_id}/tools/{name}" in schema["paths"]
    assert _offending(_strings(schema)) == []


def test_the_mcp_tools_name_no_design_note():
    pytest.importorskip("mcp")
    from palimpsest.server import mcp_tools

    listed = mcp_tools.list_tools().model_dump(mode="json")  # what a client's list_tools receives
    texts = _strings(listed) + [("instructions", mcp_tools.INSTRUCTIONS)]
    assert {"retrieve_memory", "create_memory"} <= set(mcp_tools.TOOLS)
    assert _offending(texts) == []


def test_palimpsest_version_prints_the_package_version(capsys):
    import palimpsest
    from palimpsest.cli import build_parser

    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"palimpsest {palimpsest.__version__}"
