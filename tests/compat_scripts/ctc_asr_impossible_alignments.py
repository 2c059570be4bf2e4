"""A small CTC speech recognizer as ASR recipes write it: a strided Conv1d front end, a bidirectional LSTM and a
log_softmax head over (T, N, C); batches that hold an utterance too short for its transcript (an infinite CTC loss)
are caught by a non-finite gradient norm and skipped, as ESPnet-style loops do, until zero_infinity is turned on;
greedy decoding collapses repeats with unique_consecutive; bad lengths and targets are refused in torch's words."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

losses = []
ALPHABET = "_abcdefgh"  # index 0 is the blank
C = len(ALPHABET)


def fill(module, k):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float) * (k + 0.03 * i) + i).view_as(p) * 0.4)


class Recognizer(nn.Module):
    def __init__(self, n_mels=6, hidden=8):
        super().__init__()
        self.frontend = nn.Conv1d(n_mels, hidden, kernel_size=3, stride=2, padding=1)
        self.rnn = nn.LSTM(hidden, hidden, bidirectional=True)
        self.head = nn.Linear(2 * hidden, C)

    def output_lengths(self, lengths):
        return torch.div(lengths + 2 * 1 - 3, 2, rounding_mode="floor") + 1

    def forward(self, feats, lengths):
        x = F.relu(self.frontend(feats))  # (N, H, T')
        x = x.permute(2, 0, 1)  # (T', N, H)
        out_lens = self.output_lengths(lengths)
        packed = nn.utils.rnn.pack_padded_sequence(x, out_lens, enforce_sorted=False)
        y, _ = self.rnn(packed)
        y, _ = nn.utils.rnn.pad_packed_sequence(y, total_length=x.size(0))
        return self.head(y).log_softmax(-1), out_lens


def encode(text):
    return torch.tensor([ALPHABET.index(ch) for ch in text], dtype=torch.long)


N, T = 3, 16
feats = torch.cos(torch.arange(N * 6 * T, dtype=torch.float).reshape(N, 6, T) * 0.37)
lengths = torch.tensor([16, 12, 4])  # the third utterance gives 2 output frames for a 3-letter transcript
transcripts = ["bad", "cafe", "hhg"]
targets = nn.utils.rnn.pad_sequence([encode(t) for t in transcripts], batch_first=True)
target_lengths = torch.tensor([len(t) for t in transcripts])

model = Recognizer()
fill(model, 0.7)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
for zero_infinity in (False, True):
    ctc = nn.CTCLoss(blank=0, reduction="mean", zero_infinity=zero_infinity)
    for _ in range(3):
        log_probs, out_lens = model(feats, lengths)
        loss = ctc(log_probs, targets, out_lens, target_lengths)
        opt.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        finite = bool(torch.isfinite(grad_norm))
        losses.append(finite)
        losses.append(loss.item() if math.isfinite(loss.item()) else -1.0)
        if finite:
            opt.step()

# Per-utterance losses and the gradient of log_probs itself: NaN over the valid frames of the impossible utterance.
log_probs, out_lens = model(feats, lengths)
lp = log_probs.detach().requires_grad_()
per_utt = F.ctc_loss(lp, targets, out_lens, target_lengths, reduction="none")
losses.append([math.isinf(v) for v in per_utt.tolist()] == [False, False, True])
(per_utt[:2].sum()).backward()  # the impossible utterance gets no gradient from the sum, yet its frames are NaN
nan_frames = torch.isnan(lp.grad).all(-1)  # (T', N)
losses.append(nan_frames[:, 2].tolist() == [t < out_lens[2].item() for t in range(lp.size(0))])
losses.append(bool(torch.isfinite(lp.grad[:, :2]).all()))
losses.append(lp.grad[:, :2].abs().sum().item())

# Concatenated targets, another blank index, unbatched input, float64 and int32 lengths.
flat = torch.cat([encode(t) for t in transcripts[:2]])
lp2 = log_probs.detach()[:, :2]
losses.append(F.ctc_loss(lp2, flat, out_lens[:2], target_lengths[:2], reduction="sum").item())
losses.append(F.ctc_loss(lp2.double(), flat, out_lens[:2].int(), target_lengths[:2].int()).item())
losses.append(F.ctc_loss(lp2[:, 0], encode("bad"), (int(out_lens[0]),), (3,)).item())
rolled = log_probs.detach().roll(1, dims=-1)  # class C - 1 now plays the blank
losses.append(F.ctc_loss(rolled[:, :2], targets[:2] - 1, out_lens[:2], target_lengths[:2], blank=C - 1).item())

# Greedy decoding: best path, repeats collapsed, blanks dropped.
best = log_probs.argmax(-1).t()  # (N, T')
for b in range(N):
    path = best[b, : out_lens[b]]
    collapsed = torch.unique_consecutive(path)
    letters = collapsed[collapsed != 0].tolist()
    losses.append(int("".join(str(i) for i in letters) or "0"))  # the transcript's letter indices, as digits
    _, counts = torch.unique_consecutive(path, return_counts=True)
    losses.append(counts.sum().item())

# Argument errors, in torch's words.
checks = [
    (lambda: F.ctc_loss(log_probs, targets[:2], out_lens, target_lengths),
     ("Expected tensor to have size 3 at dimension 0, but got size 2 for argument #2 'targets' (while checking "
      "arguments for ctc_loss_allocate_outputs)")),
    (lambda: F.ctc_loss(log_probs, targets, torch.tensor([8, 6, 2, 2]), target_lengths),
     "input_lengths must be of size batch_size"),
    (lambda: F.ctc_loss(log_probs, targets, torch.tensor([9, 6, 2]), target_lengths),
     ("Expected input_lengths to have value at most 8, but got value 9 (while checking arguments for "
      "ctc_loss_allocate_outputs)")),
    (lambda: F.ctc_loss(log_probs, targets.unsqueeze(0), out_lens, target_lengths),
     ("Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets' (while checking arguments "
      "for ctc_loss_allocate_outputs)")),
    (lambda: F.ctc_loss(log_probs.half(), targets, out_lens, target_lengths),
     "\"ctc_loss_cpu\" not implemented for 'Half'"),
]
for fn, message in checks:
    try:
        fn()
        losses.append(False)
    except (RuntimeError, NotImplementedError) as e:
        losses.append(str(e) == message)
