"""jieba's prefix dictionary from the project's cache file (projections/adapters/jieba_dict.py): the same words and
counts as jieba's own build, a damaged or foreign file built again, an unwritable cache directory no failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jieba
import pytest
from structlog.testing import capture_logs

from projections.adapters import jieba_dict

ROOT = Path(__file__).resolve().parents[2]
SMALL = ({"编": 0, "编辑": 0, "编辑器": 120, "代码": 300, "写": 900}, 1320)

# a process of its own (jieba's tokenizer is process-wide): loads, segments, and says whether the dictionary is
# jieba's own build of its word list, and where it came from
PROBE = """
import jieba
from projections.adapters import jieba_dict
existed = jieba_dict.path().exists()
jieba_dict.load()
words = jieba.lcut("我最近改用了编辑器写代码")
own = jieba.Tokenizer()
freq, total = own.gen_pfdict(own.get_dict_file())
print(existed, jieba.dt.FREQ == freq and jieba.dt.total == total, "/".join(words))
"""


def _probe(cache: Path) -> list[str]:
    env = {**os.environ, "PALIMPSEST_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_dictionary_is_jiebas_own_build_whether_made_now_or_read_back(tmp_path):
    first, second = _probe(tmp_path), _probe(tmp_path)
    assert first[:2] == ["False", "True"] and second[:2] == ["True", "True"]
    assert first[2] == second[2] == "我/最近/改用/了/编辑器/写/代码"
    assert [p.name for p in tmp_path.iterdir()] == [jieba_dict.path().name]  # one file, nothing left beside it


def test_a_written_dictionary_reads_back_whole(tmp_path):
    where = tmp_path / "d" / "jieba.dict"
    jieba_dict.write(where, *SMALL)
    assert jieba_dict.read(where) == SMALL
    assert not list(where.parent.glob("*.tmp"))  # written through a temporary file, moved in place


@pytest.mark.parametrize("damage", ["truncated", "flipped", "other", "empty"])
def test_a_damaged_or_foreign_file_reads_as_none_and_is_named_in_the_log(tmp_path, damage):
    where = tmp_path / "jieba.dict"
    jieba_dict.write(where, *SMALL)
    data = bytearray(where.read_bytes())
    if damage == "truncated":
        data = data[:-5]
    elif damage == "flipped":
        data[jieba_dict.HEADER.size + 2] ^= 0x01  # a byte of the words: the checksum no longer matches
    elif damage == "other":
        data[:8] = b"NOTJIEBA"
    else:
        data = bytearray()
    where.write_bytes(bytes(data))
    with capture_logs() as logs:
        assert jieba_dict.read(where) is None
    assert [(e["event"], e["path"]) for e in logs] == [("jieba_dictionary_rebuilt", str(where))]


def test_a_cache_directory_that_cannot_be_written_is_logged_not_raised(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with capture_logs() as logs:
        jieba_dict.write(blocked / "jieba.dict", *SMALL)
    assert [e["event"] for e in logs] == ["jieba_dictionary_not_kept"]
    assert jieba_dict.read(blocked / "jieba.dict") is None


def test_the_file_is_named_after_jiebas_version_and_word_list(monkeypatch):
    here = jieba_dict.path()
    monkeypatch.setattr(jieba, "__version__", jieba.__version__ + ".post1")
    assert jieba_dict.path() != here and jieba_dict.path().parent == here.parent
