"""The CLI's client mode stays light and says clearly when the server cannot be reached or refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from events.errors import PalimpsestError
from palimpsest import cli_common, cli_graph
from palimpsest.transport import Http, ServerError
from projections.folds.archive import SCOPES
from projections.rules.tool_calls import TOOLS
from tests.serve_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("ray", "numpy", "pyarrow", "duckdb", "jieba", "structlog", "httpx", "pydantic", "tqdm",
         "projections.queries.retrieval")


def test_the_client_path_imports_nothing_heavy():
    code = ("import sys, palimpsest.cli, palimpsest.client; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_cli_choices_copied_to_stay_light_match_their_source():
    assert cli_common.SCOPES == SCOPES
    assert cli_graph.TOOL_NAMES == tuple(TOOLS)


def test_an_unreachable_server_is_named_with_the_fix():
    http = Http(f"http://127.0.0.1:{free_port()}", "plm_x_y", timeout=5)
    with pytest.raises(PalimpsestError, match="did not answer .*palimpsest serve"):
        http.call("GET", "/v1/whoami")
    with pytest.raises(PalimpsestError, match="not an http"):
        Http("127.0.0.1:8765", "k")


def test_a_refusal_lists_each_field_and_its_fix():
    err = ServerError(404, {"error": "not_found", "message": "no user 'bob' in your tenant",
                            "problems": [{"field": "user_id", "fix": "add messages for this user first"}]})
    assert str(err).splitlines() == ["the server answered 404 (not_found): no user 'bob' in your tenant",
                                     "  - user_id: add messages for this user first"]
    assert isinstance(err, PalimpsestError) and err.status == 404
