"""Synthetic Kineto traces for the demo and the tests: attention calls whose contents are known exactly."""

from sdpa_analyzer.server.synthetic.calls import DTYPES, FLAVOURS, SyntheticAttentionCall, demo_calls
from sdpa_analyzer.server.synthetic.gpus import DEFAULT_GPU, known_gpus
from sdpa_analyzer.server.synthetic.large import generate_large_trace
from sdpa_analyzer.server.synthetic.slots import c10_double
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance, SyntheticTrace
from sdpa_analyzer.server.synthetic.writer import build_trace, build_trace_with_truth, write_serving_run, write_trace

__all__ = [
    "DEFAULT_GPU",
    "DTYPES",
    "FLAVOURS",
    "SyntheticAttentionCall",
    "SyntheticInstance",
    "SyntheticTrace",
    "build_trace",
    "build_trace_with_truth",
    "c10_double",
    "demo_calls",
    "generate_large_trace",
    "known_gpus",
    "write_serving_run",
    "write_trace",
]
