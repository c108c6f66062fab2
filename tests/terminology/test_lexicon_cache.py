"""The lexicon's disk cache: missing, corrupt, foreign or stale files are rebuilt; writes are atomic and collision-free."""
from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

import pytest

from reconcile_app.terminology import lexicon as lx


def _small() -> lx.Lexicon:
    lex = lx.Lexicon()
    lex.add("water pill", lx.Entry("drug_class", "diuretic", "alias"))
    return lex


BUILT: list[int] = []


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RECONCILE_LEXICON_CACHE", str(tmp_path))
    built = BUILT
    built.clear()

    def fake_build() -> lx.Lexicon:
        built.append(1)
        return _small()

    monkeypatch.setattr(lx, "build_lexicon", fake_build)
    lx.default_lexicon.cache_clear()
    yield tmp_path
    lx.default_lexicon.cache_clear()


def test_a_cold_start_builds_and_writes_the_cache(cache_dir: Path) -> None:
    lex = lx.default_lexicon()
    assert "water pill" in lex.phrases and BUILT == [1]
    files = list(cache_dir.glob("lexicon-*.pkl"))
    assert len(files) == 1 and not list(cache_dir.glob("*.tmp"))
    lx.default_lexicon.cache_clear()
    assert "water pill" in lx.default_lexicon().phrases and BUILT == [1]


@pytest.mark.parametrize("content", [b"", b"\x80\x05garbage", pickle.dumps({"not": "a lexicon"}), pickle.dumps(lx.Lexicon())],
                         ids=["empty", "truncated", "foreign", "no-phrases"])
def test_a_bad_cache_file_is_rebuilt_and_replaced(cache_dir: Path, content: bytes) -> None:
    path = lx._cache_path()
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    lex = lx.default_lexicon()
    assert "water pill" in lex.phrases and BUILT == [1]
    assert isinstance(lx._load_cached(path), lx.Lexicon)


def test_the_key_changes_with_the_alias_file(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = lx._cache_path()
    aliases = tmp_path / "aliases.json"
    aliases.write_bytes(lx.ALIASES_PATH.read_bytes() + b"\n")
    monkeypatch.setattr(lx, "ALIASES_PATH", aliases)
    assert lx._cache_path() != before


def test_concurrent_writers_leave_one_whole_file(cache_dir: Path) -> None:
    path = lx._cache_path()
    assert path is not None
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(5):
                lx._store_cached(_small(), path)
                assert isinstance(lx._load_cached(path), lx.Lexicon)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [p.name for p in cache_dir.iterdir() if p.suffix == ".tmp"] == []
    assert "water pill" in lx._load_cached(path).phrases


def test_an_unwritable_cache_folder_still_returns_a_lexicon(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = cache_dir / "file-not-folder"
    blocker.write_text("x")
    monkeypatch.setenv("RECONCILE_LEXICON_CACHE", str(blocker / "sub"))
    assert "water pill" in lx.default_lexicon().phrases


def test_week_old_indexes_of_other_versions_are_pruned(cache_dir: Path) -> None:
    stale = cache_dir / "lexicon-0000000000000000.pkl"
    stale.write_bytes(b"old")
    os.utime(stale, (1, 1))
    fresh_other = cache_dir / "lexicon-1111111111111111.pkl"
    fresh_other.write_bytes(b"another version in use")
    lx.default_lexicon()
    assert not stale.exists() and fresh_other.exists()
