"""The Ascend 950 simulator (the `sim` backend), in four layers, each importing only those
before it.

* `model/`: the machine: per-core memories with real tile layouts (`memory`, `layout`), the
  chip's L2 and HBM (`memory_system`, its tag walk compiled in `l2_native`) and the cost of every
  instruction (`cost_model`), on the SoC tables (`pypto_pro.soc`). `ops/` is the functional op
  library: what each instruction does to those memories.
* `frontend/`: the IR of a compiled kernel as executable programs: the scalar unit's closures
  (`program`, `calls_scalar`, `calls_issue`: what an instruction issues), SIMT bodies (`simt*`)
  and VF sections (`vf/`).
* `reference/`: the reference engine: an event-driven clock with in-order pipes, flags, mutexes
  and cross-core counters (`engine`), and the functional executor without a clock
  (`functional`). It defines every value, race and error; `PYPTOPRO_SIM_ENGINE=python` forces it
  for timed launches.
* `fast/`: the fast path, byte-identical to the reference: a timed launch recorded, scheduled in
  compiled code and replayed (`stream`, `scheduler_native`, `replay`), relaunches replayed from
  what the last launch ran (`memo`: a timed launch's recording and schedule, a functional one's
  ops), their ops as prebuilt steps (`tape`) in two lanes (`lanes`), copies compiled
  (`copies_native`), which compile the op library's copies and products (`fusion`).

An op's work kept to run again is a `step.Step` (the op library makes them in torch; the fast
path compiles them). `launch` runs one launch (geometry, waves, cross-core wiring) and
dispatches it to a path, noting which in `Trace.meta`; `pools` keeps finished launches'
memories for the next; `settings` reads the environment switches (`PYPTOPRO_SIM_CACHE=off`: no
relaunch cache, the oracle the fast path is tested against). tests/test_layering.py holds the
import order.
"""
