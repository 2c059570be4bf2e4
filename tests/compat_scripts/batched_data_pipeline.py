"""A data pipeline as trainers write it around a small sequence classifier: a dataset that reads whole batches
(`__getitems__`, also through `Subset` and `StackDataset`), a bucketing batch sampler with a padding collate, a
collate function built on `torch.utils.data._utils.collate.collate` with a custom type map (strings joined, a
record class of its own), the loader's iterator object (`len`, `_num_yielded`), a `Subset` subclass that must
override `__getitems__` too, and a few training steps on the padded batches."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler, StackDataset, Subset
from torch.utils.data._utils.collate import collate, default_collate_fn_map

losses = []
LENGTHS = [5, 2, 7, 3, 3, 6, 1, 4, 2, 5]


class Span:
    """A record the default collate does not know: it is batched by the custom map below."""

    def __init__(self, start, end):
        self.start, self.end = start, end


class TokenStore(Dataset):
    """Token sequences read a batch at a time, as a memory-mapped store would serve them."""

    def __init__(self):
        self.reads = []

    def __len__(self):
        return len(LENGTHS)

    def __getitem__(self, i):
        raise AssertionError("the loader reads batches through __getitems__")

    def __getitems__(self, indices):
        self.reads.append(len(indices))
        return [{"tokens": torch.arange(LENGTHS[i]) % 9 + 1, "label": i % 3, "name": f"doc{i}",
                 "span": Span(i, i + LENGTHS[i]), "weight": np.float32(1.0 + i / 10)} for i in indices]


def collate_span_fn(batch, *, collate_fn_map=None):
    return torch.tensor([[s.start, s.end] for s in batch])


def collate_str_fn(batch, *, collate_fn_map=None):
    return "|".join(batch)


CUSTOM_MAP = {**default_collate_fn_map, Span: collate_span_fn, str: collate_str_fn}


def pad_collate(samples):
    tokens = pad_sequence([s["tokens"] for s in samples], batch_first=True, padding_value=0)
    rest = collate([{k: v for k, v in s.items() if k != "tokens"} for s in samples], collate_fn_map=CUSTOM_MAP)
    return tokens, torch.tensor([len(s["tokens"]) for s in samples]), rest


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size):
        self.lengths, self.batch_size = lengths, batch_size

    def __iter__(self):
        order = sorted(range(len(self.lengths)), key=lambda i: (self.lengths[i], i))
        yield from (order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size))

    def __len__(self):
        return math.ceil(len(self.lengths) / self.batch_size)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6, padding_idx=0)
        self.head = nn.Linear(6, 3)
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.7 + i).reshape(p.shape) * 0.5)
            self.emb.weight[0].zero_()

    def forward(self, tokens, lengths):
        mask = (tokens != 0).unsqueeze(-1)
        pooled = (self.emb(tokens) * mask).sum(1) / lengths.unsqueeze(1)
        return self.head(pooled)


store = TokenStore()
loader = DataLoader(store, batch_sampler=BucketBatchSampler(LENGTHS, 4), collate_fn=pad_collate)
it = iter(loader)
losses += [type(it).__name__ == "_SingleProcessDataLoaderIter", len(it), len(loader)]
tokens, lengths, rest = next(it)
shortest = sorted(range(len(LENGTHS)), key=lambda i: (LENGTHS[i], i))[:4]
losses += list(tokens.shape) + [it._num_yielded, rest["name"] == "|".join(f"doc{i}" for i in shortest)]
losses += [rest["span"].sum().item(), rest["weight"].dtype == torch.float32, rest["label"].dtype == torch.int64]
losses += [len([b for b in it]), it._num_yielded]
losses.append(store.reads == [4, 4, 2])

model = Classifier()
opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
for _ in range(3):
    for tokens, lengths, rest in loader:
        loss = (F.cross_entropy(model(tokens, lengths), rest["label"], reduction="none") * rest["weight"]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    losses.append(loss.item())
losses.append(store.reads[-3:] == [4, 4, 2])

# Subset and StackDataset pass whole index batches to the store.
store.reads.clear()
subset = Subset(store, [9, 7, 5, 3, 1])
names = [rest["name"] for _, _, rest in DataLoader(subset, batch_size=2, collate_fn=pad_collate)]
losses += [names == ["doc9|doc7", "doc5|doc3", "doc1"], store.reads == [2, 2, 1]]
paired = StackDataset(doc=store, target=torch.arange(10) * 10)
batch = next(iter(DataLoader(paired, batch_size=3, collate_fn=lambda s: s)))
losses += [batch[2]["doc"]["name"] == "doc2", batch[2]["target"].item(), type(batch[0]) is dict]
pairs = StackDataset(store, list(range(100, 110)))
losses += [pairs.__getitems__([4])[0][1], type(pairs.__getitems__([4])[0]) is tuple]


class ShiftedSubset(Subset):
    def __getitem__(self, idx):
        return super().__getitem__(idx) + 1


try:
    ShiftedSubset(list(range(5)), [0, 1])
except NotImplementedError as e:
    losses += [len(str(e)), "must also override __getitems__" in str(e)]


class ShiftedBatches(ShiftedSubset):
    def __getitems__(self, indices):
        return [self[i] for i in indices]


losses += next(iter(DataLoader(ShiftedBatches(list(range(5)), [3, 4]), batch_size=2))).tolist()
try:
    collate([1.0, 2.0])  # no map: not even numbers are leaves
except TypeError as e:
    losses.append(len(str(e)))
losses.append(collate([True, False], collate_fn_map={int: lambda b, collate_fn_map: len(b)}))
