"""Which signature a row is read with.

`choose_signature` tries, in order:
1. the known signatures whose argument count fits and whose every known slot holds its role (`ops.roles.misfit`);
2. the same with more arguments than the signature was seen with: libraries append optional arguments release after
   release (aiter's `mha_batch_prefill` went from 20 to 30), and the known slots still say everything the model reads;
   the row is modeled from them and its warnings say so;
3. a signature read off the recorded roles (`ops.infer`): q/k/v from the shapes and dtypes, the scalars from their
   values. The row is modeled with a warning that names the layout and every slot it assumed.
Only when no q/k/v can be recognized does the row stay unmodeled, with every known signature's misfit in its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdpa_analyzer.perf_models.ops.infer import Inference, infer_signature
from sdpa_analyzer.perf_models.ops.roles import misfit
from sdpa_analyzer.perf_models.ops.row import Row
from sdpa_analyzer.perf_models.ops.specs import OpSpec, Signature
from sdpa_analyzer.perf_models.ops.types import RowError


@dataclass(frozen=True, slots=True)
class Choice:
    """The signature a row is read with, the warnings that choice adds, and (for a signature read off the roles)
    the inference, which the batch parser needs to check that every row of a group infers the same slots."""

    signature: Signature
    warnings: tuple[str, ...] = ()
    inference: Inference | None = None  # set when the signature was inferred
    # "known" (in its argument range), "appended" (more arguments than it was seen with) or "inferred"
    how: str = "known"


def choose_signature(spec: OpSpec, row: Row) -> Choice:
    """The signature `row` is read with (see the module docstring); RowError with every misfit when none fits."""
    misfits: list[str] = []
    for sig in spec.signatures:
        why = misfit(row, sig)
        if why is None:
            return Choice(sig)
        misfits.append(f"{sig.label}: {why}")
    n = row.n_args
    if n is not None:
        for sig in spec.signatures:
            if n > sig.n_args[1] and misfit(row, sig, appended=True) is None:
                extra = n - sig.n_args[1]
                return Choice(
                    sig,
                    how="appended",
                    warnings=(
                        f"{spec.name} with {n} arguments, {extra} more than the {sig.n_args[1]} of signature "
                        f"'{sig.label}': its known slots hold their roles (q={sig.q} k={sig.k} v={sig.v}"
                        f"{'' if sig.causal is None else f', {sig.causal_name}={sig.causal}'}); the appended "
                        "arguments are not read",
                    ),
                )
    inference = infer_signature(spec, row, misfits)
    if inference is None:
        raise RowError(f"{spec.name} arguments match no known signature ({'; '.join(misfits)})")
    return Choice(inference.signature, (inference.warning,), inference, "inferred")
