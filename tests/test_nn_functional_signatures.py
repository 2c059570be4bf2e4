"""nn.functional's parameter names follow torch.nn.functional's, so keyword calls (``F.relu(input=x)``) port as
they are."""

import inspect
import re

import pytest
import torch

import genesis.nn.functional as F
from tests.helpers import check, check_error, rand

# Public names whose leading parameters deliberately differ from torch's, with the reason. Empty today: every name
# shared with torch.nn.functional takes torch's positional parameters; Genesis adds keyword-only ``out=`` at most.
EXCEPTIONS: dict[str, str] = {}


def _positional(params: list[inspect.Parameter]) -> list[str]:
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _torch_positional(name: str) -> list[str] | None:
    """torch's positional parameter names: from the signature of a Python function, or from the signature line
    that opens a builtin's docstring. The ``boolean_dispatch`` wrappers (``max_pool2d``...) take ``*args, **kwargs``
    and dispatch to their ``_with_indices`` twin, whose parameters they share."""
    fn = getattr(torch.nn.functional, name)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        match = re.match(rf"\s*{name}\((.*?)\)", fn.__doc__ or "", re.S)
        if match is None:
            return None
        names = []
        for part in match.group(1).split(","):
            part = part.split("=")[0].strip()
            if part == "*":
                break
            if part:
                names.append(part)
        return names
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return _torch_positional(f"{name}_with_indices")
    return _positional(params)


SHARED = [name for name in F.__all__ if hasattr(torch.nn.functional, name)]


@pytest.mark.parametrize("name", SHARED)
def test_parameter_names_match_torch(name: str) -> None:
    expected = _torch_positional(name)
    if expected is None:
        pytest.skip(f"torch.nn.functional.{name} has no introspectable signature")
    if name in EXCEPTIONS:
        pytest.skip(EXCEPTIONS[name])
    got = _positional(list(inspect.signature(getattr(F, name)).parameters.values()))
    assert got[:1] == expected[:1], f"{name}: first parameter {got[:1]} != torch's {expected[:1]}"
    assert got == expected, f"{name}: positional parameters {got} != torch's {expected}"


def test_exceptions_are_shared_names() -> None:
    assert set(EXCEPTIONS) <= set(SHARED)


def test_keyword_input() -> None:
    x = rand(3, 4)
    check(lambda lib, t: lib.nn.functional.relu(input=t), x)
    check(lambda lib, t: lib.nn.functional.layer_norm(input=t, normalized_shape=(4,)), x)
    check(lambda lib, t: lib.nn.functional.softmax(input=t, dim=-1), x)
    check(lambda lib, t: lib.nn.functional.pad(input=t, pad=(1, 2)), x)


def test_multi_head_attention_forward_takes_torchs_arguments() -> None:
    e, heads = 8, 2
    q, k, v = rand(5, 3, e), rand(6, 3, e), rand(6, 3, e)
    w_in, b_in, w_out, b_out = rand(3 * e, e), rand(3 * e), rand(e, e), rand(e)

    def packed(lib, q, k, v, w_in, b_in, w_out, b_out):
        return lib.nn.functional.multi_head_attention_forward(q, k, v, e, heads, w_in, b_in, None, None, False, 0.0,
                                                              w_out, b_out, training=False)

    check(packed, q, k, v, w_in, b_in, w_out, b_out)
    wq, wk, wv = rand(e, e), rand(e, e), rand(e, e)

    def separate(lib, q, k, v, wq, wk, wv, w_out):
        return lib.nn.functional.multi_head_attention_forward(
            q, k, v, e, heads, None, None, None, None, False, 0.0, w_out, None, training=False,
            use_separate_proj_weight=True, q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv)

    check(separate, q, k, v, wq, wk, wv, w_out)

    def wrong_embed_dim(lib, q, k, v, w_in, w_out):
        return lib.nn.functional.multi_head_attention_forward(q, k, v, e + 1, heads, w_in, None, None, None, False,
                                                              0.0, w_out, None)

    check_error(AssertionError, wrong_embed_dim, q, k, v, w_in, w_out, match="was expecting embedding dimension")
