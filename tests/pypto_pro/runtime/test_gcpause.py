"""`paused_gc`: the collector is off inside, back on after, and what the block made is aged
into the oldest generation at once (no young-generation pass rescans it after a launch)."""
import gc

import pytest

from pypto_pro.gcpause import paused_gc


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _young_ids() -> set[int]:
    return {id(o) for o in gc.get_objects(generation=0)}


def test_objects_made_in_the_block_leave_the_young_generation():
    with paused_gc():
        assert not gc.isenabled()
        made = [[i] for i in range(5000)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 100  # the allocations made inside no longer count
    young = _young_ids()
    assert not any(id(m) in young for m in made)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(m) in oldest for m in made[:50])


def test_a_nested_pause_resumes_only_at_the_outermost():
    with paused_gc():
        with paused_gc():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_objects_the_caller_froze_stay_frozen():
    kept = [[1], [2]]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    assert kept


def test_cyclic_garbage_made_in_the_block_is_still_collected():
    class Node:
        pass

    with paused_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
    assert gc.collect() >= 2


def test_a_simulator_launch_ages_what_it_made():
    from pypto_pro.examples import vector_add as ex
    from pypto_pro.runtime.backends import use_backend

    args = ex.make_inputs(256, 256, seed=0)
    kernel = ex.make_add_kernel(2)
    with use_backend("sim"):
        kernel[None, 4](*args)
    young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
    assert young < 1000  # the launch made tens of thousands; none waits for a young pass
    assert kernel.last_trace is not None
