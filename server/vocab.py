"""The closed vocabularies of the project, each written once: categories, display names, scopes, tiers,
bytes models, and the efficiency thresholds the verdicts and the ranking use.

Everything that names one of these (the trace writer, the folder reader, the tool schemas, the CLI, the
prompt renderer, the ranking) imports it from here, so a value can never drift between two lists. The
bytes models and the roofline thresholds are perf_models' own (perf_models.terms: the roofline computes with
them); this module gives them their schema types. It imports nothing heavy: every tool declaration reads it.
"""

from __future__ import annotations

from typing import Literal, get_args

from sdpa_analyzer.perf_models.terms import ANOMALY_FLAG_PCT, ANOMALY_PCT, BYTES_MODELS

# ---- attention categories ------------------------------------------------------------------------
# A category is one `<cat>_ops.csv` of the analysis folder (docs/formats.md). The display name is what an
# orchestrator shows, and the `op category` column value of the category's rows.
Category = Literal["sdpa_fwd", "sdpa_bwd", "inferenceattention"]
CATEGORIES: tuple[Category, ...] = get_args(Category)
SDPA_FWD, SDPA_BWD, INFERENCE = CATEGORIES
DISPLAY_NAMES: dict[str, str] = {
    SDPA_FWD: "SDPA_fwd",
    SDPA_BWD: "SDPA_bwd",
    INFERENCE: "InferenceAttention_fwd",
}
CATEGORY_HELP = "sdpa_fwd (forward), sdpa_bwd (backward) or inferenceattention (paged/serving attention)"

