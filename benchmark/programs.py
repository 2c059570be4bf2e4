"""Training programs written once against a ``lib`` module (``torch`` or ``genesis``), as users write them.

Every model is a function ``build_*(lib, cfg, parity)`` that returns the model on the CPU in float32, and every
training loop a function ``*_program(lib, model, device, cfg, parity)`` that moves the model to the device, makes
the optimizer and returns a :class:`Program` whose ``step(batch)`` runs one training step on a batch of numpy arrays
and returns the loss tensor. ``parity=True`` builds the deterministic variant used to compare losses between the two
libraries: dropout probabilities are 0 and sampled actions are replaced by the batch's fixed actions.

The models follow well-known programs: nanoGPT's GPT-2 (and the same trainer with a Qwen-style block), torchvision's
ResNet-50, the fast-neural-style transformer net, and the word-language-model example's LSTM, GRU and Transformer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Program:
    """One training program on one device: ``step(batch)`` runs a step and returns the (detached) loss."""

    step: Callable[[tuple[np.ndarray, ...]], Any]
    notes: list[str] = field(default_factory=list)


def to_device(lib: Any, array: np.ndarray, device: str, notes: list[str], pin: bool = False) -> Any:
    """``lib.from_numpy(array)`` on ``device``, pinned first on cuda when ``pin`` (as nanoGPT's get_batch does).

    A library without ``Tensor.pin_memory`` still runs the program: the copy goes unpinned and a note says so.
    """
    tensor = lib.from_numpy(array)
    if not device.startswith("cuda"):
        return tensor.to(device)
    if pin:
        if hasattr(tensor, "pin_memory"):
            tensor = tensor.pin_memory()
        elif "pin_memory missing: batches copied unpinned" not in notes:
            notes.append("pin_memory missing: batches copied unpinned")
    return tensor.to(device, non_blocking=True)


def device_type(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


# --------------------------------------------------------------------------------------------------------------------
# GPT-2 (nanoGPT) and the same trainer with a Qwen-style block (RMSNorm, SwiGLU, RoPE, grouped-query attention)
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2's 50257 padded to a multiple of 64, as nanoGPT does
    n_layer: int = 12
    n_head: int = 12
    n_kv_head: int = 12
    n_embd: int = 768
    batch: int = 8
    qwen: bool = False  # RMSNorm, SwiGLU MLP, RoPE and grouped-query attention in place of GPT-2's block


def rope_tables(head_dim: int, length: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the rotary angles, each (length, head_dim) in float32 (rotate-half layout)."""
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(length, dtype=np.float64), inv_freq)  # (length, head_dim / 2)
    angles = np.concatenate([angles, angles], axis=-1)  # (length, head_dim)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def build_gpt(lib: Any, cfg: GPTConfig, parity: bool) -> Any:
    """nanoGPT's GPT (bias-free LayerNorm and Linear, exact GELU, tied embeddings) or its Qwen-style variant."""
    nn, F = lib.nn, lib.nn.functional

    def apply_rope(x: Any, cos: Any, sin: Any) -> Any:
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + lib.cat([-x2, x1], dim=-1) * sin

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head_dim = cfg.n_embd // cfg.n_head
            kv_dim = cfg.n_kv_head * self.head_dim
            self.c_attn = nn.Linear(cfg.n_embd, cfg.n_embd + 2 * kv_dim, bias=False)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
            if cfg.qwen:
                cos, sin = rope_tables(self.head_dim, cfg.block_size)
                self.register_buffer("cos", lib.from_numpy(cos), persistent=False)
                self.register_buffer("sin", lib.from_numpy(sin), persistent=False)

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            kv_dim = cfg.n_kv_head * self.head_dim
            q, k, v = self.c_attn(x).split([C, kv_dim, kv_dim], dim=2)
            q = q.view(B, T, cfg.n_head, self.head_dim).transpose(1, 2)  # (B, n_head, T, head_dim)
            k = k.view(B, T, cfg.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, head_dim)
            v = v.view(B, T, cfg.n_kv_head, self.head_dim).transpose(1, 2)  # (B, n_kv_head, T, head_dim)
            if cfg.qwen:
                cos, sin = self.cos[:T].to(q.dtype), self.sin[:T].to(q.dtype)
                q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=cfg.n_kv_head != cfg.n_head)
            y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)

        def forward(self, x: Any) -> Any:
            return self.c_proj(self.gelu(self.c_fc(x)))

    class SwiGLU(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            hidden = 8 * cfg.n_embd // 3  # the 4x MLP's parameter count with three matrices
            self.gate_proj = nn.Linear(cfg.n_embd, hidden, bias=False)
            self.up_proj = nn.Linear(cfg.n_embd, hidden, bias=False)
            self.c_proj = nn.Linear(hidden, cfg.n_embd, bias=False)

        def forward(self, x: Any) -> Any:
            return self.c_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def norm() -> Any:
        return nn.RMSNorm(cfg.n_embd, eps=1e-6) if cfg.qwen else nn.LayerNorm(cfg.n_embd, bias=False)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = norm()
            self.attn = CausalSelfAttention()
            self.ln_2 = norm()
            self.mlp = SwiGLU() if cfg.qwen else MLP()

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
            self.wpe = None if cfg.qwen else nn.Embedding(cfg.block_size, cfg.n_embd)
            self.h = nn.ModuleList([Block() for _ in range(cfg.n_layer)])
            self.ln_f = norm()
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

        def _init_weights(self, module: Any) -> None:
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx: Any, targets: Any) -> tuple[Any, Any]:
            B, T = idx.size()
            x = self.wte(idx)  # (B, T, n_embd)
            if self.wpe is not None:
                x = x + self.wpe(lib.arange(0, T, dtype=lib.long, device=idx.device))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))  # (B, T, vocab_size)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            return logits, loss

    return GPT()


