"""What an attention kernel's launch grid says of its call, family by family, declared as data.

A launch grid `(x, y, z)` means something only where the library's launch code fixes each axis: FlashAttention-2
launches `grid(num_m_block, b, h)`, a persistent FlashAttention-3 scheduler launches one CTA per SM and says nothing.
Each layout below names the kernels it covers (by the stable parts of their names: the kernel, its scheduler, its
mode), what each axis holds and the launch code it is read from. Where one name can be launched on more than one
layout (two releases, or a run-time choice), every layout is listed and only what all of them agree on is kept;
where the grid holds no shape, the layout says why, and the row repeats it.

Axis words: `q_tiles` / `kv_tiles` (ceil(seq / tile): a range of sequence lengths when the name gives the tile),
`q_tiles_max` (variable lengths: the longest sequence's tiles),
`q_tiles_packed` (query rows × heads per KV head, packed: no length), `batch`, `heads_q`, `heads_kv`,
`heads_x_splits`, `heads_x_batch`, `splits`, `work` (a planner's count: nothing), `1` (always 1: a layout whose axis
is not 1 is not the one that ran).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sdpa_analyzer.perf_models.kernel_shapes import kernel_shape_hints
from sdpa_analyzer.perf_models.kernels import (
    LIB_CK,
    LIB_CUDNN,
    LIB_FA2,
    LIB_FA3,
    LIB_FA4,
    LIB_FA_PYTORCH,
    LIB_FLASHINFER,
    LIB_MEM_EFF,
    LIB_SAGE,
    LIB_TRITON,
    LIB_TRTLLM,
    LIB_VLLM,
    KernelRole,
    classify_kernel,
)

__all__ = ["GRID_LAYOUTS", "LENGTHS_MAY_VARY", "GridLayout", "grid_shape_hints"]

# the hint a layout adds to a sequence-length range when the kernel's name does not say whether its call had variable
# lengths (the grid then counts the longest sequence's tiles: the range bounds the longest, not each sequence)
LENGTHS_MAY_VARY = "lengths_may_vary"

Axes = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class GridLayout:
    library: str
    when: tuple[re.Pattern[str], ...]  # the kernel names it covers: all must be found (first such layout wins)
    layouts: tuple[Axes, ...]  # what x, y, z hold; several: any of them may have run, only agreement is kept
    source: str  # the launch code it is read from
    says_nothing: str | None = None  # why the grid holds no shape (layouts empty)
    lengths_may_vary: str | None = None  # why a range read from it may be the longest sequence's (LENGTHS_MAY_VARY)

    def covers(self, name: str) -> bool:
        return all(p.search(name) for p in self.when)


def _g(library: str, when: str | tuple[str, ...], layouts: tuple[Axes, ...], source: str,
       says_nothing: str | None = None, lengths_may_vary: str | None = None) -> GridLayout:  # fmt: skip
    patterns = (when,) if isinstance(when, str) else when
    return GridLayout(library, tuple(re.compile(w) for w in patterns), layouts, source, says_nothing, lengths_may_vary)


# FA2 (mha_varlen_fwd / mha_varlen_bwd and PyTorch's _flash_attention_forward with cum_seq_q) and the CUTLASS
# mem-efficient kernels (seqstart_q) launch the same kernels for variable lengths, with the longest sequence's tiles
_FA2_VARLEN = ("FlashAttention-2's kernel names do not say whether the call had variable lengths (its varlen calls "
               "launch the same kernel over the longest sequence's tiles)")
# the backward's scheduler is SingleTileScheduler<> whether or not its mainloop's Varlen flag is set (the flag's place
# among the mainloop's template arguments moved between releases: not read here)
_FA3_BWD_VARLEN = ("FlashAttention-3's backward scheduler does not say whether the call had variable lengths (its "
                   "varlen calls tile the longest sequence's keys)")
_MEM_EFF_VARLEN = ("the CUTLASS mem-efficient kernel's name does not say whether the call had variable lengths (its "
                   "seqstart calls launch the same kernel over the longest sequence's queries)")


# FA2's split-KV kernel runs its `Split` variant when the second-last bool of its template is true (searched from the
# end, never with a backtracking `.*`: linear in the name)
_FA2_SPLIT = r",\s*true\s*,\s*(?:true|false)\s*>\s*(?:\([^()]*\))?\s*$"


_PERSISTENT = "a persistent scheduler launches one CTA per SM: the grid holds the GPU's SM count, no shape"

GRID_LAYOUTS: tuple[GridLayout, ...] = (
    # --- FlashAttention-2 (Dao-AILab csrc/flash_attn/src/flash_{fwd,bwd}_launch_template.h; PyTorch's vendored copy
    # aten/src/ATen/native/transformers/cuda/flash_attn/) ---
    # run_flash_splitkv_fwd: `dim3 grid(num_m_block, params.num_splits > 1 ? params.num_splits : params.b,
    # params.num_splits > 1 ? params.b * params.h : params.h)`; the kernel's `Split` template flag (the second-last
    # bool: <Kernel_traits, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K, [Is_softcap,] Split, Append_KV>)
    # says which
    _g(LIB_FA2, (r"flash_fwd_splitkv_kernel<", _FA2_SPLIT),
       (("q_tiles", "splits", "heads_x_batch"),), "flash_fwd_launch_template.h run_flash_splitkv_fwd (Split)",
       lengths_may_vary=_FA2_VARLEN),
    _g(LIB_FA2, r"flash_fwd_splitkv_kernel", (("q_tiles", "batch", "heads_q"),),
       "flash_fwd_launch_template.h run_flash_splitkv_fwd (num_splits 1)", lengths_may_vary=_FA2_VARLEN),
    # run_flash_fwd: `dim3 grid(num_m_block, params.b, params.h)` (a varlen call's num_m_block is its longest
    # sequence's, and FA2's names do not say varlen: the range then bounds the longest sequence)
    _g(LIB_FA2, r"flash_fwd_(?:hdim\d+\w*|kernel)\b", (("q_tiles", "batch", "heads_q"),),
       "flash_fwd_launch_template.h run_flash_fwd: grid(num_m_block, b, h)", lengths_may_vary=_FA2_VARLEN),
    # run_flash_bwd_seqk_parallel: `dim3 grid_n(num_n_block, params.b, params.h)`
    _g(LIB_FA2, r"flash_bwd_dq_dk_dv_loop_seqk_parallel", (("kv_tiles", "batch", "heads_q"),),
       "flash_bwd_launch_template.h run_flash_bwd_seqk_parallel: grid_n(num_n_block, b, h)",
       lengths_may_vary=_FA2_VARLEN),
    # --- FlashAttention-3 (hopper/): the scheduler is a template argument of the kernel, and its get_grid_shape
    # fixes the grid (hopper/tile_scheduler.hpp) ---
    # 2024 release: `SingleTileScheduler::get_grid_shape` returns {num_blocks_m, num_head, num_batch}; with variable
    # lengths (`SeqLenTraits<true>` = VarSeqLenTraits, hopper/seq_len.h) num_blocks_m is the longest sequence's
    _g(LIB_FA3, (r"SingleTileScheduler(?!<)\b(?!Bwd)", r"SeqLenTraits<\s*true\s*>|VarSeqLenTraits"),
       (("q_tiles_max", "heads_q", "batch"),),
       "hopper/tile_scheduler.hpp (2024) SingleTileScheduler, variable lengths: {max blocks_m, num_head, num_batch}"),
    _g(LIB_FA3, r"SingleTileScheduler(?!<)\b(?!Bwd)", (("q_tiles", "heads_q", "batch"),),
       "hopper/tile_scheduler.hpp (2024) SingleTileScheduler: {num_blocks_m, num_head, num_batch}"),
    # 2025: `SingleTileScheduler<Varlen, Split, PackGQA, kBlock>` returns {num_blocks, (Split ? num_splits : 1) *
    # num_head, num_batch}, num_head the KV heads under PackGQA (flash_fwd_launch_template.h: `!PackGQA ? params.h :
    # params.h_k`); the backward (FlashAttnBwd*) tiles the keys: {num_blocks_n, h, b} (flash_bwd_launch_template.h)
    _g(LIB_FA3, (r"FlashAttnBwd\w*<", r"SingleTileScheduler<"), (("kv_tiles", "heads_q", "batch"),),
       "hopper/flash_bwd_launch_template.h: SingleTileScheduler over num_blocks_n, h, b",
       lengths_may_vary=_FA3_BWD_VARLEN),
    _g(LIB_FA3, r"SingleTileScheduler<\s*false\s*,\s*true\s*,", (("q_tiles", "heads_x_splits", "batch"),),
       "hopper/tile_scheduler.hpp SingleTileScheduler<Varlen, Split=true, …>"),
    _g(LIB_FA3, r"SingleTileScheduler<\s*true\s*,\s*true\s*,", (("q_tiles_max", "heads_x_splits", "batch"),),
       "hopper/tile_scheduler.hpp SingleTileScheduler<Varlen=true, Split=true, …>: x from the longest sequence"),
    _g(LIB_FA3, r"SingleTileScheduler<\s*(?:true|false)\s*,\s*false\s*,\s*true\s*,",
       (("q_tiles_packed", "heads_kv", "batch"),), "hopper/tile_scheduler.hpp SingleTileScheduler<…, PackGQA=true>"),
    _g(LIB_FA3, r"SingleTileScheduler<\s*true\s*,", (("q_tiles_max", "heads_q", "batch"),),
       "hopper/tile_scheduler.hpp SingleTileScheduler<Varlen=true, …>: x from the longest sequence"),
    _g(LIB_FA3, r"SingleTileScheduler<", (("q_tiles", "heads_q", "batch"),),
       "hopper/tile_scheduler.hpp SingleTileScheduler<false, false, false, kBlock>"),
    _g(LIB_FA3, r"PersistentTileScheduler", (),
       "hopper/tile_scheduler.hpp {Static,Dynamic,VarlenDynamic}PersistentTileScheduler: get_grid_shape {num_sm}",
       _PERSISTENT),
    _g(LIB_FA3, r".", (), "hopper/tile_scheduler.hpp",
       "this FlashAttention-3 kernel's scheduler (a fork's, or none in the name) has no declared grid layout"),
    # --- xFormers / PyTorch mem-efficient (CUTLASS): kernel_forward.h AttentionKernel::Params::getBlocksGrid
    # `dim3(ceil_div(num_queries, kQueriesPerBlock), num_heads, num_batches)`; kernel_backward.h
    # AttentionBackwardKernel `dim3(num_splits_key, num_heads, num_batches)` ---
    _g(LIB_MEM_EFF, r"fmha_cutlassF|AttentionKernel<", (("q_tiles", "heads_q", "batch"),),
       "xformers/PyTorch kernel_forward.h getBlocksGrid: (ceil(num_queries / kQueriesPerBlock), num_heads, batch)",
       lengths_may_vary=_MEM_EFF_VARLEN),
    _g(LIB_MEM_EFF, r"fmha_cutlassB|AttentionBackwardKernel<", (("work", "heads_q", "batch"),),
       "xformers/PyTorch kernel_backward.h getBlocksGrid: (num_splits_key, num_heads, num_batches)"),
    # --- CK tile / aiter fmha forward: FmhaFwdKernel::GridSize (composable_kernel include/ck_tile/ops/fmha/kernel/
    # fmha_fwd_kernel.hpp): group mode `dim3(nhead, batch, ceil(seqlen_q / kM0) * ceil(hdim_v / kN1))`; batch mode
    # `dim3(ceil(seqlen_q / kM0) * ceil(hdim_v / kN1), nhead, batch)`, or the group-mode layout when the call pads
    # seqlen_k (a run-time choice in later releases): both listed ---
    _g(LIB_CK, r"fmha_fwd\w*_group_", (("heads_q", "batch", "work"),),
       "ck_tile fmha_fwd_kernel.hpp GridSize, kIsGroupMode: (nhead, batch, tiles)"),
    _g(LIB_CK, r"fmha_fwd\w*_batch_", (("work", "heads_q", "batch"), ("heads_q", "batch", "work")),
       "ck_tile fmha_fwd_kernel.hpp GridSize, batch mode: (tiles, nhead, batch), or (nhead, batch, tiles) when "
       "seqlen_k is padded"),
    # --- AOTriton (PyTorch's SDPA on ROCm, kernel `attn_fwd`): v2src/flash/attn_fwd.cc grid_calculator
    # `{cdiv(seqlen_q, BLOCK_M), Q.size(1), Q.size(0)}`; its first releases' template/attn_fwd_launcher.h
    # `{cdiv(seqlen_q, BLOCK_N), Q.size(0) * Q.size(1), 1}`; BLOCK_M is tuned per GPU, not in the name ---
    _g(LIB_TRITON, r"^attn_fwd(?:\.kd)?$", (("q_tiles", "heads_q", "batch"), ("q_tiles", "heads_x_batch", "1")),
       "ROCm/aotriton v2src/flash/attn_fwd.cc (q tiles, heads, batch); earlier attn_fwd_launcher.h (q tiles, "
       "batch × heads, 1)"),
    _g(LIB_TRITON, r".", (), "a generic Triton kernel name",
       "a generic Triton kernel name does not fix its launcher: the grid is whatever its caller chose"),
    # --- vLLM's Triton unified attention: `kernel_unified_attention_2d[(total_num_q_blocks, num_kv_heads)]` in
    # vllm/attention/ops/triton_unified_attention.py, `[(num_kv_heads, total_num_q_blocks)]` in other releases ---
    _g(LIB_VLLM, r"kernel_unified_attention_2d", (("work", "heads_kv", "1"), ("heads_kv", "work", "1")),
       "vllm triton_unified_attention.py: (q blocks, kv heads) or (kv heads, q blocks) by release"),
    # --- FlashInfer: prefill.cuh `dim3 nblks(padded_batch_size, 1, num_kv_heads)` (padded_batch_size is the
    # planner's work-item count, not the batch); decode.cuh `dim3 nblks(padded_batch_size, num_kv_heads)` ---
    _g(LIB_FLASHINFER, r"Prefill", (("work", "1", "heads_kv"),),
       "flashinfer prefill.cuh: nblks(padded_batch_size, 1, num_kv_heads)"),
    _g(LIB_FLASHINFER, r"Decode", (("work", "heads_kv", "1"),),
       "flashinfer decode.cuh: nblks(padded_batch_size, num_kv_heads)"),
    # --- families whose launch code fixes no shape in the grid, or is not public ---
    _g(LIB_CUDNN, r".", (), "cuDNN's SDPA engines (closed source)",
       "cuDNN chooses its SDPA engine's grid in closed code: no public layout"),
    # the b200 trace's `fmhaSm100aKernel_…PersistentContext` runs on a (4, 8, 1) grid of a 148-SM part: neither
    # the SM count nor a declared layout
    _g(LIB_TRTLLM, r".", (), "TRT-LLM / trtllm-gen fmha runners",
       "TRT-LLM's (trtllm-gen) attention kernels are launched by its own runner with no public grid layout"),
    _g(LIB_FA4, r".", (), "flash_attn/cute tile schedulers", "FlashAttention-4's tile schedulers are persistent "
       "on SM100: the grid holds the SM count"),
    # SageAttention 2's CUDA kernels (thu-ml/SageAttention csrc/qattn, SM80 / SM89 / SM90 launchers alike):
    # `dim3 grid(div_ceil(qo_len, CTA_Q), num_qo_heads, batch_size)`
    _g(LIB_SAGE, r"\bqk_int8?_sv_f(?:8|16)_attn\w*kernel<", (("q_tiles", "heads_q", "batch"),),
       "thu-ml/SageAttention csrc/qattn launchers: grid(div_ceil(qo_len, CTA_Q), num_qo_heads, batch_size)"),
    _g(LIB_SAGE, r".", (), "thu-ml/SageAttention; aiter fav3_sage",
       "this SageAttention kernel's launcher (Triton, or SageAttention3's FA3-derived scheduler) is not declared"),
)

_FIELD_OF_AXIS = {"batch": "batch", "heads_q": "heads_q", "heads_kv": "heads_kv", "splits": "splits",
                  "heads_x_splits": "heads_x_splits", "heads_x_batch": "heads_x_batch"}
_FA3_CLUSTER_M = re.compile(r"CollectiveMainloopFwd\w*<\s*\d+\s*,\s*cute::tuple<\s*cute::C<\s*(\d+)\s*>")


def _layout_of(name: str, library: str) -> GridLayout | None:
    library = LIB_FA2 if library == LIB_FA_PYTORCH else library
    for layout in GRID_LAYOUTS:
        if layout.library == library and layout.covers(name):
            return layout
    return None


def _read(axes: Axes, grid: tuple[int, int, int], name: str, library: str) -> dict[str, object] | None:
    """The fields one layout gives for this grid, None when the grid cannot be this layout (an axis that must be 1
    is not)."""
    out: dict[str, object] = {}
    named = kernel_shape_hints(name)  # the tiles its template gives (FA traits, CUTLASS shapes, FlashInfer, Sage)
    block_q, block_kv = named.get("block_q"), named.get("block_kv")
    for axis, value in zip(axes, grid, strict=True):
        if axis == "1":
            if value != 1:
                return None
        elif axis in _FIELD_OF_AXIS:
            out[_FIELD_OF_AXIS[axis]] = value
        elif axis == "q_tiles_packed":
            out[axis] = value
        elif axis in ("q_tiles", "kv_tiles", "q_tiles_max"):
            tile = block_kv if axis == "kv_tiles" else block_q
            if isinstance(tile, int) and tile > 0:
                # FA3 rounds the query tiles up to its cluster (`round_up(num_blocks_m, ClusterM)`)
                m = _FA3_CLUSTER_M.search(name) if library == LIB_FA3 else None
                cluster = int(m.group(1)) if m else 1
                key = {"q_tiles": "seq_q_range", "kv_tiles": "seq_kv_range", "q_tiles_max": "seq_q_max_range"}[axis]
                out[key] = (max(value - cluster, 0) * tile + 1, value * tile)
            else:
                out[axis] = value
    if "heads_q" in out and "batch" in out:
        out["heads_x_batch"] = int(out["heads_q"]) * int(out["batch"])  # type: ignore[call-overload]
    return out


def grid_shape_hints(name: str, grid: tuple[int, int, int]) -> dict[str, object]:
    """What an attention kernel's launch grid says of its call, by its family's declared layout (GRID_LAYOUTS):
    batch, query or KV heads, products of them with the split count, a sequence-length range (tiles × the tile the
    name gives). Where the grid holds no shape, {'grid_says': why}; {} for a kernel that is not attention."""
    role, _atype, library = classify_kernel(name)
    if role is not KernelRole.ATTENTION or library is None:
        return {}
    layout = _layout_of(name, library)
    if layout is None:
        return {"grid_says": f"no launch-grid layout is declared for this {library} kernel"}
    if not layout.layouts:
        return {"grid_says": layout.says_nothing or "the grid holds no shape"}
    readings = [r for r in (_read(axes, grid, name, library) for axes in layout.layouts) if r is not None]
    if not readings:
        return {"grid_says": f"the grid {list(grid)} fits none of {library}'s declared layouts"}
    agreed = {k: v for k, v in readings[0].items() if all(r.get(k) == v for r in readings[1:])}
    if not agreed:
        return {"grid_says": f"{library} launches this kernel on {len(layout.layouts)} layouts ({layout.source}); "
                             f"the grid {list(grid)} does not say which"}
    if layout.lengths_may_vary and any(k in agreed for k in ("seq_q_range", "seq_kv_range")):
        agreed[LENGTHS_MAY_VARY] = layout.lengths_may_vary
    return agreed