# ---- scopes and tiers ----------------------------------------------------------------------------
Scope = Literal["standalone", "comparative"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
STANDALONE, COMPARATIVE = SCOPES
SCOPE_HELP = (
    "standalone: one trace, efficiency = % of roofline; comparative: trace 1 vs trace 2 of a folder written "
    "with a second trace, efficiency = 100 × trace-2 time / trace-1 time"
)
Tier = Literal["compute", "system"]
TIERS: tuple[Tier, ...] = get_args(Tier)

# ---- bytes models --------------------------------------------------------------------------------
BytesModel = Literal[BYTES_MODELS]  # type: ignore[valid-type]  # perf_models' names, as a schema enum
BYTES_MODEL_HELP = (
    "HBM bytes of the roofline: compulsory (each tensor once; right when tile re-reads hit L2, as on NVIDIA) or "
    "tiled (tile re-reads counted; the better estimate on MI300-class parts)"
)

# ---- efficiency thresholds (docs/perf-model.md §4; docs/formats.md "Impact rules") ---------------------------
# Above ANOMALY_PCT a kernel beats its roofline: physically impossible, so an anomaly (wrong shapes, peaks or a
# measured time missing kernels), never "excellent". Above ANOMALY_FLAG_PCT the efficiency is not used for a
# gap projection: the orchestrator's impact rules then fall back to the heuristic estimate.
# ---- E2E baseline sanity (server.folder.read): not a verdict, a check that the metadata's window is a real one --
# A category's kernels run inside the profiled window, so their summed time is at most the window, times the
# streams (or GPUs, for a multi-device trace) that ran them at once; 64 is far above any overlap a real trace
# shows (this project's fixtures: at most 1.0), and far below what a wrong unit or a denormal gives (1e3 .. 1e300).
E2E_MIN_MS = 1e-6  # 1 ns: no profiled window is shorter
MAX_KERNEL_TO_E2E = 64.0

# The unit of every impact score: the share of the profiled window (the E2E baseline) the ops would give back.
IMPACT_UNIT = "% of E2E"
IMPACT_UNIT_HELP = (
    "impact_score is in % of the E2E baseline: 0.875 x impact_score_high, the share of the profiled window the ops "
    "would give back at 100 % of their roofline (low: 0.75 x high; heuristic rows: a share of their time)"
)

# ---- the roofline chart: the compute ceiling drawn when no modeled row says which spec it runs on -----------------
CHART_COMPUTE_SPEC = "matrix_bf16"

# ---- bounded work (perf_models' `work_bound`) ---------------------------------------------------------------------
# A row whose work is a bound has bounded rates: shown with "≥" (work counted at least), "≤" (at most), "~" (unknown)
BOUND_MARKS = {"lower": "≥", "upper": "≤", "unknown": "~"}
BOUND_LEGEND = "≥ / ≤ / ~: the row's work is a lower bound / an upper bound / unknown, and so are its rates (no band)"

# ---- the orchestrator's impact rules (docs/formats.md "Impact rules"): the same for every category ------------
MID_FACTOR, LOW_FACTOR = 0.875, 0.75  # of the whole gap (high): quantified mid and low
HEURISTIC_MID, HEURISTIC_LOW, HEURISTIC_HIGH = 0.30, 0.15, 0.45  # of the op's % of E2E, unmodeled ops
MIN_HIGH = 0.01  # % of E2E: a smaller estimate is dropped
MIN_GROUP_MID = 0.5  # % of E2E: a finding (group) below this is not reported
EFF_BUCKET_EDGES = (30.0, 60.0)  # standalone findings group by efficiency bucket: 0-30, 30-60, 60-100
HIGH_VARIANCE_COV = 0.1  # an op is high-variance above this kernel-time CoV ...
HIGH_VARIANCE_MIN_COUNT = 10  # ... with more calls than this ...
HIGH_VARIANCE_MIN_E2E_PCT = 5.0  # ... and at least this share of E2E

# ---- workload profile of paged attention (the seed's rule): share of context (prefill) tokens in the step ------
PREFILL_HEAVY_RATIO = 0.8  # ctx_ratio above: prefill-heavy
DECODE_HEAVY_RATIO = 0.2  # ctx_ratio below: decode-heavy


def profile_type(ctx_ratio: float) -> str:
    """prefill_heavy | decode_heavy | mixed for a step's context-token share."""
    return "prefill_heavy" if ctx_ratio > PREFILL_HEAVY_RATIO else (
        "decode_heavy" if ctx_ratio < DECODE_HEAVY_RATIO else "mixed")


# ---- the seed's patterns ---------------------------------------------------------------------------------------
KV_WRITE_SHARE_PCT = 10.0  # KV-cache writes above this share of the op (attention + write): tune the KV block size

# ---- quantities in words (findings rule 13): prose writes every quantity as a reference --------------------------
# The families: cardinals with a unit, a multiplier or a hedge after or before them ("forty percent", "three times",
# "about ten ms"); fractions ("a third of", "half the", "three quarters"); multiplicatives ("twice", "double the",
# "two-fold", "an order of magnitude"); and the word "percent" itself (a share typed in prose). Not quantities:
# "half precision", "double buffering", "one kernel" (a cardinal with no unit, multiplier or hedge).
_CARDINAL = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
             r"|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand"
             r"|million|billion|dozen)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine|hundred|thousand))?")
_HEDGE = r"(?:about|around|roughly|nearly|almost|approximately|some|over|under|close to|up to|more than|less than)"
_QUANTITY_UNIT = (r"(?:percent|per cent|percentage points?|%|ms|milliseconds?|microseconds?|µs|us|seconds?|times|x|×"
                  r"|TFLOPS|TB/s|GB/s|calls|kernels|launches)")
NUMBER_WORDS = (
    rf"\b{_CARDINAL}\s+{_QUANTITY_UNIT}(?![\w/])"
    rf"|\b{_HEDGE}\s+(?:a\s+|an\s+)?{_CARDINAL}\b"
    r"|\b(?:a|one|two|three)[- ](?:half|halves|third|thirds|quarter|quarters|fifth|fifths|tenth|tenths)\b"
    r"|\bhalf\s+(?:of\s+)?(?:the|its|their|this|all)\b(?!\s+precision)"
    r"|\b(?:twice|thrice|doubles?|doubled|doubling|triples?|tripled|quadruple[sd]?|halve[sd]?|halving)\b"
    r"(?![- ]buffer)"
    r"|\b(?:\w+|\d+)-fold\b|\borders?\s+of\s+magnitude\b"
    r"|\b(?:percent|per cent|percentage points?)\b"
    rf"|\b(?:a couple|a few|a handful|dozens|hundreds|thousands|tens|scores)\s+of\s+{_QUANTITY_UNIT}(?![\w/])"
    r"|\b(?:most|the bulk|the majority|nearly all|almost all|all but a sliver)\s+of\s+(?:the\s+|its\s+)?"
    r"(?:E2E|step|time|GPU time|runtime|window|profiled window)\b"
)
# The quantity a phrase asks for, right before a reference (`takes {{P1.op1.share}}` gives a share where a time
# belongs): phrase -> the reference kinds (server.findings.quantities) that can follow it
REFERENCE_CONTEXT: dict[str, tuple[str, ...]] = {
    r"\b(?:takes?|took|spends?|spent|costs?|lasts?|saves?|saved|runs? for|adds?|wastes?)\s+(?:about\s+)?$":
        ("ms", "us"),
    r"\bat\s+$": ("pct", "tflops", "tbs"),
}
# A unit typed right after a reference (the reference writes its own unit)
UNIT_AFTER_REFERENCE = r"ms|µs|us|%|percent|TFLOPS|TB/s|×|x\b"

