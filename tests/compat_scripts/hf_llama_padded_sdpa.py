"""HF Llama on a left-padded batch: RMSNorm, rotate_half rotary, GQA repeat_kv, SDPA with a finfo.min 4-D mask
(padded queries attend no key), a DynamicCache class, gradient checkpointing (use_reentrant=False), _init_weights,
AdamW steps in float32 and under CPU bfloat16 autocast (which casts the mask too), cached greedy generation."""
import torch
import torch.nn as nn
import torch.utils.checkpoint

losses = []
V, H, NH, NKV, L, I = 48, 32, 4, 2, 2, 56
HD = H // NH


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        device_type = x.device.type if isinstance(x.device.type, str) and x.device.type != "mps" else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos()
            sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class DynamicCache:
    def __init__(self) -> None:
        self.key_cache: list[torch.Tensor] = []
        self.value_cache: list[torch.Tensor] = []
        self._seen_tokens = 0

    def __len__(self):
        return len(self.key_cache)

    def __getitem__(self, layer_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def update(self, key_states, value_states, layer_idx):
        if layer_idx == 0:
            self._seen_tokens += key_states.shape[-2]
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx: int | None = 0) -> int:
        if len(self.key_cache) <= layer_idx:
            return 0
        return self.key_cache[layer_idx].shape[-2]

    def reorder_cache(self, beam_idx: torch.LongTensor):
        for layer_idx in range(len(self.key_cache)):
            device = self.key_cache[layer_idx].device
            self.key_cache[layer_idx] = self.key_cache[layer_idx].index_select(0, beam_idx.to(device))
            self.value_cache[layer_idx] = self.value_cache[layer_idx].index_select(0, beam_idx.to(device))

    def to_legacy_cache(self):
        return tuple((self.key_cache[i], self.value_cache[i]) for i in range(len(self)))

    @classmethod
    def from_legacy_cache(cls, past_key_values=None):
        cache = cls()
        if past_key_values is not None:
            for layer_idx in range(len(past_key_values)):
                key_states, value_states = past_key_values[layer_idx]
                cache.update(key_states, value_states, layer_idx)
        return cache


class LlamaAttention(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_key_value_groups = NH // NKV
        self.scaling = HD ** -0.5
        self.q_proj = nn.Linear(H, NH * HD, bias=False)
        self.k_proj = nn.Linear(H, NKV * HD, bias=False)
        self.v_proj = nn.Linear(H, NKV * HD, bias=False)
        self.o_proj = nn.Linear(NH * HD, H, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask, past_key_value=None, sdpa=True):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, HD)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        if sdpa:
            causal_mask = attention_mask
            if attention_mask is not None:
                causal_mask = causal_mask[:, :, :, : key_states.shape[-2]]
            is_causal = causal_mask is None and query_states.shape[2] > 1
            attn_output = torch.nn.functional.scaled_dot_product_attention(
                query_states.contiguous(), key_states.contiguous(), value_states.contiguous(),
                attn_mask=causal_mask, dropout_p=0.0, is_causal=is_causal, scale=self.scaling)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.self_attn = LlamaAttention(layer_idx)
        self.mlp = LlamaMLP()
        self.input_layernorm = LlamaRMSNorm(H)
        self.post_attention_layernorm = LlamaRMSNorm(H)

    def forward(self, hidden_states, attention_mask, position_embeddings, past_key_value=None, sdpa=True):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask, past_key_value, sdpa)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H, padding_idx=0)
        self.layers = nn.ModuleList([LlamaDecoderLayer(i) for i in range(L)])
        self.norm = LlamaRMSNorm(H)
        self.rotary_emb = LlamaRotaryEmbedding(HD)
        self.lm_head = nn.Linear(H, V, bias=False)
        self.gradient_checkpointing = False
        self.apply(self._init_weights)

    def _init_weights(self, module):
        std = 0.02
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, LlamaRMSNorm):
            module.weight.data.fill_(1.0)

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def _update_causal_mask(self, attention_mask, input_tensor, past_seen_tokens):
        dtype, device = input_tensor.dtype, input_tensor.device
        sequence_length = input_tensor.shape[1]
        target_length = past_seen_tokens + sequence_length
        min_dtype = torch.finfo(dtype).min
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + sequence_length, device=device)
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype, device=device)
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length, device=device) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :].to(
                causal_mask.device)
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask,
                                                                                                  min_dtype)
        return causal_mask

    def forward(self, input_ids, attention_mask=None, labels=None, past_key_values=None, use_cache=False,
                sdpa=True, position_ids=None):
        inputs_embeds = self.embed_tokens(input_ids)
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(past_seen, past_seen + inputs_embeds.shape[1]).unsqueeze(0)
        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, past_seen)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = torch.utils.checkpoint.checkpoint(
                    decoder_layer.__call__, hidden_states, causal_mask, position_embeddings, None, sdpa,
                    use_reentrant=False)
            else:
                hidden_states = decoder_layer(hidden_states, causal_mask, position_embeddings, past_key_values, sdpa)
        hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states).float()
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = nn.functional.cross_entropy(shift_logits.view(-1, V), shift_labels.view(-1), ignore_index=-100,
                                               reduction="mean")
        return loss, logits, past_key_values


