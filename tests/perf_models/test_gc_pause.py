"""One GC pause for the whole project (perf_models.gc_pause): nested pauses, on one thread or several, turn the
collector back on only when the outermost ends; the batch op parser pauses inside a tool's pause without turning it
on early; and the pause and `is_missing` are each defined once (issue 35: they existed twice)."""

from __future__ import annotations

import gc
import re
import threading

from sdpa_analyzer.perf_models.gc_pause import gc_paused
from sdpa_analyzer.perf_models.ops.batch import parse_ops_table
from tests.support import REPO


def test_nested_pauses_end_with_the_outermost() -> None:
    assert gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end leaves the outer pause in force
        parse_ops_table(["aten::mm"], ["[[2, 2], [2, 2]]"], ["['float', 'float']"], ["['', '']"])
        assert not gc.isenabled()  # the batch parser's own pause is the same one
    assert gc.isenabled()


def test_a_pause_on_another_thread_keeps_this_one_in_force() -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            entered.set()
            leave.wait(timeout=60)

    with gc_paused():
        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(timeout=60)
    assert not gc.isenabled()  # this thread's pause ended; the other's has not
    leave.set()
    t.join(timeout=60)
    assert gc.isenabled()


def test_each_helper_is_defined_once() -> None:
    sources = {p: p.read_text(encoding="utf-8") for pkg in ("perf_models", "server", "prompts")
               for p in (REPO / pkg).rglob("*.py")}  # fmt: skip
    missing = [p for p, text in sources.items() if re.search(r"^def is_missing\(", text, flags=re.M)]
    disables = [p for p, text in sources.items() if "gc.disable()" in text]
    assert [p.relative_to(REPO).as_posix() for p in missing] == ["perf_models/literals.py"]
    assert [p.relative_to(REPO).as_posix() for p in disables] == ["perf_models/gc_pause.py"]
