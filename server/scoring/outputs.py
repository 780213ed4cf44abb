"""The files the scoring tools write into an analysis folder: `<cat>_roofline.csv` and `<cat>_metrics.json`.

Both are written atomically (a reader never sees half a file), and only while the analysis they were computed
from is still the folder's (server.folder.manifest.same_run: the folder's lock held shared, the run checked): a
tool that ran while analyze_trace re-analyzed the folder writes nothing and says so. Both record that run (the
metrics JSON's `sdpa_analyzer.run_id`, the CSV's `sdpa_analyzer_run_id` column) when the folder has one. The
roofline CSV is skipped when the record of files written from the cached table shows it is still exactly the one
written from this table.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.cache import FileStamp, file_stamp
from sdpa_analyzer.server.folder.manifest import RUN_ID_KEY, current_run_id, same_run
from sdpa_analyzer.server.folder.read import CategoryData
from sdpa_analyzer.server.scoring.fields import BY_NAME, csv_columns, on
from sdpa_analyzer.server.scoring.ranking import Metrics
from sdpa_analyzer.server.scoring.records import RooflineTable
from sdpa_analyzer.server.writers.atomic_stream import atomic_writer
from sdpa_analyzer.server.writers.csv_columns import frame_csv_chunks

# The columns are the catalogue's csv fields (server.scoring.fields): the call stacks and full kernel names are
# left out (the ops CSV and the metrics JSON hold them; they would make the table ~5x larger and slower to write);
# `row` joins it back to the ops CSV.


def roofline_csv_path(data: CategoryData) -> Path:
    return data.output_dir / layout.roofline_csv(data.category)


def metrics_path(data: CategoryData) -> Path:
    return data.output_dir / layout.metrics_json(data.category)


@dataclass(frozen=True)
class WrittenTable:
    """A roofline CSV as written: what the metrics JSON declares of it (server.folder.roofline_rows)."""

    path: Path
    rows: int
    bytes: int
    crc32: str

    def declaration(self) -> dict[str, Any]:
        """`sdpa_analyzer.roofline_rows`: where each operation's `roofline` object is written, once."""
        return {
            "file": self.path.name,
            "rows": self.rows,
            "bytes": self.bytes,
            "crc32": self.crc32,
            "fields": {o.name: o.kind for o in on("json")},
            "document_fields": list(DOCUMENT_FIELDS),
        }


# fields of every operation's `roofline` object that are one value per file: written once, in `sdpa_analyzer`
DOCUMENT_FIELDS = ("bytes_model",)


def write_roofline_table(
    data: CategoryData, table: RooflineTable, written: dict[Path, tuple[FileStamp, WrittenTable]] | None = None
) -> WrittenTable:
    """`<cat>_roofline.csv`: every record (one row per ops-CSV row; `row` is its index there), lists as their repr."""
    with roofline_table_written(data, table, written) as done:
        return done


@contextmanager
def roofline_table_written(
    data: CategoryData, table: RooflineTable, written: dict[Path, tuple[FileStamp, WrittenTable]] | None = None
) -> Iterator[WrittenTable]:
    """The roofline CSV written and synced while the block runs, put in place when it ends, or not at all when the
    block fails: rank_findings writes the metrics JSON that declares it inside, so neither changes without the
    other. Skipped when `written` (the table's record of files written from it) shows the file is still the one
    this table wrote."""
    path = roofline_csv_path(data)
    run_id = current_run_id(data.manifest)
    with same_run(data.output_dir, data.roots, run_id, written=path.name, tool="compute_roofline"):
        stamp, known = written.get(path, (None, None)) if written is not None else (None, None)
        if known is not None and stamp == file_stamp(path, data.roots):
            yield known
            return
        columns = csv_columns()
        frame = table.records[columns]
        # each float column with the catalogue's digits, the same np.round the metrics JSON's columns use
        digits = {c: BY_NAME[c].digits for c in columns if BY_NAME[c].kind == "float" and BY_NAME[c].digits is not None}
        if run_id is not None:
            frame = frame.assign(**{RUN_ID_KEY: run_id})

        def codes(col: str) -> tuple[np.ndarray, list[Any]]:
            if col == RUN_ID_KEY:
                return np.zeros(len(frame), dtype=np.int64), [run_id]
            return _csv_codes(table, col)

        crc = size = 0
        with atomic_writer(path, roots=data.roots) as fh:
            for piece in frame_csv_chunks(frame, codes=codes, digits=digits):
                fh.write(piece)
                crc = zlib.crc32(piece, crc)
                size += len(piece)
            fh.finish()
            done = WrittenTable(path, len(frame), size, f"{crc:08x}")
            yield done
        if written is not None:
            written[path] = (file_stamp(path, data.roots), done)


def write_metrics(data: CategoryData, metrics: Metrics) -> Path:
    path = metrics_path(data)
    run_id = current_run_id(data.manifest)
    with same_run(data.output_dir, data.roots, run_id, written=path.name, tool="rank_findings"):
        with atomic_writer(path, roots=data.roots) as fh:
            metrics.write(fh)
    return path


def _csv_codes(table: RooflineTable, column: str) -> tuple[np.ndarray, list[Any]]:
    """Distinct values of a text column for the CSV; list columns are written as their repr."""
    if BY_NAME[column].kind != "list":
        return table.column_codes(column)
    try:
        codes, uniques = table.column_codes(column)  # chains come with their codes (lists, by identity)
        return codes, [repr(u) for u in uniques]
    except TypeError:  # lists not known by code: by content
        pass
    lists = table.records[column].tolist()
    try:
        codes, uniques = factorize(list(map(tuple, lists)))
    except TypeError:  # an unhashable item: repr row by row
        codes, uniques = factorize(list(map(repr, lists)))
        return codes, uniques
    return codes, [repr(list(u)) for u in uniques]
