"""The Makefile's two set-up paths: `make demo` installs the package alone, `make test` adds the extras, and every
process the Makefile starts may keep the bytecode of what it imports."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(target: str, venv: Path) -> str:
    """What ``make TARGET`` would run on a machine without the virtual environment (nothing is run)."""
    done = subprocess.run(["make", "-n", "--no-print-directory", target, f"VENV={venv}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_demo_installs_the_package_alone_and_the_tests_add_the_extras(tmp_path):
    venv = tmp_path / "venv"
    demo, test = _dry_run("demo", venv), _dry_run("test", venv)
    installs = [line for line in demo.splitlines() if "pip install" in line]
    assert any(line.endswith("-e .") for line in installs), demo
    assert "[test" not in demo and "-m pytest" not in demo
    assert all("--no-compile" in line for line in installs if "--upgrade pip" not in line), installs
    assert "-e '.[test,bench,docs,langgraph,agents]'" in test and "-m pytest" in test
    assert test.index("-e .\n") < test.index("[test,bench")  # the run-time install first, shared with the demo


def test_processes_started_by_make_keep_the_bytecode_they_compile(tmp_path):
    probe = tmp_path / "probe.mk"
    probe.write_text(f"include {ROOT / 'Makefile'}\nprobe:\n\t@echo \"[$${{PYTHONDONTWRITEBYTECODE}}]\"\n")
    done = subprocess.run(["make", "-s", "--no-print-directory", "-f", str(probe), "probe"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
