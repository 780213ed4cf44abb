"""The base of every tool result model: what a client checks, pydantic checks when the result is built.

JSON has no NaN or infinity (a NaN float reaches a client as null in a float field and fails its schema), so a
non-finite float is refused at construction (`allow_inf_nan=False`), and a field assigned after construction is
validated too (`validate_assignment=True`). A violation is a bug of ours: the tools report it as an internal
error, never as a result. The validator of a model is built when it is first used (`defer_build=True`), not when
its module is imported: the CLI's parser and `--help` import every tool's declaration and use none of them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ResultModel(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, validate_assignment=True, defer_build=True)


__all__ = ["ResultModel"]
