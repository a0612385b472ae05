"""The kernel's interrupt button (KeyboardInterrupt) in the middle of a `%%pypto` simulation or
compile: the interrupt propagates, nothing is bound, cached or written, every context the run
set (backend choice, launch and compile observers) is undone, and the same cell then runs."""
from __future__ import annotations

import shutil

import pytest


class _InterruptAfter:
    """Raises KeyboardInterrupt on the n-th call, as SIGINT would at that bytecode."""

    def __init__(self, n: int, inner=None) -> None:
        self.n, self.inner, self.calls = n, inner, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return self.inner(*args, **kwargs) if self.inner is not None else None


def _contexts_are_clean() -> None:
    from pypto_pro import compiler
    from pypto_pro.runtime import backends, profile

    assert profile._observers.get() == () and compiler._observers.get() == ()
    assert backends._override.get() is None


def _compile_cache():
    """The compiles `kernel.compile` keeps (pypto_pro's process-wide compile cache)."""
    from pypto_pro.runtime import compiled

    return compiled._memo


def _interrupt_the_ops(engine: str, monkeypatch) -> _InterruptAfter:
    """Interrupt the 12th op the `engine` runs: some tiles of some blocks already moved."""
    from pypto_pro.sim.fast import replay
    from pypto_pro.sim.reference.engine import Core

    monkeypatch.setenv("PYPTOPRO_SIM_ENGINE", engine)
    if engine == "python":
        interrupt = _InterruptAfter(12, Core._run_op)
        monkeypatch.setattr(Core, "_run_op", lambda self, *a: interrupt(self, *a))
    else:  # the stream engine's eager replay runs each op through `_run_op`
        interrupt = _InterruptAfter(12, replay._run_op)
        monkeypatch.setattr(replay, "_run_op", interrupt)
    return interrupt


@pytest.mark.parametrize("engine", ["python", "native"])
def test_interrupt_mid_simulation_leaves_nothing_half_written(shell, add_body, tmp_path,
                                                               monkeypatch, engine):
    if engine == "native":
        from pypto_pro.runtime.backends.native import compiler

        if shutil.which(compiler()) is None:
            pytest.skip("the stream engine needs a C++ compiler")
    interrupt = _interrupt_the_ops(engine, monkeypatch)
    target = tmp_path / "report.html"
    line = (f'--launch "add_kernel(x, y, z)" --block-dim 4 --soc 950DT -o interrupted '
            f"--export {target}")
    before = len(_compile_cache())
    with pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic("pypto", line, add_body)
    assert interrupt.calls == 12
    assert "interrupted" not in shell.user_ns
    assert list(tmp_path.iterdir()) == []
    _contexts_are_clean()
    # the compile that finished before the launch is cached whole; nothing else was added
    assert len(_compile_cache()) == before + 1
    monkeypatch.undo()
    shell.user_ns["z"].zero_()
    done = shell.run_cell_magic("pypto", line.replace("interrupted", "done") + ' --ref "x + y"',
                                add_body)
    assert done.check.ok and shell.user_ns["done"] is done and target.exists()


def test_interrupt_mid_compile_caches_nothing(shell, add_body):
    from pypto_pro.compiler import observe_compile

    kernel_before = shell.user_ns.get("add_kernel")
    interrupt = _InterruptAfter(3)  # during the third pass of the vector target
    before = len(_compile_cache())
    with observe_compile(interrupt), pytest.raises(KeyboardInterrupt):
        shell.run_cell_magic("pypto", "--static -o half", add_body)
    assert "half" not in shell.user_ns
    kernel = shell.user_ns["add_kernel"]
    assert kernel is not kernel_before and kernel.variants == []
    assert len(_compile_cache()) == before
    _contexts_are_clean()
    result = shell.run_cell_magic("pypto", "--static -o whole", add_body)
    assert len(result.kernels[0].passes()) > 10 and not result.kernels[0].cached


def test_the_kernel_interrupt_button_stops_a_long_simulation(tmp_path):
    """A real ipykernel: interrupt a `%%pypto` simulation while its progress line shows, then
    check the cell failed with KeyboardInterrupt, the progress line was cleared, nothing was
    bound, and the kernel runs the next cell."""
    import os
    import time

    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "PYPTOPRO_BACKEND": "sim", "IPYTHONDIR": str(tmp_path)}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env)
    try:
        def run(code: str, timeout: float = 120, on_message=None) -> tuple[dict, list]:
            msg_id = kc.execute(code)
            seen = []
            deadline = time.monotonic() + timeout
            while True:
                msg = kc.get_iopub_msg(timeout=max(1.0, deadline - time.monotonic()))
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                seen.append(msg)
                if on_message is not None:
                    on_message(msg)
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    break
            while True:
                reply = kc.get_shell_msg(timeout=30)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply["content"], seen

        reply, _ = run("%load_ext pypto_lab\n"
                       "from pypto_pro.examples import vector_add\n"
                       "x, y, z = vector_add.make_inputs(4096, 4096)")
        assert reply["status"] == "ok"
        interrupted: list[float] = []

        def interrupt_while_simulating(msg) -> None:
            text = msg["content"].get("data", {}).get("text/plain", "")
            if not interrupted and text.startswith("pypto: simulate"):
                interrupted.append(time.monotonic())
                km.interrupt_kernel()

        reply, seen = run('%%pypto --launch "add_kernel(x, y, z)" --block-dim 64 -o big\n'
                          "add_kernel = vector_add.make_add_kernel(2)\n",
                          on_message=interrupt_while_simulating)
        assert interrupted, "no progress line named the simulation"
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        updates = [m["content"]["data"].get("text/plain") for m in seen
                   if m["msg_type"] == "update_display_data"]
        assert updates and updates[-1] == ""  # the progress line is cleared
        reply, seen = run("print('big' in globals(), '_pypto' in globals())")
        assert reply["status"] == "ok"
        out = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
        assert out.strip() == "False False"
        reply, _ = run('%%pypto --launch "add_kernel(x[:256], y[:256], z[:256])" --static '
                       '-o small --show run\nadd_kernel = vector_add.make_add_kernel(2)\n')
        assert reply["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
