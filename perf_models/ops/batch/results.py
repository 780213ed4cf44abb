"""ParsedTable, what parse_ops_table returns, and Results, the per-row fields as they are decided."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import AttentionConfig
from sdpa_analyzer.perf_models.ops.batch.cells import Rows
from sdpa_analyzer.perf_models.ops.batch.columns import (
    TABLE_FIELDS,
    GroupPlan,
    assemble,
    columns_of_configs,
    config_from_table,
    outside_int64,
)
from sdpa_analyzer.perf_models.ops.registry import ParsedOp
from sdpa_analyzer.perf_models.table import ConfigTable


@dataclass(eq=False)
class ParsedTable:
    """What `parse_op` says about every row of an ops table, as columns.

    `table` holds only the modeled rows, in the order of `np.flatnonzero(modeled)`. The per-row object
    columns hold exactly parse_op's values (enum members of Layout / AttentionType / Direction / Source,
    which compare equal to their strings). `per_row` marks the rows that were parsed one by one.
    """

    n: int
    modeled: NDArray[np.bool_]
    table: ConfigTable
    family: NDArray[np.object_]
    layout: NDArray[np.object_]
    attention_type: NDArray[np.object_]
    direction: NDArray[np.object_]
    source: NDArray[np.object_]
    reason: NDArray[np.object_]
    warnings: list[tuple[str, ...]]
    mask_label: NDArray[np.object_]
    dtype_q: NDArray[np.object_]
    per_row: NDArray[np.bool_]
    name: NDArray[np.object_]
    _configs: dict[int, AttentionConfig] = field(default_factory=dict, repr=False)
    _plan_of: NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32), repr=False)
    _plans: list[GroupPlan] = field(default_factory=list, repr=False)
    _masks: NDArray[np.object_] = field(default_factory=lambda: np.zeros(0, object), repr=False)
    _pos: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, np.intp), repr=False)

    def __len__(self) -> int:
        return self.n

    def config(self, i: int) -> AttentionConfig | None:
        """Row i's AttentionConfig (built on first use for grouped rows); None when the row is unmodeled."""
        i = int(i)
        if not -self.n <= i < self.n:
            raise IndexError(f"row {i} out of range for a table of {self.n} rows")
        i %= self.n
        if i in self._configs:
            return self._configs[i]
        if not self.modeled[i]:
            return None
        cfg = config_from_table(self.table, int(self._pos[i]), self._plans[self._plan_of[i]], self._masks[i])
        self._configs[i] = cfg
        return cfg

    def op(self, i: int) -> ParsedOp:
        """Row i as the ParsedOp parse_op returns for it."""
        return ParsedOp(
            name=self.name[i],
            config=self.config(i),
            reason=self.reason[i],
            family=self.family[i],
            layout=self.layout[i],
            attention_type=self.attention_type[i],
            direction=self.direction[i],
            warnings=self.warnings[i],
            source=self.source[i],
        )

    def with_rows(self, updates: Mapping[int, ParsedOp]) -> ParsedTable:
        """A copy with the rows in `updates` replaced by the given ParsedOps (e.g. a perf_params retry)."""
        res = Results.from_table(self)
        for i, op in updates.items():
            res.set_op(int(i), op)
        kept = np.flatnonzero(self.modeled & ~res.per_row)  # grouped rows left as they were
        res.pieces.append((kept, {f: getattr(self.table, f)[self._pos[kept]] for f in TABLE_FIELDS}))
        return res.finish()


