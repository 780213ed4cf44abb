"""One-line messages: shortened between words, never inside one, and never inside a URL."""

from __future__ import annotations

from sdpa_analyzer.server.errors import MESSAGE_LIMIT, shorten_message

URL = "https://www.techpowerup.com/gpu-specs/h100-sxm5-80-gb.c3900"


def test_a_long_line_loses_whole_words_from_its_middle() -> None:
    cause = "row 3 of /data/run/category_data/sdpa_fwd_ops.csv: Input Dims is not a tuple"
    fix = "pass the shapes as a tuple of tuples, e.g. ((2, 8, 1024, 64), ...)"
    middle = " ".join(f"word{i}" for i in range(200))
    text = shorten_message(f"{cause} {middle} {fix}")
    assert len(text) <= MESSAGE_LIMIT and "\n" not in text
    assert text.startswith(cause) and text.endswith(fix)  # the cause and the fix survive
    words = set(f"{cause} {middle} {fix}".split()) | {"…"}
    assert all(w in words for w in text.split())  # every word shown is a whole word of the message
    assert text.count("…") == 1


def test_a_url_is_kept_whole() -> None:
    source = f"NVIDIA H100 datasheet dense figures, tabulated at {URL}: FP16/BF16 989.4, FP8 1978.9, INT8 1978.9"
    for limit in (80, 120, 240):
        text = shorten_message(source, limit)
        assert len(text) <= limit
        assert URL in text or "http" not in text  # whole, or left out with the words around it
    assert URL in shorten_message(source, 240)


def test_short_lines_and_single_long_words() -> None:
    assert shorten_message("  a   short\tline ") == "a short line"
    cell = "x" * 1000  # one word longer than the line: the only cut left is inside it
    text = shorten_message(f"bad cell {cell} in row 3", 60)
    assert len(text) <= 60 and text.startswith("bad cell") and text.endswith("in row 3")
