"""Unfused attention: matmul -> softmax -> matmul in one scope, with shapes of Q·Kᵀ and P·V.

The reference tool never reports these (docs/perf-model.md, pitfall 6), so "migrate to a fused kernel" had no
numbers. Here each such triple becomes an attention call of type `unfused`:

- scope: the nearest enclosing op, annotation or user-code Python frame (builtin and torch-internal
  frames are skipped, so `torch.matmul` and `F.softmax` called from one `forward` share its scope);
- only the outermost matmul-family op counts (`aten::matmul` over its `aten::bmm`), and nothing inside
  a fused attention call (the SDPA math backend is already a call of its own);
- shapes: first matmul A (…, M, D) @ B (…, D, N); softmax over (…, M, N); second matmul
  P (…, M, N) @ V (…, N, Dv). When the second matmul's shapes do not fit P·V the triple is kept with
  a warning and V is assumed shaped like K (the test02/test03 microbenchmarks record the first bmm's
  dims for both bmms).

The row is written in the layout of `aten::scaled_dot_product_attention` (q, k, v, attn_mask,
dropout_p, is_causal, scale, enable_gqa) so the registry models it like the fused op; its name is
`unfused_attention (<mm>+<softmax>+<mm>)`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np

from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.calls import Call, tensor_shapes
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import ANN, CPU, GPU_ANN, PY
from sdpa_analyzer.server.ingest.tree import nearest_marked_ancestor
from sdpa_analyzer.server.vocab import SDPA_BWD, SDPA_FWD

UNFUSED_PREFIX = "unfused_attention"


def is_user_frame(name: str) -> bool:
    if name.startswith("<") or name.startswith("nn.Module: "):
        return False
    return not (name.startswith("torch/") or "/torch/" in name or name.startswith("torch\\"))


def find_unfused_calls(ctx: TraceContext, fused: list[Call]) -> list[Call]:
    f = ctx.forest
    is_mm = ctx.name_mask(lambda n: n in N.MATMUL_OPS, CPU)
    is_sm = ctx.name_mask(lambda n: n in N.SOFTMAX_OPS, CPU)
    if not is_sm.any() or not is_mm.any():
        return []
    in_call = np.zeros(len(f), dtype=bool)
    tops = np.zeros(len(f), dtype=bool)
    for c in fused:
        if c.top >= 0:
            tops[c.top] = True
    if tops.any():
        in_call = tops | (f.nearest(tops) >= 0)
    top_mm = is_mm & (f.nearest(is_mm) < 0) & ~in_call
    top_sm = is_sm & (f.nearest(is_sm) < 0) & ~in_call
    if not top_sm.any() or not top_mm.any():
        return []
    is_py_user = ctx.name_mask(is_user_frame, PY)
    scope_mark = ((f.fam == CPU) & ~is_mm & ~is_sm) | (f.fam == ANN) | is_py_user
    scope = f.nearest(scope_mark)

    mm_nodes = np.flatnonzero(top_mm)
    by_scope: dict[int, tuple[list[float], list[int]]] = {}
    for n in mm_nodes[np.argsort(f.ts[mm_nodes], kind="stable")].tolist():
        s = int(scope[n])
        ts_list, node_list = by_scope.setdefault(s, ([], []))
        ts_list.append(float(f.ts[n]))
        node_list.append(n)

    calls: list[Call] = []
    used: set[int] = set()
    no_shapes = 0
    sm_nodes = np.flatnonzero(top_sm)
    for s_node in sm_nodes[np.argsort(f.ts[sm_nodes], kind="stable")].tolist():
        sc = int(scope[s_node])
        if sc not in by_scope:
            continue
        ts_list, node_list = by_scope[sc]
        i1 = bisect_right(ts_list, float(f.ts[s_node])) - 1
        i2 = bisect_left(ts_list, float(f.end[s_node]))
        if i1 < 0 or i2 >= len(node_list):
            continue
        m1, m2 = node_list[i1], node_list[i2]
        if m1 in used or m2 in used or f.end[m1] > f.ts[s_node] + 1e-3:
            continue
        shapes = _shapes(ctx, m1, s_node, m2)
        if shapes is None:
            no_shapes += 1
            continue
        used.update((m1, m2))
        calls.append(_make_call(ctx, m1, s_node, m2, sc, shapes))
    if no_shapes:
        ctx.warnings.append(
            f"{no_shapes} matmul -> softmax -> matmul pattern(s) without matching shapes were not reported as "
            "unfused attention (record with record_shapes=True to check them)"
        )
    _add_masks_and_dropout(ctx, calls, scope)
    return calls


def _operands(ctx: TraceContext, node: int) -> tuple[list[tuple[int, ...]], list[Any]] | None:
    dims, types, _, _ = ctx.signature(node)
    if dims is None:
        return None
    name = ctx.node_name(node)
    shapes = tensor_shapes(dims)
    tlist = [t for d, t in zip(dims, types or (), strict=False) if isinstance(d, tuple) and d]
    if name == "aten::baddbmm" and len(shapes) >= 3:
        return shapes[1:3], tlist[1:3]
    if name == "aten::einsum" and len(dims) > 1 and isinstance(dims[1], tuple):
        inner = [d for d in dims[1] if isinstance(d, tuple) and d]
        return inner[:2], [types[1] if types and len(types) > 1 else ""] * 2
    return shapes[:2], tlist[:2]


def _shapes(ctx: TraceContext, m1: int, sm: int, m2: int) -> dict[str, Any] | None:
    a = _operands(ctx, m1)
    b = _operands(ctx, m2)
    sdims = tensor_shapes(ctx.signature(sm)[0])
    if a is None or len(a[0]) < 2 or not sdims:
        return None
    (qa, kb), (tq, tk) = a[0][:2], (a[1] + ["", ""])[:2]
    if len(qa) < 3 or len(kb) < 3 or qa[-1] != kb[-2]:
        return None
    m, d, n = qa[-2], qa[-1], kb[-1]
    if tuple(sdims[0][-2:]) != (m, n):
        return None
    strict = False
    dv, tv = d, tk
    if b is not None and len(b[0]) >= 2:
        (pa, vb), tb = b[0][:2], (b[1] + ["", ""])[:2]
        if tuple(pa[-2:]) == (m, n) and vb[-2] == n:
            strict, dv, tv = True, vb[-1], tb[1]
    lead = qa[:-2]
    sm_lead = sdims[0][:-2]
    if len(lead) == 2:
        bsz, heads = lead
        kv_heads = kb[-3] if len(kb) == 4 else heads
    elif len(lead) == 1 and len(sm_lead) == 2 and sm_lead[0] * sm_lead[1] == lead[0]:
        bsz, heads = sm_lead
        kv_heads = heads
    else:
        bsz, heads = 1, int(np.prod(lead)) if lead else 1
        kv_heads = heads
    return {
        "q": (bsz, heads, m, d),
        "k": (bsz, kv_heads, n, d),
        "v": (bsz, kv_heads, n, dv),
        "types": (tq, tk, tv),
        "strict": strict,
        "m1": qa,
        "k1": kb,
        "m2": b[0][:2] if b is not None else None,
    }


def _make_call(ctx: TraceContext, m1: int, sm: int, m2: int, scope: int, sh: dict[str, Any]) -> Call:
    f = ctx.forest
    n1, ns, n2 = ctx.node_name(m1), ctx.node_name(sm), ctx.node_name(m2)
    thread = int(f.thread[m1])
    t0, t1 = float(f.ts[m1]), float(f.end[m2])
    tq, tk, tv = sh["types"]
    call = Call(
        category=SDPA_FWD,
        name=f"{UNFUSED_PREFIX} ({n1}+{ns}+{n2})",
        kind="unfused",
        node=m1,
        top=m1,
        thread=thread,
        ts=t0,
        dur=t1 - t0,
        ordinal=ctx.node_ordinal(m1),
        dims=(sh["q"], sh["k"], sh["v"], (), (), (), (), ()),
        types=(tq, tk, tv, "", "Scalar", "Scalar", "", "Scalar"),
        strides=None,
        concrete=("", "", "", "", "0.", "False", "", "False"),
        kernels=ctx.gpu_rows_launched_between(thread, t0, t1),
        direction="fwd",
        chain=[n1, ns, n2],
        attention_type="unfused",
        anchor=scope,
    )
    if not sh["strict"]:
        call.warnings.append(
            f"{call.name}: the second matmul's shapes {sh['m2']} do not fit P·V for scores "
            f"{sh['q'][2]}x{sh['k'][2]}; V assumed shaped like K {sh['k']}"
        )
    return call


def _add_masks_and_dropout(ctx: TraceContext, calls: list[Call], scope: np.ndarray) -> None:
    """Note a mask added between Q·Kᵀ and softmax, and read dropout_p between softmax and P·V."""
    if not calls:
        return
    f = ctx.forest
    scopes = {c.anchor for c in calls}
    is_mask = ctx.name_mask(lambda n: n in N.MASK_OPS, CPU)
    is_drop = ctx.name_mask(lambda n: n in N.DROPOUT_OPS, CPU)
    cand = np.flatnonzero((is_mask | is_drop) & np.isin(scope, list(scopes)))
    by_scope: dict[int, list[int]] = {}
    for n in cand[np.argsort(f.ts[cand], kind="stable")].tolist():
        by_scope.setdefault(int(scope[n]), []).append(n)
    for c in calls:
        m1, m2 = c.node, None
        for n in by_scope.get(c.anchor, []):
            if not (c.ts <= f.ts[n] <= c.ts + c.dur):
                continue
            name = ctx.node_name(n)
            if name in N.MASK_OPS and "mask" not in c.extra_params:
                c.extra_params["mask"] = name
                c.warnings.append(
                    f"{c.name}: a mask is applied ({name}) between Q·Kᵀ and softmax; its pattern is unknown, "
                    "modeled as no mask"
                )
            elif name in N.DROPOUT_OPS:
                concrete = ctx.signature(n)[3]
                p = concrete[1] if concrete and len(concrete) > 1 else ""
                train = concrete[2] if concrete and len(concrete) > 2 else "True"
                if p and str(train) != "False":
                    c.concrete = ("", "", "", "", str(p), "False", "", "False")
        del m1, m2


def find_unfused_backward(ctx: TraceContext, unfused: list[Call]) -> list[Call]:
    """The backward of each unfused forward: the autograd nodes whose Sequence number belongs to an op
    of that forward (BmmBackward0, SoftmaxBackward0, MulBackward0, ...), as one call per forward."""
    if not unfused:
        return []
    f, ev = ctx.forest, ctx.ev
    cpu_off = f.offset[CPU]
    seq = ev.cpu["seq"]
    with_seq = np.flatnonzero(seq >= 0)
    if len(with_seq) == 0:
        return []
    nodes = cpu_off + with_seq
    # forward ops (with a sequence number) inside each unfused call's span -> that call
    order = np.lexsort((f.ts[nodes], f.thread[nodes]))
    nodes = nodes[order]
    thr, ts = f.thread[nodes], f.ts[nodes]
    seq_to_call: dict[int, Call] = {}
    for c in unfused:
        lo = np.searchsorted(thr, c.thread, side="left")
        hi = np.searchsorted(thr, c.thread, side="right")
        a = lo + np.searchsorted(ts[lo:hi], c.ts, side="left")
        b = lo + np.searchsorted(ts[lo:hi], c.ts + c.dur, side="right")
        for n in nodes[a:b].tolist():
            if not N.is_autograd_node(ctx.node_name(n)):
                seq_to_call.setdefault(int(seq[n - cpu_off]), c)
    if not seq_to_call:
        return []
    is_node = ctx.name_mask(N.is_autograd_node, CPU)
    cand = np.flatnonzero(is_node)
    tops: list[int] = []
    owner: list[Call] = []
    for n in cand.tolist():
        fwd = seq_to_call.get(int(seq[n - cpu_off]))
        if fwd is None:
            continue
        p = int(f.parent[n])
        top = p if p >= 0 and ctx.node_name(p) == N.AUTOGRAD_EVAL_PREFIX + ctx.node_name(n) else n
        tops.append(top)
        owner.append(fwd)
    if not tops:
        return []
    mark = np.zeros(len(f), dtype=bool)
    mark[tops] = True
    nma = nearest_marked_ancestor(f.parent, mark)
    gnode = ctx.gpu_node
    rows = np.flatnonzero((gnode >= 0) & ~ctx.links.graph & (ev.gpu["kind"] != GPU_ANN))
    own = np.where(mark[gnode[rows]], gnode[rows], nma[gnode[rows]])
    keep = own >= 0
    rows, own = rows[keep], own[keep]
    by_top: dict[int, list[int]] = {}
    for r, o in zip(rows.tolist(), own.tolist(), strict=True):
        by_top.setdefault(o, []).append(r)
    grouped: dict[int, tuple[Call, list[int]]] = {}
    for top, fwd in zip(tops, owner, strict=True):
        grouped.setdefault(id(fwd), (fwd, []))[1].append(top)
    calls: list[Call] = []
    for fwd, node_tops in grouped.values():
        node_tops.sort(key=lambda n: float(f.ts[n]))
        first = node_tops[0]
        t0 = float(min(f.ts[n] for n in node_tops))
        t1 = float(max(f.end[n] for n in node_tops))
        kernels = np.asarray(sorted(r for n in node_tops for r in by_top.get(n, [])), dtype=np.int64)
        node_names = []
        for n in node_tops:
            nm = ctx.node_name(n).removeprefix(N.AUTOGRAD_EVAL_PREFIX)
            if nm not in node_names:
                node_names.append(nm)
        calls.append(
            Call(
                category=SDPA_BWD,
                name=f"{UNFUSED_PREFIX}_backward ({'+'.join(node_names)})",
                kind="unfused",
                node=first,
                top=first,
                thread=int(f.thread[first]),
                ts=t0,
                dur=t1 - t0,
                ordinal=ctx.node_ordinal(first),
                dims=fwd.dims,
                types=fwd.types,
                strides=None,
                concrete=fwd.concrete,
                kernels=kernels,
                direction="bwd",
                chain=node_names,
                forward=fwd,
                attention_type="unfused",
                anchor=int(f.parent[first]),
            )
        )
    return calls