# ---- claims of the findings prose (rule 15/17), one closed vocabulary per claim kind -----------------------------
# Each maps the value the tools computed to the phrasings that state it (regular expressions, matched case-blind on
# whole words). A phrase preceded by a negation states nothing. Written from the mechanism: what is limited (compute
# or bandwidth), by what word (bound, limited, constrained, starved, dominated), and the roof's names.
_ROOF_C = r"(?:compute|math|tensor(?:[- ]cores?)?|matrix(?:[- ]cores?)?|FLOPs?|arithmetic|MMA)"
_ROOF_M = r"(?:memory|bandwidth|HBM|DRAM|data[- ]movement|I/O|IO|load/store)"
_LIMITED = r"(?:bound|limited|constrained|capped|starved|throttled|bottlenecked)"
BOUND_PHRASES: dict[str, tuple[str, ...]] = {
    "compute": (rf"\b{_ROOF_C}(?:[- ]\w+)?[- ]{_LIMITED}\b", rf"\bsaturat\w* (?:the |its )?{_ROOF_C}\b",
                rf"\b{_LIMITED} (?:by|for|on) (?:the |its )?(?:\w+ )?{_ROOF_C}\b",
                rf"\b{_LIMITED} by (?:the |its )?{_ROOF_C}(?: roof| peak| throughput"
                r"| units| ceiling)?\b", rf"\bat (?:the |its )?{_ROOF_C} roof\b",
                rf"\bhits? (?:the )?{_ROOF_C} roof\b"),
    "memory": (rf"\b{_ROOF_M}(?:[- ]\w+)?[- ]{_LIMITED}\b", rf"\bsaturat\w* (?:the |its )?{_ROOF_M}\b",
                rf"\b{_LIMITED} (?:by|for|on) (?:the |its )?(?:\w+ )?{_ROOF_M}\b",
               rf"\b{_LIMITED} by (?:the |its )?(?:HBM |memory |DRAM )?{_ROOF_M}"
               r"(?: roof| peak| bandwidth| ceiling)?\b", rf"\bat (?:the |its )?{_ROOF_M} roof\b",
               rf"\bhits? (?:the )?{_ROOF_M} roof\b"),
    "balanced": (r"\bbalanced\b", r"\bneither roof\b", r"\bnear the ridge(?: point)?\b"),
}
# the workload profile of a serving step (classification.workload_profile.workload_type)
WORKLOAD_PHRASES: dict[str, tuple[str, ...]] = {
    "prefill_heavy": (r"\bprefill[- ](?:heavy|dominated|bound|intensive)\b", r"\bdominated by prefill\b",
                      r"\b(?:mostly|mainly|largely|predominantly) prefill\b"),
    "decode_heavy": (r"\bdecode[- ](?:heavy|dominated|bound|intensive)\b", r"\bdominated by decode\b",
                     r"\b(?:mostly|mainly|largely|predominantly) decod(?:e|ing)\b"),
}
# a comparison's direction: trace 2 against trace 1
DIRECTION_WORDS = {
    "slower": r"\b(?:slower|longer|regress(?:es|ed|ion)?|slow(?:s|ed)? down|more time|worse)\b",
    "faster": r"\b(?:faster|shorter|quicker|speeds? up|sped up|speed-?up|less time|better|improve[sd]?)\b",
}
# a positive bottleneck claim (an op within its band is not one)
BOTTLENECK_CLAIM = r"\b(?:the|a|main|key|real|primary) bottleneck\b|\bbottlenecked\b|\bbottlenecks? (?:the|this)\b"
# advice the seed gates on a fact of the P-item: advice kind -> (phrases, the fact that allows it)
GATED_ADVICE: dict[str, tuple[tuple[str, ...], str]] = {
    "kv_block_size": ((r"\b(?:KV[- ]?cache |KV |cache )?(?:block|page)[- ]sizes?\b",), "KV-cache writes over the rule"),
    "chunked_prefill": ((r"\bchunk(?:ed|ing)?[- ]prefill\b", r"\bsplit(?:ting)? (?:the |long )?prefills?\b"),
                        "a prefill-heavy step"),
    "decode_batching": ((r"\b(?:larger|bigger|more|increase the|raise the) (?:decode )?batch(?:es| size)?\b",
                         r"\bbatch(?:ing)? more (?:decode )?(?:requests|sequences|tokens)\b",
                         r"\bspeculative decoding\b"), "a decode-heavy step"),
    "migrate_fused": ((r"\b(?:migrate|switch|move|port|route|send)(?: \w+){0,3} (?:to|through|onto) (?:an? |the )?"
                       r"(?:optimized |single |one )?(?:flash|fused|memory-efficient)(?: attention)? "
                       r"(?:kernel|backend|path)",
                       r"\b(?:fold|merge|combine)(?: \w+){0,3} into (?:an? |one |a single )(?:single )?fused kernel\b"),
                      "an unfused implementation"),
    "kernel_tuning": ((r"\btil(?:e|es|ing)[- ]?(?:size|shape|config\w*)?s? (?:tuning|tune)\b",
                       r"\btune (?:the )?til(?:e|es|ing)",
                       r"\b(?:tile|occupancy|warp|wave)[- ](?:tuning|size tuning)\b"), "a fused kernel"),
}
# what a trace cannot show (the seed's CANNOT-infer rows and their kin): a claim of one is an error, a sentence that
# says it is not visible, or asks to measure it, is not
UNOBSERVABLE = (
    r"\b(?:L1|L2|L3|LLC|caches?|SMEM|LDS|shared memory)\b[^.;]{0,30}\b(?:hits?|miss(?:es)?|thrash\w*|reuse|locality"
    r"|pollut\w*|evict\w*)\b",
    r"\b(?:thrash\w*|evict\w*|pollut\w*)\b[^.;]{0,20}\b(?:L1|L2|L3|LLC|caches?)\b",
    r"\bspill\w*\b[^.;]{0,20}\bregisters?\b|\bregisters?\b[^.;]{0,20}\bspill\w*",
    r"\b(?:warps?|blocks?|CTAs?|wavefronts?)\b[^.;]{0,20}\b(?:resident|in flight|per SM|per CU)\b",
    r"\b(?:SMs?|CUs?|tensor (?:pipes?|cores?|units)|matrix (?:pipes?|cores?|units)|ALUs?)\b[^.;]{0,25}"
    r"\b(?:idle|underused|underutili[sz]ed|stall\w*|starved)\b",
    r"\b(?:not|un|non-|poorly )\s*coalesc\w*",
    r"\b(?:L1|L2|LLC|last[- ]level|shared[- ]memory|SMEM|LDS|texture|constant|KV|prefix|instruction)?[- ]?cache "
    r"(?:hit|miss)(?:es| rates?| ratios?)?\b",
    r"\bcache (?:thrashing|pollution|locality|reuse|efficiency)\b",
    r"\b(?:achieved|theoretical|low|high|poor|limited|reduced|insufficient|full|SM|warp)[- ]occupancy\b",
    r"\boccupancy (?:is|was|of|at|limits?|limited|bound|drops?|falls?|suffers)\b",
    r"\boccupancy[- ](?:limited|bound)\b",
    r"\bbank[- ]conflicts?\b",
    r"\bregister (?:spills?|spilling|pressure|usage|count)\b", r"\bspill(?:s|ed|ing)? to (?:local|global) memory\b",
    r"\bwarp (?:stalls?|divergence|scheduling|efficiency)\b", r"\bstall reasons?\b", r"\bpipeline stalls?\b",
    r"\b(?:uncoalesced|non-coalesced|poorly coalesced) (?:loads?|stores?|access(?:es)?|reads?|writes?)\b",
    r"\binstruction (?:mix|throughput|issue)\b", r"\bIPC\b", r"\bSM (?:utili[sz]ation|efficiency|activity)\b",
    r"\b(?:the |its |their )?tile sizes? (?:is|are|was|were|of)\b",
    r"\blaunch(?:ed)? with \w+ (?:threads|warps|blocks)\b",
    r"\bpower (?:throttling|cap(?:ping)?)\b", r"\bclock (?:throttling|speed|frequency)\b", r"\bthermal\b",
)
UNOBSERVABLE_OK = (r"\bnot (?:visible|recorded|shown|in (?:the )?trace|observable|measured|known)\b",
                   r"\b(?:does|do|can)(?: not|n't) (?:show|record|tell|see|reveal|capture|measure)\b",
                   r"\bcannot (?:show|tell|see|reveal|capture|measure|be seen)\b", r"\bunknown\b",
                   r"\b(?:profile|measure|check|inspect|examine|look at|confirm|verify)\b",
                   r"\bwould (?:show|tell|reveal)\b", r"\b(?:no|without a) (?:kernel )?profile\b")
