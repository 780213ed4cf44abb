"""Issue 31: a model config.json and an arch JSON are kilobytes; one over CONFIG_FILE_MAX_BYTES (a trace or a
weights file passed by mistake) is refused from its size, before it is read, in one line naming the path as given,
the limit and the fix. "Before it is read" is measured: tracemalloc's peak while refusing a 64 MiB (sparse) file
stays far below the file (the code before this read the file whole first, then checked or parsed it)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.model_config import load_model_config
from sdpa_analyzer.server.roots import CONFIG_FILE_MAX_BYTES, DataRoots
from sdpa_analyzer.server.scoring.arch import read_arch_file
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure

BIG = 64 << 20
READERS: dict[str, Callable[[Path, DataRoots], object]] = {
    "model_config": lambda path, roots: load_model_config(path, roots),
    "arch file": lambda path, roots: read_arch_file(str(path), roots),
}


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.write(b"{")
        fh.truncate(size)  # a hole: no disk used, but reading it would make `size` bytes
    return path


@pytest.mark.parametrize("what", list(READERS))
def test_a_huge_config_is_refused_before_it_is_read(what: str, tmp_path: Path) -> None:
    path = _sparse(tmp_path / "huge.json", BIG)
    roots = DataRoots([tmp_path])
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as err:
            READERS[what](path, roots)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and str(BIG) in msg and str(CONFIG_FILE_MAX_BYTES) in msg, msg
    assert what in msg and "pass " in msg, msg
    assert peak < BIG // 16, f"{peak} bytes allocated to refuse a {BIG}-byte file"


@pytest.mark.parametrize("what", list(READERS))
def test_the_limit_is_inclusive(what: str, tmp_path: Path) -> None:
    """A file of exactly the limit is read (and refused for its content, not its size); one byte more is not."""
    roots = DataRoots([tmp_path])
    at = _sparse(tmp_path / "at.json", CONFIG_FILE_MAX_BYTES)
    with pytest.raises(InputError) as err:
        READERS[what](at, roots)
    assert "-byte limit" not in str(err.value), err.value
    over = _sparse(tmp_path / "over.json", CONFIG_FILE_MAX_BYTES + 1)
    with pytest.raises(InputError, match=f"{CONFIG_FILE_MAX_BYTES + 1} bytes, over the {CONFIG_FILE_MAX_BYTES}-byte"):
        READERS[what](over, roots)


def test_a_config_padded_to_just_under_the_limit_still_reads(tmp_path: Path) -> None:
    """Size alone decides: a real config with whitespace up to the limit is accepted."""
    text = json.dumps({"num_hidden_layers": 2, "sliding_window": 128,
                       "layer_types": ["sliding_attention", "full_attention"]})  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(text + " " * (CONFIG_FILE_MAX_BYTES - len(text)))
    hints = load_model_config(path, DataRoots([tmp_path]))
    assert hints.kinds == ("sliding_attention", "full_attention")


def test_a_huge_arch_file_through_a_tool_is_one_line(tmp_path: Path) -> None:
    path = _sparse(tmp_path / "gpu.json", BIG)
    with pytest.raises(ToolFailure) as err:
        call("model_attention", DataRoots([tmp_path]), batch=1, heads_q=8, seq_q=1024, head_dim=128, arch=str(path))
    msg = str(err.value)
    assert not err.value.internal and "\n" not in msg and "arch file" in msg and str(BIG) in msg, msg
