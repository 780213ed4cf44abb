"""Issue 31: a refused link is named as it was given, never by what it resolves to outside the roots (the target,
or a further link on the way), whether it is the path itself or a folder on the way, absolute or relative."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.errors import PathOutsideRootsError
from sdpa_analyzer.server.roots import DataRoots


@pytest.mark.parametrize("given", ["first/data.json", "hop", "plain/first/data.json"])
def test_a_link_out_is_named_as_given(given: str, tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "SECRET_PLACE"
    (outside / "deeper").mkdir(parents=True)
    (outside / "deeper" / "data.json").write_text("{}")
    root.mkdir()
    (root / "plain").mkdir()
    (root / "hop").symlink_to(outside / "deeper")  # a link straight out
    (root / "first").symlink_to(root / "hop")  # a link to a link that leads out
    (root / "plain" / "first").symlink_to(root / "first")
    roots = DataRoots([root])
    for path in (given, str(root / given)):
        with pytest.raises(PathOutsideRootsError) as err:
            roots.resolve(path, what="trace_path")
        msg = str(err.value)
        assert msg.startswith(f"trace_path {path} leads through a symbolic link outside"), msg
        assert "SECRET_PLACE" not in msg and "deeper" not in msg and "\n" not in msg, msg