# vendor, product, library and tool names and GPU generations, by family (a real name goes in backticks, copied
# from the data, or in a table cell): term -> the neutral wording
VENDOR_FAMILIES: dict[str, dict[str, str]] = {
    "GPU vendors": {r"NVIDIA|Nvidia|nVidia": "the GPU", r"AMD": "the GPU", r"Intel": "the GPU",
                    r"Radeon|GeForce|Quadro|Tesla|Instinct|Gaudi": "the GPU"},
    "GPU software stacks": {r"CUDA": "GPU", r"ROCm": "the GPU software stack", r"HIP": "GPU",
                            r"oneAPI|SYCL|OpenCL|Metal|Vulkan": "the GPU software stack"},
    "kernel and math libraries": {r"cuDNN": "the DNN library's attention backend", r"cuBLAS(?:Lt)?": "the GEMM library",
                                  r"hipBLAS(?:Lt)?|rocBLAS|hipblaslt": "the GEMM library",
                                  r"MIOpen|oneDNN|MKL(?:-DNN)?": "the DNN library",
                                  r"CUTLASS|CuTe(?:DSL)?|CK|Composable Kernels?|rocWMMA|ThunderKittens":
                                      "the kernel template library",
                                  r"NCCL|RCCL": "the collective library", r"aiter|AITER": "the attention library",
                                  r"xformers|xFormers|FlashInfer|Transformer Engine|TransformerEngine":
                                      "an attention library", r"TensorRT(?:-LLM)?": "an inference engine"},
    "vendor-prefixed libraries and tools": {r"cu[A-Z][A-Za-z]+|nv(?:cc|prof|rtc|-?smi|link|switch|tx)|nvidia-smi"
                                            r"|NVLink|NVSwitch": "a GPU library or tool",
                                            r"roc[A-Z][A-Za-z]+|rocm-smi|roc-?smi|hip(?:cc|ify|BLAS\w*|FFT|SPARSE|RAND"
                                            r"|CUB|SOLVER)|xGMI|Infinity Fabric": "a GPU library or tool"},
    "vendor hardware terms": {r"Tensor Cores?|Matrix Cores?|Tensor Memory Accelerator|TMA|WGMMA|wgmma|MFMA|mfma"
                              r"|PTX|SASS|AMDGCN": "the matrix units"},
    "serving engines and frameworks": {r"vLLM|SGLang|TGI|DeepSpeed|Megatron(?:-LM)?|Apex|TensorFlow|JAX":
                                       "the framework"},
    "kernel compilers": {r"Triton": "a kernel compiler", r"TVM|XLA|Inductor": "a compiler"},
    "profiling tools": {r"Nsight(?: Compute| Systems)?|ncu|nsys|CUPTI|Kineto": "a kernel profiler",
                        r"rocprof(?:v2|v3|iler)?|Omniperf|Omnitrace|roctracer|rocprofiler-compute":
                            "a kernel profiler"},
    "GPU generations": {r"Hopper|Ampere|Volta|Turing|Pascal|Ada(?: Lovelace)?|Lovelace|Blackwell|Rubin|Grace":
                            "the GPU", r"CDNA ?\d?|RDNA ?\d?|gfx\d{2,4}[a-z]?|sm_?\d{2,3}a?": "the GPU"},
}
CASE_SENSITIVE_VENDOR = frozenset({r"cu[A-Z][A-Za-z]+|nv(?:cc|prof|rtc|-?smi|link|switch|tx)|nvidia-smi"
                                   r"|NVLink|NVSwitch", r"roc[A-Z][A-Za-z]+|rocm-smi|roc-?smi|hip(?:cc|ify|BLAS\w*|FFT"
                                   r"|SPARSE|RAND|CUB|SOLVER)|xGMI|Infinity Fabric",
                                   r"Tensor Cores?|Matrix Cores?|Tensor Memory Accelerator|TMA|WGMMA|wgmma|MFMA|mfma"
                                   r"|PTX|SASS|AMDGCN",
                                   r"vLLM|SGLang|TGI|DeepSpeed|Megatron(?:-LM)?|Apex|TensorFlow|JAX",
                                   r"HIP", r"CUTLASS|CuTe(?:DSL)?|CK|Composable Kernels?|rocWMMA|ThunderKittens",
                                   r"AMD", r"Intel", r"TVM|XLA|Inductor", r"Ada(?: Lovelace)?|Lovelace",
                                   r"oneAPI|SYCL|OpenCL|Metal|Vulkan", r"Hopper|Ampere|Volta|Turing|Pascal|Ada(?: "
                                   r"Lovelace)?|Lovelace|Blackwell|Rubin|Grace"})
