"""Contiguous-copy overhead around attention calls.

A `.contiguous()` / `.clone()` / `copy_` on a tensor shaped like Q, K or V right before the call, or
like the output right after it, is layout work the attention op forced or could have avoided
(`attn_output.transpose(1, 2).contiguous()`, a BNHD<->BHND switch, ...). We count such copies

- inside the call (the op's own subtree), and
- around it: in the same `nn.Module` call (or, without Python frames, under the same parent op),
  between the previous and the next attention call of that scope,

and time them by their kernels. Shapes are compared as multisets of dims (a transposed view has the
same dims in another order).
"""

from __future__ import annotations

import numpy as np

from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.calls import Call, tensor_shapes
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import CPU, PY


def add_copy_overhead(ctx: TraceContext, calls: list[Call]) -> None:
    f = ctx.forest
    is_copy = ctx.name_mask(lambda n: n in N.COPY_OPS, CPU)
    if not calls or not is_copy.any():
        return
    top_copy = is_copy & (f.nearest(is_copy) < 0)
    copy_nodes = np.flatnonzero(top_copy)

    # kernel time and count per copy op
    gnode = ctx.gpu_node
    rows = np.flatnonzero(gnode >= 0)
    owner = f.nearest(top_copy)[gnode[rows]]
    direct = top_copy[gnode[rows]]
    owner = np.where(direct, gnode[rows], owner)
    keep = owner >= 0
    rows, owner = rows[keep], owner[keep]
    dur = np.maximum(ctx.ev.gpu["dur"][rows], 0.0)
    pos = np.searchsorted(copy_nodes, owner)
    k_time = np.bincount(pos, weights=dur, minlength=len(copy_nodes))
    k_count = np.bincount(pos, minlength=len(copy_nodes))

    # where each copy op sits: the call whose subtree holds it, and its module / parent scope
    tops = np.zeros(len(f), dtype=bool)
    top_call: dict[int, Call] = {}
    for c in calls:
        if c.top >= 0:
            tops[c.top] = True
            top_call[c.top] = c
    call_anc = f.nearest(tops)
    is_module = ctx.name_mask(lambda n: n.startswith("nn.Module: "), PY)
    module = f.nearest(is_module)

    def scope_of(node: int) -> int:
        m = int(module[node])
        return m if m >= 0 else int(f.parent[node])

    by_scope: dict[int, list[int]] = {}
    inside: dict[int, list[int]] = {}
    for i, n in enumerate(copy_nodes.tolist()):
        anc = int(call_anc[n])
        if anc >= 0:
            inside.setdefault(anc, []).append(i)
        else:
            by_scope.setdefault(scope_of(n), []).append(i)

    # calls per scope, in time order, to bound "before" and "after"
    call_scope: dict[int, list[Call]] = {}
    for c in calls:
        if c.top < 0:
            continue
        call_scope.setdefault(scope_of(c.top), []).append(c)
    for lst in call_scope.values():
        lst.sort(key=lambda c: c.ts)

    for scope_node, lst in call_scope.items():
        for j, c in enumerate(lst):
            qkv, out = _shape_keys(c)
            if not qkv:
                continue
            lo = lst[j - 1].ts + lst[j - 1].dur if j > 0 else -np.inf
            hi = lst[j + 1].ts if j + 1 < len(lst) else np.inf
            end = c.ts + c.dur
            total, count = 0.0, 0
            for i in inside.get(c.top, []):
                if _matches(ctx, int(copy_nodes[i]), qkv | out):
                    total += float(k_time[i])
                    count += int(k_count[i])
            if scope_node >= 0:
                for i in by_scope.get(scope_node, []):
                    n = int(copy_nodes[i])
                    t0, t1 = float(f.ts[n]), float(f.end[n])
                    before = lo <= t0 and t1 <= c.ts + 1e-3
                    after = end - 1e-3 <= t0 and t1 <= hi
                    if (before and _matches(ctx, n, qkv)) or (after and _matches(ctx, n, out)):
                        total += float(k_time[i])
                        count += int(k_count[i])
            c.copy_us, c.copy_count = total, count


def _shape_keys(c: Call) -> tuple[set[tuple[int, ...]], set[tuple[int, ...]]]:
    shapes = tensor_shapes(c.dims)
    if len(shapes) < 3:
        return set(), set()
    qkv = shapes[:3] if c.direction == "fwd" else shapes
    q, v = shapes[0], shapes[2]
    out = (*q[:-1], v[-1]) if c.direction == "fwd" else q
    return {tuple(sorted(s)) for s in qkv}, {tuple(sorted(out))}


def _matches(ctx: TraceContext, node: int, keys: set[tuple[int, ...]]) -> bool:
    dims = ctx.signature(node)[0]
    shapes = tensor_shapes(dims)
    return bool(shapes) and tuple(sorted(shapes[0])) in keys
