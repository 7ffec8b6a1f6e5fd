"""The wheel: built from the repository, it installs `palimpsest` only, and works in a venv of its own.

The venv has no copy of the dependencies: a ``.pth`` file lists the site-packages of the interpreter running the
tests. Python adds that directory to ``sys.path`` without processing the ``.pth`` files inside it, so the
repository's editable install (its finder of ``events``, ``actors``, …) stays out; the snippet checks it did.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import textwrap
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import palimpsest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "build_backend", "events", "projections",
           "actors", "palimpsest", "benchmarks")
SNIPPET = textwrap.dedent("""
    import importlib.util, sys, warnings
    from pathlib import Path

    import palimpsest
    from palimpsest import Memory

    prefix = Path(sys.prefix).resolve()
    store = Path.cwd() / "store"
    with Memory.open(store, num_shards=1, embedder="hash") as mem:
        t = "2024-05-01T09:00:00+00:00"
        report = mem.add_messages([
            {"text": "I adopted a puppy named Biscuit last week", "occurred_at": t, "speaker": "Alice"},
            {"text": "My sister works as a nurse in Boston", "occurred_at": t, "speaker": "Alice"},
            {"text": "我喜欢在周末去爬山", "occurred_at": t, "speaker": "Alice"},
            {"text": "我们上个月去了杭州看西湖", "occurred_at": t, "speaker": "Alice"},
        ], tenant="acme", user_id="alice")
        assert report.created == 4, report
        assert mem.search("acme", "alice", "puppy Biscuit", k=1)[0].text.startswith("I adopted a puppy")
        assert mem.search("acme", "alice", "周末爬山", k=1)[0].text == "我喜欢在周末去爬山"

        import ray

        @ray.remote
        def worker_palimpsest():
            import palimpsest.actors.shard
            return palimpsest.actors.shard.__file__

        worker_file = ray.get(worker_palimpsest.remote())

    layers = ("events", "actors", "projections", "benchmarks")
    assert not [m for m in layers if m in sys.modules], [m for m in layers if m in sys.modules]
    assert not [m for m in layers if importlib.util.find_spec(m)], "a layer is importable by its own name"
    ours = [m.__file__ for name, m in sys.modules.items() if name.split(".")[0] == "palimpsest"]
    assert len(ours) > 50 and all(Path(f).resolve().is_relative_to(prefix) for f in ours + [worker_file]), ours
    print("ok", len(ours))
""")


def _has_setuptools(least: tuple[int, int]) -> bool:
    try:
        version = tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except metadata.PackageNotFoundError:
        return False
    return version >= least


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the repository's sources (the build writes build/ and egg-info beside them)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    # setuptools>=77 here: build offline with it; else pip fetches it into an isolated build environment
    isolation = ["--no-build-isolation"] if _has_setuptools((77, 0)) else []
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", *isolation, "-w", str(out),
                            "-v"], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "deprecat" not in (build.stdout + build.stderr).lower(), build.stdout + build.stderr
    (found,) = out.glob("palimpsest-*.whl")
    return found


def test_the_wheel_installs_palimpsest_only_with_its_package_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"palimpsest-{palimpsest.__version__}.dist-info"
    top = sorted({n.split("/")[0] for n in names})
    print("top-level names:", top)

    assert top == ["palimpsest", dist_info]
    assert zipfile.ZipFile(wheel).read(f"{dist_info}/top_level.txt").decode().split() == ["palimpsest"]
    for name in ("palimpsest/events/log.py", "palimpsest/projections/queries/ranker_model_e5.py",
                 "palimpsest/actors/shard.py", "palimpsest/projections/queries/graph_view.js",
                 "palimpsest/projections/queries/graph_view.css", "palimpsest/data/sample_dialogue.jsonl",
                 "palimpsest/server/ui/index.html"):
        assert name in names
    assert not [n for n in names if "benchmarks" in n or "ranker_model_before" in n or "before_lists" in n]


def test_the_installed_wheel_runs_outside_the_repository(wheel, tmp_path):
    env_dir, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # nothing of the checkout may be importable, not even for pip (a PYTHONPATH naming a checkout with its
    # egg-info would have pip take the wheel as installed already)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS", "PYTHONSTARTUP")}
    env["HF_HUB_OFFLINE"] = "1"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                              str(wheel)], capture_output=True, text=True, timeout=120, env=env, cwd=work)
    assert install.returncode == 0, install.stdout + install.stderr
    packages = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    Path(packages, "borrowed-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    version = subprocess.run([env_dir / "bin" / "palimpsest", "--version"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == f"palimpsest {palimpsest.__version__}", version
    first = subprocess.run([python, "-W", "default", "-c", "import palimpsest; palimpsest.Memory"], cwd=work,
                           env=env, capture_output=True, text=True, timeout=60)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")  # the first import prints nothing
    run = subprocess.run([python, "-c", SNIPPET], cwd=work, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.splitlines()[-1].startswith("ok ")
    assert "Warning" not in run.stderr, run.stderr
