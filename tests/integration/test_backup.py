"""A backup taken while the store is open restores into a new store with equal digests."""

from __future__ import annotations

import pytest

from benchmarks.fuzz_cases import run_cli
from events.errors import StoreError
from palimpsest import Memory

pytestmark = pytest.mark.integration

MESSAGES = [{"text": t, "occurred_at": f"2024-05-0{i + 1}T09:00:00+00:00", "client_message_id": f"m{i}"}
            for i, t in enumerate(["I prefer green tea", "我们决定用 PostgreSQL", "I switched to coffee", "周末去爬山"])]


def test_a_backup_of_an_open_store_restores_to_equal_digests(ray_cluster, tmp_path):
    src, backup, new = tmp_path / "src", tmp_path / "backup", tmp_path / "new"
    with Memory.open(src, num_shards=2, embedder="hash") as mem:
        for tenant, user in (("acme", "alice"), ("globex", "李雷")):
            mem.add_messages(MESSAGES, tenant=tenant, user_id=user)
        mem.search("acme", "alice", "what does alice drink?")  # its touches are flushed before the copy
        rc, err = run_cli(["--store", str(src), "backup", str(backup)])  # another client of the open store
        assert (rc, err) == (0, "")
        digests = mem.digest()
        mem.add_messages([{"text": "after the backup", "occurred_at": "2024-06-01T09:00:00+00:00"}],
                         tenant="acme", user_id="alice")
        with pytest.raises(StoreError, match="not an empty directory"):
            mem.backup(backup)

    assert run_cli(["--store", str(new), "restore", str(backup)]) == (0, "")
    with Memory.open(new) as restored:
        assert restored.digest() == digests  # every projection, LanceDB rebuilt from the recorded vectors
        assert all(r.equal for r in restored.replay())
        assert [h.text for h in restored.search("globex", "李雷", "爬山", k=1)] == ["周末去爬山"]
        assert "after the backup" not in {e.event.text for e in restored.events("acme", "alice",
                                                                                kinds=["message_recorded"])}

    rc, err = run_cli(["--store", str(new), "restore", str(backup)])
    assert rc == 2 and "already a store" in err
    log = next((backup / "log").iterdir())
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    rc, err = run_cli(["--store", str(tmp_path / "other"), "restore", str(backup)])
    assert rc == 2 and "differs from the checksum" in err and not (tmp_path / "other").exists()



def test_a_user_forgotten_after_a_backup_stays_forgotten_when_it_is_restored(ray_cluster, tmp_path):
    src, backup, new, blind = tmp_path / "src", tmp_path / "backup", tmp_path / "new", tmp_path / "blind"
    secret = "my locker code is 7319-QZ"
    with Memory.open(src, num_shards=2, embedder="hash") as mem:
        mem.add_messages([*MESSAGES, {"text": secret, "occurred_at": "2024-05-09T09:00:00+00:00"}],
                         tenant="acme", user_id="alice")
        mem.add_messages(MESSAGES, tenant="globex", user_id="李雷")
        mem.backup(backup)
        assert sorted(p.name for p in (backup / "keys").iterdir()) == ["shard-000.keys", "shard-001.keys"]
        assert mem.forget("acme", "alice")["forgotten"]

    assert run_cli(["--store", str(new), "restore", str(backup)]) == (0, "")
    with Memory.open(new) as restored:
        assert restored.search("acme", "alice", "locker code") == []  # its keys were destroyed in the copy
        assert {e.event.kind for e in restored.events("acme", "alice")} == {"payload_erased"}
        assert [h.text for h in restored.search("globex", "李雷", "爬山", k=1)] == ["周末去爬山"]
        assert all(r.equal for r in restored.replay())
    assert not [p for p in new.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]

    (src / "store.json").rename(src / "moved.json")  # the store the backup came from is gone
    rc, err = run_cli(["--store", str(blind), "restore", str(backup)])
    assert rc == 2 and "--forgets-from" in err and not (blind / "store.json").exists()
