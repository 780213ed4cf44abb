"""Where one rank's analysis folder sits in a distributed job's output folder: `OUT/rank_<r>/`.

Its own module, importing nothing heavy: prompt rendering asks whether an output folder is a rank's
(prompts/render.py), and rendering a prompt must not import pandas.
"""

from __future__ import annotations

import re

_PREFIX = "rank_"
RANK_FOLDER = re.compile(rf"{_PREFIX}\d+")  # OUT/rank_<r>/: one rank's analysis folder


def rank_folder_name(rank: int) -> str:
    return f"{_PREFIX}{rank}"
