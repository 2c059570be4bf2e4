"""``genesis.onnx``: the part of torch.onnx that model code calls while it runs.

Detection heads and box utilities ask ``torch.onnx.is_in_onnx_export()`` to take an export-friendly path; Genesis
never exports a graph, so the answer is always False and the eager path runs. Exporting itself has no Genesis
equivalent: ``export`` and ``dynamo_export`` raise NotImplementedError.
"""

from __future__ import annotations

from typing import Any


def is_in_onnx_export() -> bool:
    """False: Genesis never runs code inside an ONNX export."""
    return False


def export(*args: Any, **kwargs: Any) -> Any:
    """Not available in Genesis (raises NotImplementedError): it records no graph to export."""
    raise NotImplementedError("onnx.export: Genesis records no graph to export to ONNX; export the model with "
                              "PyTorch from its state_dict()")


def dynamo_export(*args: Any, **kwargs: Any) -> Any:
    """Not available in Genesis (raises NotImplementedError): it records no graph to export."""
    raise NotImplementedError("onnx.dynamo_export: Genesis records no graph to export to ONNX; export the model "
                              "with PyTorch from its state_dict()")


__all__ = ["dynamo_export", "export", "is_in_onnx_export"]
