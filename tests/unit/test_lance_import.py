"""``import_lancedb``: LanceDB opens a directory without the REST client's API classes, which still load on use."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, sys, tempfile
    import pyarrow as pa
    from projections.adapters.lance_import import CLIENT, import_lancedb

    lancedb = import_lancedb()
    db = lancedb.connect(tempfile.mkdtemp())
    table = db.create_table("t", schema=pa.schema([pa.field("x", pa.int64())]))
    table.add(pa.table({"x": [1, 2, 3]}))
    apis_before = sorted(m for m in sys.modules if m.startswith(CLIENT + ".api"))
    rows = table.count_rows()
    client = sys.modules[CLIENT]
    api_client = client.ApiClient  # first use of the package itself: its real __init__ runs now
    print(json.dumps({"rows": rows, "apis_before": apis_before, "api_client": api_client.__name__,
                      "table_api": hasattr(client, "TableApi")}))
    """
)


def test_lancedb_works_without_the_rest_api_classes_which_load_on_first_use():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rows"] == 3
    assert result["apis_before"] == []  # none of the ~370 validate_call methods were built to open a directory
    assert result["api_client"] == "ApiClient" and result["table_api"] is True


def test_an_imported_client_is_left_as_it_is():
    script = (
        "import sys, lance_namespace_urllib3_client as m\n"
        "from projections.adapters.lance_import import defer_client_init, CLIENT\n"
        "defer_client_init()\n"
        "print(sys.modules[CLIENT] is m, type(m).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "module"]


def test_lancedb_is_imported_without_the_overrides_checks_and_the_package_is_left_as_it_was():
    """On Python 3.11, lancedb binds the marker ``typing.override`` is from 3.12 on (the ``overrides`` package reads
    each decorated method's bytecode at import); the real package is back afterwards, imported before or not."""
    script = textwrap.dedent(
        """
        import json, sys, tempfile
        import pyarrow as pa
        before = sys.argv[1] == "imported"
        if before:
            import overrides
        from projections.adapters.lance_import import import_lancedb

        lancedb = import_lancedb()
        table = lancedb.connect(tempfile.mkdtemp()).create_table("t", schema=pa.schema([pa.field("x", pa.int64())]))
        table.add(pa.table({"x": [1, 2]}))
        import lancedb.db as db
        import overrides  # the real package, whether or not it was imported before
        print(json.dumps({"rows": table.count_rows(), "checked": db.override is overrides.override,
                          "real": getattr(overrides, "__file__", None) is not None}))
        """
    )
    for state in ("imported", "not imported"):
        out = subprocess.run([sys.executable, "-c", script, state], capture_output=True, text=True, timeout=120,
                             check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["rows"] == 2 and result["real"], result
        if sys.version_info < (3, 12):
            assert result["checked"] is False, result  # lancedb's methods carry the marker, not the package's checks