def gpt_data(rng: np.random.Generator, cfg: GPTConfig) -> tuple[np.ndarray, ...]:
    """A window of random tokens and its shift by one, (batch, block_size) int64 each, as nanoGPT's get_batch."""
    tokens = rng.integers(0, cfg.vocab_size, (cfg.batch, cfg.block_size + 1), dtype=np.int64)
    return np.ascontiguousarray(tokens[:, :-1]), np.ascontiguousarray(tokens[:, 1:])


def gpt_program(lib: Any, model: Any, device: str, cfg: GPTConfig, parity: bool) -> Program:
    """nanoGPT's train loop: fused AdamW with weight-decay groups, bf16 autocast, clip 1.0, pinned batches."""
    model.to(device)
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = lib.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), fused=True)
    scaler = lib.amp.GradScaler(enabled=False)
    notes: list[str] = []

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        x, y = (to_device(lib, a, device, notes, pin=True) for a in batch)
        with lib.autocast(device_type=device_type(device), dtype=lib.bfloat16):
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return Program(step, notes)


def gpt_graph_program(lib: Any, model: Any, device: str, cfg: GPTConfig, parity: bool) -> Program:
    """``gpt_program`` with Genesis's whole step captured in one CUDA graph: static batch buffers, a capturable fused
    AdamW with a tensor learning rate, two eager warm-up steps, the capture at the third step and a replay per step
    after copying the batch in. torch, and Genesis on the CPU, run the eager program."""
    if lib.__name__ != "genesis" or not device.startswith("cuda"):
        program = gpt_program(lib, model, device, cfg, parity)
        if lib.__name__ == "genesis":
            program.notes.append("genesis ran eager on the CPU (no capture)")
        return program
    model.to(device)
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    lr = lib.tensor(6e-4, device=device)
    optimizer = lib.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=True, capturable=True)
    static_x = lib.zeros(cfg.batch, cfg.block_size, dtype=lib.int64, device=device)
    static_y = lib.zeros(cfg.batch, cfg.block_size, dtype=lib.int64, device=device)
    graph = lib.cuda.CUDAGraph()
    state: dict[str, Any] = {"steps": 0, "loss": None}
    notes = ["genesis: whole step captured in a CUDA graph"]

    def train_step() -> Any:
        with lib.autocast(device_type="cuda", dtype=lib.bfloat16):
            _, loss = model(static_x, static_y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.detach()

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        for static, a in zip((static_x, static_y), batch):
            static.copy_(to_device(lib, a, device, notes, pin=True), non_blocking=True)
        if state["steps"] < 2:  # warm-up: kernels compile, plans and the optimizer state are made
            loss = train_step()
            optimizer.zero_grad(set_to_none=True)
        else:
            if state["loss"] is None:
                with lib.cuda.graph(graph):
                    state["loss"] = train_step()
            graph.replay()
            loss = state["loss"]
        state["steps"] += 1
        return loss

    return Program(step, notes)


# --------------------------------------------------------------------------------------------------------------------
# ResNet-50 (torchvision's Bottleneck layout)
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class ResNetConfig:
    layers: tuple[int, ...] = (3, 4, 6, 3)
    width: int = 64
    image: int = 224
    classes: int = 1000
    batch: int = 64
    bf16: bool = False  # bf16 autocast with channels_last model and inputs


def build_resnet(lib: Any, cfg: ResNetConfig, parity: bool) -> Any:
    """ResNet-50: a 7x7 stem and max pool, four stages of Bottleneck blocks, average pool, Linear."""
    nn = lib.nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes: int, planes: int, stride: int) -> None:
            super().__init__()
            out = planes * self.expansion
            self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(out)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or inplanes != out:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(out))

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            w = cfg.width
            self.conv1 = nn.Conv2d(3, w, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(w)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            stages, inplanes = [], w
            for i, blocks in enumerate(cfg.layers):
                planes = w * 2**i
                stage = [Bottleneck(inplanes if b == 0 else planes * 4, planes, 2 if b == 0 and i > 0 else 1)
                         for b in range(blocks)]
                stages.append(nn.Sequential(*stage))
                inplanes = planes * 4
            self.layers = nn.Sequential(*stages)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(inplanes, cfg.classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.avgpool(self.layers(x))  # (B, C, 1, 1)
            return self.fc(x.flatten(1))  # (B, classes)

    return ResNet()


def image_data(rng: np.random.Generator, cfg: ResNetConfig) -> tuple[np.ndarray, ...]:
    """Random images (batch, 3, image, image) float32 and labels (batch,) int64."""
    images = rng.standard_normal((cfg.batch, 3, cfg.image, cfg.image), dtype=np.float32)
    return images, rng.integers(0, cfg.classes, cfg.batch, dtype=np.int64)


def resnet_program(lib: Any, model: Any, device: str, cfg: ResNetConfig, parity: bool) -> Program:
    """ImageNet-style step: SGD with Nesterov momentum and weight decay; bf16 autocast in channels_last if asked."""
    memory_format = lib.channels_last if cfg.bf16 else lib.contiguous_format
    model.to(device, memory_format=memory_format)
    # At lr 0.1 on random labels the loss diverges from the second step, and a divergent run amplifies rounding
    # differences (TF32 convolutions pick different cuDNN engines) ~25x per step: the parity pass uses lr 0.01.
    lr = 0.01 if parity else 0.1
    optimizer = lib.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    notes: list[str] = []

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        images = to_device(lib, batch[0], device, notes).contiguous(memory_format=memory_format)
        labels = to_device(lib, batch[1], device, notes)
        with lib.autocast(device_type=device_type(device), dtype=lib.bfloat16, enabled=cfg.bf16):
            loss = lib.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Program(step, notes)


# --------------------------------------------------------------------------------------------------------------------
# Fast neural style transformer net
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class StyleConfig:
    width: int = 32
    residual_blocks: int = 5
    image: int = 256
    batch: int = 4


def build_style(lib: Any, cfg: StyleConfig, parity: bool) -> Any:
    """The fast-neural-style TransformerNet: reflection-padded convs, InstanceNorm, residual blocks, nearest x2."""
    nn, F = lib.nn, lib.nn.functional

    class ConvLayer(nn.Module):
        def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, upsample: int | None = None) -> None:
            super().__init__()
            self.upsample = upsample
            self.pad = nn.ReflectionPad2d(kernel // 2)
            self.conv = nn.Conv2d(cin, cout, kernel, stride)

        def forward(self, x: Any) -> Any:
            if self.upsample:
                x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
            return self.conv(self.pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.conv1 = ConvLayer(channels, channels, 3)
            self.in1 = nn.InstanceNorm2d(channels, affine=True)
            self.conv2 = ConvLayer(channels, channels, 3)
            self.in2 = nn.InstanceNorm2d(channels, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            out = self.relu(self.in1(self.conv1(x)))
            return self.in2(self.conv2(out)) + x

    class TransformerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            w = cfg.width
            self.conv1, self.in1 = ConvLayer(3, w, 9), nn.InstanceNorm2d(w, affine=True)
            self.conv2, self.in2 = ConvLayer(w, 2 * w, 3, stride=2), nn.InstanceNorm2d(2 * w, affine=True)
            self.conv3, self.in3 = ConvLayer(2 * w, 4 * w, 3, stride=2), nn.InstanceNorm2d(4 * w, affine=True)
            self.res = nn.Sequential(*[ResidualBlock(4 * w) for _ in range(cfg.residual_blocks)])
            self.deconv1, self.in4 = ConvLayer(4 * w, 2 * w, 3, upsample=2), nn.InstanceNorm2d(2 * w, affine=True)
            self.deconv2, self.in5 = ConvLayer(2 * w, w, 3, upsample=2), nn.InstanceNorm2d(w, affine=True)
            self.deconv3 = ConvLayer(w, 3, 9)
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            y = self.relu(self.in1(self.conv1(x)))
            y = self.relu(self.in2(self.conv2(y)))  # (B, 2w, H/2, W/2)
            y = self.relu(self.in3(self.conv3(y)))  # (B, 4w, H/4, W/4)
            y = self.res(y)
            y = self.relu(self.in4(self.deconv1(y)))  # (B, 2w, H/2, W/2)
            y = self.relu(self.in5(self.deconv2(y)))  # (B, w, H, W)
            return self.deconv3(y)

    return TransformerNet()


def style_data(rng: np.random.Generator, cfg: StyleConfig) -> tuple[np.ndarray, ...]:
    """Content images and target images, (batch, 3, image, image) float32 each."""
    shape = (cfg.batch, 3, cfg.image, cfg.image)
    return rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)


def style_program(lib: Any, model: Any, device: str, cfg: StyleConfig, parity: bool) -> Program:
    """Adam on the mean squared error between the stylized images and the targets, fp32."""
    model.to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    notes: list[str] = []

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        content, target = (to_device(lib, a, device, notes) for a in batch)
        optimizer.zero_grad()
        loss = lib.nn.functional.mse_loss(model(content), target)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Program(step, notes)


# --------------------------------------------------------------------------------------------------------------------
# Word-level language models (PyTorch's word_language_model example): LSTM, GRU, TransformerEncoder
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class LMConfig:
    rnn_type: str = "LSTM"  # LSTM, GRU or Transformer
    ntoken: int = 33278  # WikiText-2's vocabulary
    ninp: int = 650
    nhid: int = 650
    nlayers: int = 2
    nhead: int = 2
    dropout: float = 0.5
    bptt: int = 35
    batch: int = 20


def build_lm(lib: Any, cfg: LMConfig, parity: bool) -> Any:
    """RNNModel (Embedding, LSTM/GRU, Linear decoder) or TransformerModel (PositionalEncoding, TransformerEncoder)."""
    nn, F = lib.nn, lib.nn.functional
    p = 0.0 if parity else cfg.dropout

    class RNNModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(p)
            self.encoder = nn.Embedding(cfg.ntoken, cfg.ninp)
            self.rnn = getattr(nn, cfg.rnn_type)(cfg.ninp, cfg.nhid, cfg.nlayers, dropout=p)
            self.decoder = nn.Linear(cfg.nhid, cfg.ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, input: Any, hidden: Any) -> tuple[Any, Any]:
            emb = self.drop(self.encoder(input))  # (bptt, batch, ninp)
            output, hidden = self.rnn(emb, hidden)  # (bptt, batch, nhid)
            decoded = self.decoder(self.drop(output)).view(-1, cfg.ntoken)  # (bptt * batch, ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz: int) -> Any:
            weight = next(self.parameters())
            if cfg.rnn_type == "LSTM":
                return (weight.new_zeros((cfg.nlayers, bsz, cfg.nhid)), weight.new_zeros((cfg.nlayers, bsz, cfg.nhid)))
            return weight.new_zeros((cfg.nlayers, bsz, cfg.nhid))

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model: int, max_len: int = 5000) -> None:
            super().__init__()
            self.dropout = nn.Dropout(p)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))  # (max_len, 1, d_model)

        def forward(self, x: Any) -> Any:
            return self.dropout(x + self.pe[: x.size(0), :])

    class TransformerModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pos_encoder = PositionalEncoding(cfg.ninp)
            layer = nn.TransformerEncoderLayer(cfg.ninp, cfg.nhead, cfg.nhid, p)
            self.transformer_encoder = nn.TransformerEncoder(layer, cfg.nlayers, enable_nested_tensor=False)
            self.input_emb = nn.Embedding(cfg.ntoken, cfg.ninp)
            self.decoder = nn.Linear(cfg.ninp, cfg.ntoken)
            nn.init.uniform_(self.input_emb.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, src: Any, mask: Any) -> Any:
            src = self.pos_encoder(self.input_emb(src) * math.sqrt(cfg.ninp))  # (bptt, batch, ninp)
            output = self.decoder(self.transformer_encoder(src, mask=mask))  # (bptt, batch, ntoken)
            return F.log_softmax(output, dim=-1)

    return TransformerModel() if cfg.rnn_type == "Transformer" else RNNModel()


