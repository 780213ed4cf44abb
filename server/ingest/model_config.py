"""A Hugging Face `config.json` as model hints: what a serving trace does not carry about the model's attention.

vLLM's and SGLang's attention ops receive the step's packed tokens and a paged cache, not the layer's window: which
layers are sliding-window ones (gpt-oss alternates sliding-window 128 and full layers, Gemma 3 has five sliding
layers per full one) and how wide the window is live in the model's config. So does an MLA model's latent cache
(DeepSeek: kv_lora_rank 512 + qk_rope_head_dim 64 = one latent KV head of 576, V its first 512 columns).

Only the fields below are read, strictly (a wrong type is an error naming the field); every other key of the file is
ignored. A multimodal config's `text_config` is read when the top level has no `num_hidden_layers`.

Which layer is which, as transformers' own configs decide it:
* `layer_types` (transformers ≥ 4.53 writes it for every model whose layers differ): one entry per layer,
  `full_attention` | `sliding_attention` | `chunked_attention`; `linear_attention` / `mamba` layers run no attention
  op and hold no attention call;
* else a `sliding_window` (not switched off by `use_sliding_window: false`, as Qwen2/Qwen3 configs do): layers from
  `max_window_layers` on are sliding when it is given (Qwen2), every `sliding_window_pattern`-th layer is full and
  the others sliding when that is given (Gemma 3's older configs), else every layer is sliding (Mistral);
* else every layer is full attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sdpa_analyzer.server.errors import InputError, shorten_message
from sdpa_analyzer.server.roots import CONFIG_FILE_MAX_BYTES, UNRESTRICTED, DataRoots

MAX_LAYERS = 4096

FULL, SLIDING, CHUNKED = "full_attention", "sliding_attention", "chunked_attention"
ATTENTION_LAYER_TYPES = (FULL, SLIDING, CHUNKED)
NO_ATTENTION_LAYER_TYPES = ("linear_attention", "mamba")  # layers without an attention op (hybrid models)
LayerType = Literal["full_attention", "sliding_attention", "chunked_attention", "linear_attention", "mamba"]

PositiveInt = Annotated[int, Field(gt=0, le=1 << 40)]


class HfModelConfig(BaseModel):
    """The attention fields of a Hugging Face config.json (strict: a JSON string where a number belongs, a bool where
    an integer belongs, are errors)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, protected_namespaces=())

    model_type: Annotated[str, Field(max_length=100)] | None = None
    num_hidden_layers: Annotated[int, Field(gt=0, le=MAX_LAYERS)]
    num_attention_heads: PositiveInt | None = None
    num_key_value_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    sliding_window: PositiveInt | None = None
    use_sliding_window: bool | None = None
    max_window_layers: Annotated[int, Field(ge=0, le=MAX_LAYERS)] | None = None
    sliding_window_pattern: Annotated[int, Field(gt=0, le=MAX_LAYERS)] | None = None
    layer_types: Annotated[list[LayerType], Field(max_length=MAX_LAYERS)] | None = None
    # MLA (DeepSeek-V2/V3): the latent cache's ranks
    kv_lora_rank: PositiveInt | None = None
    qk_rope_head_dim: PositiveInt | None = None
    qk_nope_head_dim: PositiveInt | None = None
    v_head_dim: PositiveInt | None = None


@dataclass(frozen=True)
class ModelHints:
    """What the analysis takes from a model's config: the attention layers' kinds in order (layers without an
    attention op left out), the sliding window, the KV heads and head dim, the MLA latent dims."""

    source: str
    config: HfModelConfig
    attention_layers: tuple[str, ...]  # FULL | SLIDING | CHUNKED, one per layer that runs an attention op
    sliding_window: int | None
    mla_latent: tuple[int, int] | None  # (d_qk, d_v) of the latent cache: kv_lora_rank + qk_rope_head_dim, rank

    @property
    def kinds(self) -> tuple[str, ...]:
        """The distinct kinds of the attention layers, in the order they first appear."""
        return tuple(dict.fromkeys(self.attention_layers))

    def metadata(self) -> dict[str, Any]:
        """The config used, as the analysis metadata records it (docs/formats.md: model_config)."""
        c = self.config
        counts = {k: self.attention_layers.count(k) for k in self.kinds}
        return {
            "source": self.source,
            "model_type": c.model_type,
            "num_hidden_layers": c.num_hidden_layers,
            "attention_layers": len(self.attention_layers),
            "layer_kinds": counts,
            "layer_pattern": _pattern(self.attention_layers),
            "sliding_window": self.sliding_window,
            "num_attention_heads": c.num_attention_heads,
            "num_key_value_heads": c.num_key_value_heads,
            "head_dim": c.head_dim,
            "mla_latent": list(self.mla_latent) if self.mla_latent else None,
        }


