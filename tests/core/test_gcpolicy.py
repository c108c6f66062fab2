"""The batch commands' collector settings are scoped: set inside, put back as they were after."""
from __future__ import annotations

import gc

import pytest

from reconcile_app.core.gcpolicy import BATCH_THRESHOLD, gc_batch, gc_paused


def test_paused_stops_collection_inside_and_restores_it_after_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("the build failed")
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_already_off_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_batch_freezes_what_exists_and_puts_threshold_and_freeze_back():
    before = gc.get_threshold()
    kept = ["an engine's table"]  # a container alive when the batch starts
    with gc_batch():
        made_inside = ["a session's rows"]
        assert gc.get_threshold() == BATCH_THRESHOLD
        tracked = gc.get_objects()  # what the collector would still walk: not what was frozen
        assert not any(obj is kept for obj in tracked)
        assert any(obj is made_inside for obj in tracked)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert any(obj is kept for obj in gc.get_objects())
