"""Parse a whole ops table at once: one plan per structural group of rows, the shapes read with numpy.

`parse_op` reads one row in 50-170 µs, and a category CSV can have 10^5 rows. Those rows overwhelmingly
share op name, `Input type`, `Concrete Inputs` and the number and rank of their `Input Dims` entries;
only the shape numbers differ. `parse_ops_table` therefore

1. groups rows by that structure. Concrete Inputs slots that carry per-call numbers (softmax_scale,
   max_seqlen, arguments no signature reads) are compared by kind only (empty / valid / invalid for the
   slot's parser), so aten flash rows whose max_q differs still share a group;
2. takes the group's plan from one row (`ops.build.plan_row`: signature, layout, dtypes, mask inputs,
   dropout) and reads the shape numbers of every row as one int64 matrix: from Python lists, or, for
   raw CSV strings, straight from the text's bytes (no Python object per number);
3. runs every check that depends on the numbers vectorized (negative or zero dims, q/k/v agreement,
   GQA divisibility, varlen totals, dout vs q, the seq_kv a window is clipped to), and checks the plan
   against parse_op on one row of the group.

A row whose numbers would change a decision, fail a check or add a warning that quotes them is parsed
by `parse_op` itself, as are rows of structures that need more than their arguments (vLLM, perf_params
fallbacks, unparseable cells). Every field therefore equals what `parse_op` gives for that row
(tests/perf_models/test_batch_parse.py checks this field by field on real and generated rows). One deliberate
difference: a config with a number beyond int64 (no real shape) cannot be a ConfigTable row, so that row
is reported unmodeled with a reason instead.

The steps, one module each: `cells` (the input columns, each cell read as Row.parse reads it), `groups`
(structural groups and per-call scalar kinds), `dims` (Input Dims numbers as int64 matrices), `shapes`
(the shape checks, vectorized), `columns` (configs <-> ConfigTable columns), `results` (ParsedTable and
the per-row fields as they are decided), `parse` (parse_ops_table, driving the others).
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.batch.parse import parse_ops_table
from sdpa_analyzer.perf_models.ops.batch.results import ParsedTable

__all__ = ["ParsedTable", "parse_ops_table"]