def _pattern(layers: tuple[str, ...], limit: int = 12) -> str:
    short = {FULL: "F", SLIDING: "S", CHUNKED: "C"}
    text = "".join(short[k] for k in layers[:limit])
    return text + ("…" if len(layers) > limit else "")


def load_model_config(path: Path, roots: DataRoots = UNRESTRICTED) -> ModelHints:
    """Read and check a config.json through the sandbox; InputError (one line naming the file and the field) on a
    bad file, nothing else read."""
    data = roots.read_bytes(path, what="model_config", limit=CONFIG_FILE_MAX_BYTES, fix="pass the model's config.json")
    try:
        raw: Any = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not readable JSON ({exc.msg}) — pass the model's Hugging Face config.json") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a JSON {type(raw).__name__}, not an object — pass the model's config.json")
    body, prefix = raw, ""
    if "num_hidden_layers" not in raw and isinstance(raw.get("text_config"), dict):
        body, prefix = {**raw["text_config"], "model_type": raw.get("model_type")}, "text_config."
    try:
        config = HfModelConfig.model_validate(body)
    except ValidationError as exc:
        raise InputError(_field_error(path, exc, prefix)) from None
    return hints_from(config, str(path), prefix)


def _field_error(path: Path, exc: ValidationError, prefix: str) -> str:
    err = exc.errors()[0]
    loc = prefix + ".".join(str(p) for p in err["loc"])
    if err["type"] == "missing":
        what = "is missing"
    else:
        what = f"is {err.get('input')!r:.40}: {err['msg'].lower()}"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return shorten_message(f"{path}: field '{loc}' {what}{more} — fix it in the model's config.json")


def hints_from(config: HfModelConfig, source: str, prefix: str = "") -> ModelHints:
    """The attention layers' kinds, window and MLA dims of a checked config (InputError where its fields disagree)."""
    n = config.num_hidden_layers
    window = config.sliding_window if config.use_sliding_window is not False else None
    if config.layer_types is not None:
        if len(config.layer_types) != n:
            raise InputError(f"{source}: field '{prefix}layer_types' has {len(config.layer_types)} entries for "
                             f"num_hidden_layers {n} — give one per layer")
        layers = [t for t in config.layer_types if t in ATTENTION_LAYER_TYPES]
    elif window is not None:
        if config.max_window_layers is not None:
            layers = [SLIDING if i >= config.max_window_layers else FULL for i in range(n)]
        elif config.sliding_window_pattern is not None:
            layers = [SLIDING if (i + 1) % config.sliding_window_pattern else FULL for i in range(n)]
        else:
            layers = [SLIDING] * n
    else:
        layers = [FULL] * n
    if SLIDING in layers and window is None:
        raise InputError(f"{source}: field '{prefix}sliding_window' is missing (or switched off by use_sliding_window) "
                         "while layer_types names sliding_attention layers — give the window in tokens")
    if not layers:
        raise InputError(f"{source}: field '{prefix}layer_types' names no attention layer — pass the config of a "
                         "model with attention layers")
    ranks = (config.kv_lora_rank, config.qk_rope_head_dim)
    if (ranks[0] is None) != (ranks[1] is None):
        missing = "qk_rope_head_dim" if ranks[1] is None else "kv_lora_rank"
        raise InputError(f"{source}: field '{prefix}{missing}' is missing: an MLA config gives kv_lora_rank and "
                         "qk_rope_head_dim together")
    mla = (ranks[0] + ranks[1], ranks[0]) if ranks[0] is not None and ranks[1] is not None else None
    return ModelHints(source, config, tuple(layers), window if SLIDING in layers else None, mla)