class Results:
    """Per-row fields as they are decided, then assembled into a ParsedTable."""

    def __init__(self, n: int, names: list[str]) -> None:
        self.n = n
        self.names = np.empty(n, dtype=object)
        self.names[:] = names
        obj = ("family", "layout", "attention_type", "direction", "source", "reason", "mask_label", "dtype_q")
        self.cols: dict[str, NDArray[np.object_]] = {name: np.empty(n, dtype=object) for name in obj}  # None
        self.modeled = np.zeros(n, dtype=bool)
        self.per_row = np.zeros(n, dtype=bool)
        self.warnings = np.empty(n, dtype=object)  # tuples; a list when finished
        self.warnings.fill(())
        self.configs: dict[int, AttentionConfig] = {}
        self.plan_of = np.full(n, -1, dtype=np.int32)
        self.plans: list[GroupPlan] = []
        self.masks = np.empty(n, dtype=object)
        self.pieces: list[tuple[NDArray[np.intp], dict[str, NDArray[Any]]]] = []

    @classmethod
    def from_table(cls, t: ParsedTable) -> Results:
        res = cls(t.n, list(t.name))
        for name in res.cols:
            res.cols[name] = getattr(t, name).copy()
        res.modeled, res.per_row = t.modeled.copy(), t.per_row.copy()
        res.warnings = np.fromiter(t.warnings, dtype=object, count=t.n)
        res.configs = {i: c for i, c in t._configs.items() if t.per_row[i]}
        res.plan_of, res.plans, res.masks = t._plan_of.copy(), list(t._plans), t._masks.copy()
        return res

    def _fields(self, rows: NDArray[np.intp] | int, op: ParsedOp) -> None:
        cols = self.cols
        for name in ("family", "layout", "attention_type", "direction", "source", "reason"):
            cols[name][rows] = getattr(op, name)
        cfg = op.config
        cols["mask_label"][rows] = None if cfg is None else cfg.mask.label
        cols["dtype_q"][rows] = None if cfg is None else cfg.dtype_q
        self.modeled[rows] = cfg is not None

    def broadcast(self, rows: NDArray[np.intp], op: ParsedOp) -> None:
        """Rows with the outcome of one parse_op that is known to fail the same way for all of them."""
        assert op.config is None
        self._fields(rows, op)
        self.warnings[rows] = _filled(len(rows), op.warnings)

    def one_by_one(self, rows: NDArray[np.intp], source: Rows) -> None:
        for i in rows.tolist():
            self.set_op(i, source.parse(i))

    def set_op(self, i: int, op: ParsedOp) -> None:
        if op.config is not None:
            too_big = outside_int64(op.config)
            if too_big is not None:
                op = replace(op, config=None, reason=too_big, source=None)
        self._fields(i, op)
        self.names[i] = op.name
        self.warnings[i] = op.warnings
        self.per_row[i] = True
        self.plan_of[i] = -1
        self.masks[i] = None
        if op.config is None:
            self.configs.pop(i, None)
        else:
            self.configs[i] = op.config

    def grouped(
        self,
        rows: NDArray[np.intp],
        template: ParsedOp,
        warnings: tuple[str, ...] | list[tuple[str, ...]],
        labels: NDArray[np.object_],
        masks: NDArray[np.object_],
        gplan: GroupPlan,
        table_cols: dict[str, NDArray[Any]],
    ) -> None:
        assert template.config is not None
        self._fields(rows, template)
        self.cols["mask_label"][rows] = labels
        self.masks[rows] = masks
        self.plan_of[rows] = len(self.plans)
        self.plans.append(gplan)
        if isinstance(warnings, tuple):
            self.warnings[rows] = _filled(len(rows), warnings)
        else:
            self.warnings[rows] = np.fromiter(warnings, dtype=object, count=len(rows))
        self.pieces.append((rows, table_cols))

    def finish(self) -> ParsedTable:
        per_row_modeled = [i for i in sorted(self.configs) if self.per_row[i] and self.modeled[i]]
        pieces = list(self.pieces)
        if per_row_modeled:
            cols = columns_of_configs([self.configs[i] for i in per_row_modeled])
            pieces.append((np.asarray(per_row_modeled, dtype=np.intp), cols))
        table = assemble(pieces)
        pos = np.full(self.n, -1, dtype=np.intp)
        modeled_rows = np.flatnonzero(self.modeled)
        pos[modeled_rows] = np.arange(len(modeled_rows))
        configs = {i: c for i, c in self.configs.items() if self.per_row[i]}
        return ParsedTable(
            n=self.n,
            modeled=self.modeled,
            table=table,
            warnings=self.warnings.tolist(),
            per_row=self.per_row,
            name=self.names,
            _configs=configs,
            _plan_of=self.plan_of,
            _plans=self.plans,
            _masks=self.masks,
            _pos=pos,
            **self.cols,
        )


def _filled(m: int, value: Any) -> NDArray[np.object_]:
    """An object array of m references to `value` (a tuple stays one element, not a row of them)."""
    out = np.empty(m, dtype=object)
    out.fill(value)
    return out
