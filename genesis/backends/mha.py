"""``torch.backends.mha``: the switch of the inference fast path of ``nn.TransformerEncoder`` and
``nn.MultiheadAttention``.

Genesis computes the same values on every path; the one visible effect of torch's fast path, the zeros an encoder
stack leaves at padded positions, follows this switch (``set_fastpath_enabled(False)`` keeps the padded positions'
values, as torch does then).
"""

_fastpath_enabled = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path of ``TransformerEncoder`` and ``MultiheadAttention`` is enabled (the default)."""
    return _fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the fast path of ``TransformerEncoder`` and ``MultiheadAttention``."""
    global _fastpath_enabled
    _fastpath_enabled = bool(value)
