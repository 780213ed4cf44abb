"""Synthetic Kineto traces for the demo and the tests: attention calls whose contents are known exactly."""

from server.synthetic.writer import (
    DEFAULT_GPU,
    DTYPES,
    FLAVOURS,
    SyntheticAttentionCall,
    SyntheticInstance,
    SyntheticTrace,
    build_trace,
    build_trace_with_truth,
    c10_double,
    demo_calls,
    generate_large_trace,
    known_gpus,
    write_trace,
)

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
    "write_trace",
]