def lm_data(rng: np.random.Generator, cfg: LMConfig) -> tuple[np.ndarray, ...]:
    """A (bptt, batch) int64 slice of a batchified token stream and its shift by one, flattened as targets."""
    stream = rng.integers(0, cfg.ntoken, (cfg.bptt + 1, cfg.batch), dtype=np.int64)
    return np.ascontiguousarray(stream[:-1]), np.ascontiguousarray(stream[1:].reshape(-1))


def lm_program(lib: Any, model: Any, device: str, cfg: LMConfig, parity: bool) -> Program:
    """The example's train(): truncated BPTT (hidden state carried and detached), NLL, clip 0.25, SGD lr 20."""
    model.to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=20.0)
    recurrent = cfg.rnn_type != "Transformer"
    hidden = model.init_hidden(cfg.batch) if recurrent else None
    mask = None if recurrent else lib.log(lib.tril(lib.ones(cfg.bptt, cfg.bptt))).to(device)  # 0 below, -inf above
    notes: list[str] = []

    def repackage(h: Any) -> Any:
        return tuple(repackage(v) for v in h) if isinstance(h, tuple) else h.detach()

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        nonlocal hidden
        data, targets = (to_device(lib, a, device, notes) for a in batch)
        optimizer.zero_grad()
        if recurrent:
            hidden = repackage(hidden)
            output, hidden = model(data, hidden)
        else:
            output = model(data, mask).view(-1, cfg.ntoken)  # (bptt * batch, ntoken)
        loss = lib.nn.functional.nll_loss(output, targets)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        return loss.detach()

    return Program(step, notes)


