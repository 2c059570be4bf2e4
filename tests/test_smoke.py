"""A first end-to-end check of every layer; the detailed suites live beside this file."""

import torch

from tests.helpers import check, rand


def test_chain_forward_backward() -> None:
    check(lambda lib, x, y: ((x * y).exp() + x / (y + 2)).sum(dim=1), rand(3, 4), rand(1, 4))


def test_matmul_broadcast() -> None:
    check(lambda lib, a, b: lib.matmul(a, b), rand(2, 1, 3, 4), rand(5, 4, 2))


def test_indexing() -> None:
    idx = torch.tensor([2, 0, 2])
    check(lambda lib, x, i: x[1:, i] * 2, rand(4, 3), idx)