model = LlamaForCausalLM()
losses.append(model.embed_tokens.weight[0].abs().sum().item())
losses.append(repr(model.norm) == "LlamaRMSNorm((32,), eps=1e-06)")
with torch.no_grad():
    for i, (n, p) in enumerate(model.named_parameters()):
        if "norm" in n:
            p.copy_(1.0 + 0.05 * torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.3 + i))
        else:
            p.copy_(0.12 * torch.sin(torch.arange(p.numel(), dtype=torch.float32).view_as(p) * 1.173 + 0.5 * i))

ids = (torch.arange(24).view(2, 12) * 5 + 3) % V
attn = torch.ones_like(ids)
attn[1, :3] = 0  # left padding
ids = ids.masked_fill(attn == 0, 0)
labels = ids.masked_fill(attn == 0, -100)

cm = model._update_causal_mask(attn, model.embed_tokens(ids), 0)
losses.extend(cm.shape)
losses.append(int((cm == torch.finfo(torch.float32).min).sum().item()))
losses.append(cm.dtype == torch.float32)

# eager vs sdpa agree
model.eval()
with torch.no_grad():
    _, le, _ = model(ids, attention_mask=attn, sdpa=False)
    _, ls, _ = model(ids, attention_mask=attn, sdpa=True)
    _, lc, _ = model(ids[:1], sdpa=True)  # is_causal path
losses.append((le - ls).abs().max().item() < 1e-5)
losses.append((lc[0] - le[0]).abs().max().item() < 1e-5)
losses.append(le[1, -1, :4].sum().item())

# checkpointing gives same grads
model.train()
loss_a, _, _ = model(ids, attention_mask=attn, labels=labels)
loss_a.backward()
ga = [p.grad.clone() for p in model.parameters()]
model.zero_grad()
model.gradient_checkpointing_enable()
loss_b, _, _ = model(ids, attention_mask=attn, labels=labels)
loss_b.backward()
gb = [p.grad.clone() for p in model.parameters()]
losses.append(loss_a.item())
losses.append(loss_b.item())
losses.append(max((a - b).abs().max().item() for a, b in zip(ga, gb)) < 1e-6)
losses.append(sum(g.norm().item() ** 2 for g in gb))

opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
for _step in range(3):
    opt.zero_grad()
    loss, _, _ = model(ids, attention_mask=attn, labels=labels)
    loss.backward()
    opt.step()
    losses.append(loss.item())

# bfloat16 autocast: the float32 mask is cast with q, k, v (finfo(float32).min becomes -inf)
for _step in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, logits, _ = model(ids, attention_mask=attn, labels=labels)
    loss.backward()
    opt.step()
    losses.append(round(loss.item(), 4))
    losses.append(logits.dtype == torch.float32)

# cached generation vs full
model.eval()
with torch.no_grad():
    cache = DynamicCache()
    prompt = ids[:1, :6]
    _, logits, cache = model(prompt, use_cache=True, past_key_values=cache)
    out = prompt
    for _t in range(5):
        nxt = logits[:, -1:].argmax(-1)
        out = torch.cat([out, nxt], dim=-1)
        _, logits, cache = model(nxt, past_key_values=cache, use_cache=True)
    _, full, _ = model(out)
losses.extend(out[0].tolist())
losses.append(cache.get_seq_length())
losses.append(cache._seen_tokens)
losses.append((full[:, -1] - logits[:, -1]).abs().max().item() < 1e-4)
legacy = cache.to_legacy_cache()
losses.extend(n for k, _ in legacy for n in k.shape)
again = DynamicCache.from_legacy_cache(legacy)
again.reorder_cache(torch.tensor([0, 0, 0]))
losses.extend(again[1][0].shape)
