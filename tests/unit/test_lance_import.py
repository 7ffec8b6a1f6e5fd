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


def test_the_namespace_models_build_their_validators_on_first_use_and_later_models_as_usual():
    """The ~200 request and response models lancedb's import defines are not built to open a directory; one still
    validates when used, and pydantic's own config is as it was (a model defined afterwards is built at once)."""
    script = textwrap.dedent(
        """
        import json, tempfile
        import pyarrow as pa
        import pydantic
        from projections.adapters.lance_import import import_lancedb

        config_before = dict(pydantic.BaseModel.model_config)
        lancedb = import_lancedb()
        lancedb.connect(tempfile.mkdtemp()).create_table("t", pa.table({"x": [1, 2]})).count_rows()
        import lance_namespace as ns
        models = [v for v in vars(ns).values() if isinstance(v, type) and issubclass(v, pydantic.BaseModel)]
        built_before = sum(bool(m.__pydantic_complete__) for m in models)
        answer = ns.ListTablesResponse(tables=["a"])
        try:
            ns.ListTablesResponse(tables=5)
            refused = False
        except pydantic.ValidationError:
            refused = True

        class Later(pydantic.BaseModel):
            x: int

        print(json.dumps({"models": len(models), "built_before": built_before, "tables": answer.tables,
                          "refused": refused, "later_built": Later.__pydantic_complete__,
                          "config_same": dict(pydantic.BaseModel.model_config) == config_before}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["models"] > 100 and result["built_before"] == 0, result
    assert result["tables"] == ["a"] and result["refused"] is True
    assert result["later_built"] is True and result["config_same"] is True