# a GPU's form factor, checked against the GPU the tools resolved
FORM_FACTORS = r"\b(?:PCIe|SXM\d?|NVL|OAM|HGX|DGX)\b"

# ---- many ranks ------------------------------------------------------------------------------------------------
STRAGGLER_RATIO = 1.1  # a rank over this × the median time of its category or shape is a straggler

__all__ = [
    "ANOMALY_FLAG_PCT",
    "ANOMALY_PCT",
    "BOTTLENECK_CLAIM",
    "BOUND_LEGEND",
    "BOUND_MARKS",
    "BOUND_PHRASES",
    "BYTES_MODELS",
    "BYTES_MODEL_HELP",
    "CASE_SENSITIVE_VENDOR",
    "CATEGORIES",
    "CATEGORY_HELP",
    "COMPARATIVE",
    "DECODE_HEAVY_RATIO",
    "DIRECTION_WORDS",
    "DISPLAY_NAMES",
    "E2E_MIN_MS",
    "EFF_BUCKET_EDGES",
    "FORM_FACTORS",
    "GATED_ADVICE",
    "HEURISTIC_HIGH",
    "HEURISTIC_LOW",
    "HEURISTIC_MID",
    "HIGH_VARIANCE_COV",
    "HIGH_VARIANCE_MIN_COUNT",
    "HIGH_VARIANCE_MIN_E2E_PCT",
    "IMPACT_UNIT",
    "IMPACT_UNIT_HELP",
    "INFERENCE",
    "KV_WRITE_SHARE_PCT",
    "LOW_FACTOR",
    "MAX_KERNEL_TO_E2E",
    "MID_FACTOR",
    "MIN_GROUP_MID",
    "MIN_HIGH",
    "NUMBER_WORDS",
    "PREFILL_HEAVY_RATIO",
    "REFERENCE_CONTEXT",
    "SCOPES",
    "SCOPE_HELP",
    "SDPA_BWD",
    "SDPA_FWD",
    "STANDALONE",
    "STRAGGLER_RATIO",
    "TIERS",
    "UNIT_AFTER_REFERENCE",
    "UNOBSERVABLE",
    "UNOBSERVABLE_OK",
    "VENDOR_FAMILIES",
    "WORKLOAD_PHRASES",
    "BytesModel",
    "Category",
    "Scope",
    "Tier",
    "profile_type",
]
