"""``genesis.models``: Qwen2 / Qwen2.5 / Qwen3 causal language models that load Hugging Face checkpoints.

``AutoModelForCausalLM.from_pretrained(path)`` reads ``config.json`` and builds the matching class, as in
transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from genesis.models.qwen import (
    MODEL_TYPES,
    CausalLMOutput,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    QwenConfig,
    QwenForCausalLM,
    _read_config,
)

_CLASSES: dict[str, type[QwenForCausalLM]] = {"qwen2": Qwen2ForCausalLM, "qwen3": Qwen3ForCausalLM}
assert _CLASSES.keys() == MODEL_TYPES.keys()


class AutoModelForCausalLM:
    """Picks the model class from a directory's ``config.json`` (``model_type``), like transformers."""

    @staticmethod
    def from_pretrained(path: str | Path, dtype: Any = None, device: Any = None) -> QwenForCausalLM:
        """Load the model in ``path``; see :meth:`QwenForCausalLM.from_pretrained`.

        Raises:
            ValueError: ``config.json`` names an architecture Genesis does not implement.
        """
        config_path = Path(path) / "config.json"
        model_type = _read_config(config_path).get("model_type")
        if model_type not in _CLASSES:
            raise ValueError(f"{config_path}: unsupported architecture model_type={model_type!r} (supported: "
                             f"{', '.join(_CLASSES)})")
        return _CLASSES[model_type].from_pretrained(path, dtype=dtype, device=device)

    @staticmethod
    def from_config(config: QwenConfig, dtype: Any = None, device: Any = None) -> QwenForCausalLM:
        """A randomly initialized model for ``config``."""
        return _CLASSES[config.model_type](config, device=device, dtype=dtype)


__all__ = [
    "AutoModelForCausalLM", "CausalLMOutput", "Qwen2Config", "Qwen2ForCausalLM", "Qwen3Config", "Qwen3ForCausalLM",
    "QwenConfig", "QwenForCausalLM",
]