def compiled(program: Callable[..., Program]) -> Callable[..., Program]:
    """``program`` with Genesis's model wrapped by ``compile(model, mode="reduce-overhead")``: on CUDA its forward
    and backward replay CUDA graphs from the third step on (dropout included; the optimizer step, clipping and the
    batch copies stay eager). torch runs the eager program."""
    def run(lib: Any, model: Any, device: str, cfg: Any, parity: bool) -> Program:
        if lib.__name__ == "genesis":
            model = lib.compile(model, mode="reduce-overhead")
        result = program(lib, model, device, cfg, parity)
        if lib.__name__ == "genesis":
            result.notes.append("genesis: compile(mode='reduce-overhead')")
        return result
    return run


gpt_compiled_program = compiled(gpt_program)
lm_compiled_program = compiled(lm_program)


# --------------------------------------------------------------------------------------------------------------------
# Small CPU programs: a regression MLP and a REINFORCE policy-gradient step
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class MLPConfig:
    inputs: int = 8
    hidden: int = 64
    outputs: int = 1
    batch: int = 32


def build_mlp(lib: Any, cfg: MLPConfig, parity: bool) -> Any:
    """Three Linear layers with ReLU between: the regression net and the policy net."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(cfg.inputs, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(),
                         nn.Linear(cfg.hidden, cfg.outputs))


def regression_data(rng: np.random.Generator, cfg: MLPConfig) -> tuple[np.ndarray, ...]:
    x = rng.standard_normal((cfg.batch, cfg.inputs), dtype=np.float32)
    return x, np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)


def regression_program(lib: Any, model: Any, device: str, cfg: MLPConfig, parity: bool) -> Program:
    """Adam on the mean squared error."""
    model.to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    notes: list[str] = []

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        x, y = (to_device(lib, a, device, notes) for a in batch)
        loss = lib.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Program(step, notes)


def policy_data(rng: np.random.Generator, cfg: MLPConfig) -> tuple[np.ndarray, ...]:
    """Observations (batch, inputs), discounted returns (batch,) and fixed actions (batch, 1) for the parity pass."""
    obs = rng.standard_normal((cfg.batch, cfg.inputs), dtype=np.float32)
    returns = rng.standard_normal(cfg.batch, dtype=np.float32).cumsum()[::-1].copy()
    return obs, returns, rng.integers(0, cfg.outputs, (cfg.batch, 1), dtype=np.int64)


def policy_program(lib: Any, model: Any, device: str, cfg: MLPConfig, parity: bool) -> Program:
    """REINFORCE: sample actions from softmax(policy), loss = -mean(log pi(a|s) * normalized return), Adam."""
    model.to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-2)
    F = lib.nn.functional
    notes: list[str] = []

    def step(batch: tuple[np.ndarray, ...]) -> Any:
        obs, returns, fixed_actions = (to_device(lib, a, device, notes) for a in batch)
        with lib.no_grad():
            actions = lib.multinomial(F.softmax(model(obs), dim=-1), 1)  # (batch, 1)
        if parity:
            actions = fixed_actions  # the same actions in both libraries, so that the losses compare
        log_prob = F.log_softmax(model(obs), dim=-1).gather(1, actions).squeeze(1)  # (batch,)
        advantage = (returns - returns.mean()) / (returns.std() + 1e-8)
        loss = -(log_prob * advantage).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    return Program(step, notes)
