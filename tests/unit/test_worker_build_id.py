"""The worker's build id names its code: the same sources give the same id, a changed, added or
removed source another; read without compiling anything (recon/runtime/build_id.py)."""

from __future__ import annotations

from pathlib import Path

from recon.runtime.build_id import build_id


def _tree(root: Path) -> None:
    (root / "recon").mkdir()
    (root / "recon" / "a.py").write_text("A = 1\n")
    (root / "workflows").mkdir()
    (root / "workflows" / "night.py").write_text("N = 1\n")
    (root / "worker.py").write_text("W = 1\n")


def test_the_same_sources_give_the_same_id_and_any_change_another(tmp_path: Path) -> None:
    _tree(tmp_path)
    first = build_id(tmp_path)
    assert first == build_id(tmp_path) and first.startswith("recon-")
    seen = {first}
    (tmp_path / "workflows" / "night.py").write_text("N = 2\n")
    seen.add(build_id(tmp_path))
    (tmp_path / "recon" / "b.py").write_text("")
    seen.add(build_id(tmp_path))
    (tmp_path / "recon" / "a.py").unlink()
    seen.add(build_id(tmp_path))
    (tmp_path / "worker.py").write_text("W = 2\n")
    seen.add(build_id(tmp_path))
    assert len(seen) == 5


def test_the_repository_has_one() -> None:
    assert build_id() == build_id()
