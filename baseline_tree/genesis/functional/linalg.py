"""Matrix products: the matmul primitive and einsum written on top of it."""

from __future__ import annotations

from genesis.functional.elementwise import Primitive
from genesis.ndarray import NDArray


class Matmul(Primitive):
    """``a @ b`` with torch's rules for 1-D operands and broadcast batch dims."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        ctx.save_for_backward(a, b)
        return a.matmul(b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad_b = None
        # Treat vectors as matrices so one formula serves every case; unbroadcasting sums batch dims back.
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(1) if b.ndim == 1 else b
        # Restore the dims matmul dropped for vectors: N (last) first, then M, so a 0-d grad of vec @ vec works.
        g = grad
        if b.ndim == 1:
            g = g.unsqueeze(-1)
        if a.ndim == 1:
            g = g.unsqueeze(-2)
        if ctx.needs_input_grad[0]:
            grad_a = g @ b2.mT
            if a.ndim == 1:
                grad_a = grad_a.reshape(grad_a.shape[:-2] + grad_a.shape[-1:])
        if ctx.needs_input_grad[1]:
            grad_b = a2.mT @ g
            if b.ndim == 1:
                grad_b = grad_b.reshape(grad_b.shape[:-1])
        return grad_a, grad_b


def _parse(equation: str, operands: tuple) -> tuple[list[str], str]:
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, out = equation.split("->")
    else:
        lhs, out = equation, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): the equation has {len(terms)} operand terms but {len(operands)} operands "
                           "were given")
    # Ellipsis dims broadcast from the right, so an operand with fewer of them takes the last ellipsis letters.
    n_ell = max((x.ndim - (len(t) - 3) for t, x in zip(terms, operands) if "..." in t), default=0)
    expanded = []
    for term, x in zip(terms, operands):
        if "..." in term:
            n = x.ndim - (len(term) - 3)
            term = term.replace("...", "".join(chr(0x391 + n_ell - n + i) for i in range(n)))
        if len(term) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                               f"number of dimensions ({x.ndim}) for operand {len(expanded)}")
        expanded.append(term)
    sizes: dict[str, int] = {}
    for k, (term, x) in enumerate(zip(expanded, operands)):
        for c, n in zip(term, x.shape):
            if sizes.get(c, 1) != 1 and n != 1 and sizes[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast "
                                   f"with previously seen size {sizes[c]}")
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    if out is None:
        counts: dict[str, int] = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        ell = sorted(c for c in counts if ord(c) >= 0x391)
        out = "".join(ell) + "".join(sorted(c for c, n in counts.items() if n == 1 and ord(c) < 0x391))
    elif "..." in out:
        out = out.replace("...", "".join(chr(0x391 + i) for i in range(n_ell)))
    return expanded, out


def _diagonalize(x, term: str):
    """Take diagonals for repeated letters in one operand (``ii->i``)."""
    while len(set(term)) != len(term):
        for i, c in enumerate(term):
            j = term.find(c, i + 1)
            if j != -1:
                x = x.diagonal(0, i, j)
                term = term[:i] + term[i + 1:j] + term[j + 1:] + c
                break
    return x, term


def _contract(x, tx: str, y, ty: str, keep: set[str]):
    """Contract two operands over the letters they share that are not kept, with one batched matmul."""
    batch = [c for c in tx if c in ty and c in keep]
    summed = [c for c in tx if c in ty and c not in keep]
    left = [c for c in tx if c not in ty]
    right = [c for c in ty if c not in tx]
    sizes = {c: x.shape[tx.index(c)] for c in tx}
    sizes.update({c: y.shape[ty.index(c)] for c in ty})
    # Broadcast size-1 batch dims between operands.
    for c in batch:
        sizes[c] = max(x.shape[tx.index(c)], y.shape[ty.index(c)])
    xp = x.permute([tx.index(c) for c in batch + left + summed])
    yp = y.permute([ty.index(c) for c in batch + summed + right])
    bshape = [sizes[c] for c in batch]
    nl = 1
    for c in left:
        nl *= sizes[c]
    ns = 1
    for c in summed:
        ns *= sizes[c]
    nr = 1
    for c in right:
        nr *= sizes[c]
    xp = xp.expand(bshape + [x.shape[tx.index(c)] for c in left + summed]).reshape(bshape + [nl, ns])
    yp = yp.expand(bshape + [y.shape[ty.index(c)] for c in summed + right]).reshape(bshape + [ns, nr])
    out = (xp @ yp).reshape(bshape + [sizes[c] for c in left + right])
    return out, "".join(batch + left + right)


def einsum(equation: str, *operands):
    """Einstein summation: repeated letters are contracted pairwise, left to right, with batched matmuls."""
    terms, out = _parse(equation, operands)
    items = []
    for k, (x, term) in enumerate(zip(operands, terms)):
        x, term = _diagonalize(x, term)
        # Sum letters that appear only in this operand and not in the output.
        others = "".join(t for j, t in enumerate(terms) if j != k) + out
        lonely = [i for i, c in enumerate(term) if c not in others]
        if lonely:
            x = x.sum(dim=tuple(lonely))
            term = "".join(c for i, c in enumerate(term) if i not in lonely)
        items.append((x, term))
    x, tx = items[0]
    for k in range(1, len(items)):
        y, ty = items[k]
        later = "".join(t for _, t in items[k + 1:]) + out
        x, tx = _contract(x, tx, y, ty, set(later))
    for c in out:
        if c not in tx:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    summed = [i for i, c in enumerate(tx) if c not in out]
    if summed:
        x = x.sum(dim=tuple(summed))
        tx = "".join(c for c in tx if c in out)
    return x.permute([tx.index(c) for c in out]) if tx != out else x
