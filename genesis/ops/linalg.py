"""Matrix products: the matmul primitive and the ops written on it (mm, bmm, mv, dot, outer, addmm, baddbmm,
addmv, addr, addbmm), einsum, tensordot, cross and Kronecker products, pairwise distances and renorm.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from genesis import dtypes
from genesis.autograd import Function, Primitive, is_grad_enabled
from genesis.memo import remember
from genesis.ndarray import NDArray, broadcast_shapes, normalize_dim
from genesis.ndarray import cat as ndarray_cat
from genesis.ops._args import check_tensors, ones_like_bool
from genesis.ops.autocast import autocast_args, one_op
from genesis.ops.compare import where
from genesis.ops.join import cat
from genesis.ops.nn import Linear
from genesis.ops.reduce import amax, norm, sum
from genesis.ops.sparse import SparseTensor, sparse_matmul
from genesis.ops.sparse_csr import SparseCsrTensor
from genesis.tensor import Tensor, ones_like

_HALF = (dtypes.bfloat16, dtypes.float16)


class Matmul(Primitive):
    """``a @ b`` with torch's rules for 1-D operands and broadcast batch dims."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray) -> NDArray:
        # Save an operand only when the other's gradient reads it, as torch: an in-place change of `a` after
        # `a @ b` with only `a` requiring grad must not fail the backward.
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(a if needs[1] else None, b if needs[0] else None)
            # The layouts the gradients follow: each operand's dims and whether it is a column-major matrix.
            ctx.layouts = ((a.ndim, a.ndim == 2 and _column_major(a)), (b.ndim, b.ndim == 2 and _column_major(b)))
        return a.matmul(b)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled() or grad.dtype.is_complex:
            # Recorded (create_graph), or complex: tensor ops, with the conjugate transpose (torch's convention for
            # complex gradients).
            a, b = ctx.saved_tensors
            return _matmul_grads(ctx.needs_input_grad, ctx.layouts, grad, a, b, lambda m: m.mH, lambda x, y: x @ y)
        a, b = ctx.saved_arrays()
        return _matmul_grads(ctx.needs_input_grad, ctx.layouts, grad.ndarray, a, b, lambda m: m.transpose(-2, -1),
                             NDArray.matmul)


def _matmul_grads(needs: tuple, layouts: tuple, grad: Any, a: Any, b: Any, adjoint: Any, product: Any) -> tuple:
    """(grad_a, grad_b) of ``a @ b`` where ``needs`` asks for them, written once for Tensors and NDArrays (which
    share unsqueeze/reshape): ``adjoint`` transposes a matrix (conjugating complex ones), ``product`` multiplies.
    ``a`` is given (may be None otherwise) when ``b``'s gradient is needed, ``b`` when ``a``'s is; ``layouts`` holds
    each operand's ``(ndim, column_major)``."""
    grad_a = grad_b = None
    (a_ndim, a_column_major), (b_ndim, b_column_major) = layouts
    # Restore the dims matmul dropped for vectors: N (last) first, then M, so a 0-d grad of vec @ vec works.
    g = grad
    if b_ndim == 1:
        g = g.unsqueeze(-1)
    if a_ndim == 1:
        g = g.unsqueeze(-2)
    # Of two matrices, a gradient whose operand is a transposed view (column-major) is computed transposed, as
    # torch's mm backward does: the same value, with torch's rounding, laid out as the operand. Vectors are treated
    # as matrices so one formula serves every case; unbroadcasting sums batch dims back.
    matrices = a_ndim == 2 and b_ndim == 2
    if needs[0]:
        if matrices and a_column_major:
            grad_a = adjoint(product(b, adjoint(g)))
        else:
            grad_a = product(g, adjoint(b.unsqueeze(1) if b_ndim == 1 else b))
        if a_ndim == 1:
            grad_a = grad_a.reshape(grad_a.shape[:-2] + grad_a.shape[-1:])
    if needs[1]:
        if matrices and b_column_major:
            grad_b = adjoint(product(adjoint(g), a))
        else:
            grad_b = product(adjoint(a.unsqueeze(0) if a_ndim == 1 else a), g)
        if b_ndim == 1:
            grad_b = grad_b.reshape(grad_b.shape[:-1])
    return grad_a, grad_b


def _column_major(x: Any) -> bool:
    """Whether a matrix (a Tensor or an NDArray) is stored column by column: the transpose of a row-major one."""
    strides = x.strides if x.__class__ is NDArray else x.stride()
    return strides[0] == 1 and strides[1] == x.shape[0]


#: The sparse tensor classes; a product with one of them is computed over its COO form.
_SPARSE = (SparseTensor, SparseCsrTensor)


def _as_coo(x: Tensor) -> Tensor:
    """A CSR matrix as its COO tensor; anything else as it is."""
    return x.to_sparse() if x.__class__ is SparseCsrTensor else x


def matmul(input: Tensor, other: Tensor) -> Tensor:
    if input.__class__ is not Tensor or other.__class__ is not Tensor:  # a Parameter, or no tensor at all
        check_tensors("matmul", input=input, other=other)
    if input.__class__ in _SPARSE or other.__class__ in _SPARSE:
        return sparse_matmul(_as_coo(input), _as_coo(other), "matmul")
    input, other = autocast_args("matmul", input, other)
    return Matmul.apply(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.__class__ is not Tensor or mat2.__class__ is not Tensor:  # a Parameter, or no tensor at all
        check_tensors("mm", input=input, mat2=mat2)
    if input.__class__ in _SPARSE or mat2.__class__ in _SPARSE:
        return sparse_matmul(_as_coo(input), _as_coo(mat2), "mm")
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.__class__ is not Tensor or mat2.__class__ is not Tensor:  # a Parameter, or no tensor at all
        check_tensors("bmm", input=input, mat2=mat2)
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes must match, got {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


@one_op("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    check_tensors("mv", input=input, vec=vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2D matrix and a 1D vector, got {input.ndim}D and {vec.ndim}D")
    return matmul(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-D tensors."""
    check_tensors("dot", input=input, tensor=tensor)
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{tensor.shape[0]}] "
                           "to have the same number of elements, but got "
                           f"{input.shape[0]} and {tensor.shape[0]} elements respectively")
    # dot's own autocast rule (promote to the widest input), not matmul's (lower precision), as torch's
    input, tensor = autocast_args("dot", input, tensor)
    return Matmul.apply(input, tensor)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Inner product over the last dim: ``out[i..., j...] = sum_k input[i..., k] * other[j..., k]`` (``dot`` for two
    1-D tensors); a 0-D operand scales the other one."""
    check_tensors("inner", input=input, other=other)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    return tensordot(input, other, dims=([-1], [-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    check_tensors("outer", input=input, vec2=vec2)
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1D tensors, got {input.ndim}D and {vec2.ndim}D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


@one_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; beta == 0 ignores ``input`` (NaN and inf do not propagate)."""
    _check_blend_dtypes("addmm", input, mat1, mat2)
    dtype = mat1.dtype
    if ((beta, alpha) == (1, 1) and dtype in _HALF and input.dtype is dtype and mat2.dtype is dtype
            and mat1.ndim == 2 and mat2.ndim == 2 and input.shape[-1:] == mat2.shape[1:]
            and (input.ndim == 1 or input.ndim == 2 and input.shape[0] == 1)):
        # A bias row (Hugging Face's Conv1D): the product's bias epilogue, summed in float32 and rounded once.
        return Linear.apply(mat1, mat2.mT, input.reshape(-1))
    return _blend(input, _product(mm, mat1, mat2), beta, alpha, input.dtype)


@one_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` per batch; beta == 0 ignores ``input``."""
    _check_blend_dtypes("baddbmm", input, batch1, batch2)
    return _blend(input, _product(bmm, batch1, batch2), beta, alpha, input.dtype)


def _check_blend_dtypes(op: str, input: Tensor, a: Tensor, b: Tensor) -> None:
    """torch's checks that ``input`` and both factors of a blended product share one dtype (no promotion), with
    its messages, in its order."""
    def scalar(t: Tensor) -> str:
        return dtypes.SCALAR_TYPE_NAMES[t.dtype]

    if op == "addmv":
        if not input.dtype is a.dtype is b.dtype:
            raise RuntimeError(f"addmv input tensors must have the same dtype, but got {scalar(input)}, {scalar(a)}, "
                               f"and {scalar(b)}")
    elif op == "baddbmm":
        if input.dtype is not a.dtype:
            names = [dtypes.CPP_TYPE_NAMES.get(t.dtype, t.dtype.name) for t in (input, a, b)]
            raise RuntimeError(f"Input dtypes must be the same, got: input {names[0]}, batch1: {names[1]}, batch2: "
                               f"{names[2]}")
        if a.dtype is not b.dtype:
            raise RuntimeError(f"expected scalar type {scalar(a)} but found {scalar(b)}")
    else:  # addmm, addbmm
        if input.dtype is not b.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {scalar(input)} and {scalar(b)}")
        if a.dtype is not b.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {scalar(a)} and {scalar(b)}")


def _product(fn: Any, a: Tensor, b: Tensor) -> Tensor:
    """``fn(a, b)``; half-precision factors on the CPU multiply in float32 (torch's CPU kernels accumulate and round
    once with the blend below), on CUDA in their dtype (the product rounds, as a half-precision product)."""
    if a.dtype in _HALF and a.dtype is b.dtype and a.device.type == "cpu":
        return fn(a.float(), b.float())
    return fn(a, b)


def _blend(input: Tensor, product: Tensor, beta: float, alpha: float, dtype: dtypes.dtype) -> Tensor:
    """``beta * input + alpha * product``. In half precision (``dtype``) the terms are scaled and added in float32
    and rounded once, as torch's matrix-product epilogue (before, each of the three steps rounded). An integer
    result takes ``beta`` and ``alpha`` converted to integers (truncated), as torch converts them to its type."""
    if dtype.category == 1:
        beta, alpha = int(beta), int(alpha)
    if dtype in _HALF and product.dtype in (dtype, dtypes.float32):
        blended = _scaled(input.float(), beta) + (product.float() if alpha == 1 else product.float() * alpha)
        return blended.to(dtype)
    return _scaled(input, beta) + (product if alpha == 1 else product * alpha)


def _parse(equation: str, operands: tuple) -> tuple[list[str], str]:
    arrow = equation.find("->")
    for i, c in enumerate(equation):
        if not (c.isascii() and c.isalpha() or c in " ,." or arrow != -1 and i in (arrow, arrow + 1)):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts "
                               f"must be in [a-zA-Z] (got {c!r})")
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


def _einsum(equation: str, *operands):
    """Einstein summation: repeated letters are contracted pairwise, left to right, with batched matmuls."""
    key = (equation, *(x.ndarray.shape for x in operands))
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = remember(_PARSED, key, _parse(equation, operands))
    return _einsum_terms(*parsed, operands)


# (equation, operand shapes) -> (terms, output letters): a model calls the same few einsums at every step.
_PARSED: dict[tuple, tuple[list[str], str]] = {}


def _einsum_terms(terms: list[str], out: str, operands: tuple):
    """``einsum`` of parsed ``terms`` (one string of letters per operand) into the ``out`` letters."""
    if len(operands) == 2 and _one_product(terms, out, operands):
        return Einsum.apply(operands[0], operands[1], terms[0], terms[1], out)
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


def _one_product(terms: list[str], out: str, operands: tuple) -> bool:
    """Whether two operands contract as one :class:`Einsum` node: floating tensors of one dtype, no letter repeated
    within an operand, every letter of an operand also in the other or in the output (none summed alone), and
    every output letter in an operand. Other equations take the general path of ``_einsum``."""
    x, y = operands
    if not (isinstance(x, Tensor) and isinstance(y, Tensor) and x.dtype is y.dtype and x.dtype.category == 2
            and x.device == y.device):
        return False
    tx, ty = terms
    if len(set(tx)) != len(tx) or len(set(ty)) != len(ty) or len(set(out)) != len(out):
        return False
    if not (all(c in ty or c in out for c in tx) and all(c in tx or c in out for c in ty)
            and all(c in tx or c in ty for c in out)):
        return False
    # A contracted letter has one size in both (only the kept letters broadcast a size 1 here).
    return all(x.shape[i] == y.shape[ty.index(c)] for i, c in enumerate(tx) if c in ty and c not in out)


class Einsum(Primitive):
    """Two operands contracted with one batched matrix product (their views permuted, expanded and reshaped as
    arrays); each gradient is the einsum of the output's gradient with the other operand."""

    @staticmethod
    def forward(ctx, x: NDArray, y: NDArray, tx: str, ty: str, out: str) -> NDArray:
        ctx.meta = (tx, ty, out)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, y if ctx.needs_input_grad[0] else None)
        batch = [c for c in tx if c in ty and c in out]
        summed = [c for c in tx if c in ty and c not in out]
        left = [c for c in tx if c not in ty]
        right = [c for c in ty if c not in tx]
        sizes = dict(zip(tx, x.shape))
        for c, n in zip(ty, y.shape):
            sizes[c] = builtins.max(sizes.get(c, 1), n)  # a size-1 batch dim broadcasts
        bshape = tuple(sizes[c] for c in batch)
        nl, ns, nr = (math.prod(sizes[c] for c in part) for part in (left, summed, right))
        xp = x.permute([tx.index(c) for c in batch + left + summed])
        xp = xp.expand(bshape + xp.shape[len(batch):]).reshape(bshape + (nl, ns))
        yp = y.permute([ty.index(c) for c in batch + summed + right])
        yp = yp.expand(bshape + yp.shape[len(batch):]).reshape(bshape + (ns, nr))
        result = xp.matmul(yp).reshape(bshape + tuple(sizes[c] for c in left + right))
        letters = batch + left + right
        return result.permute([letters.index(c) for c in out]) if letters != list(out) else result

    @staticmethod
    def backward(ctx, grad):
        tx, ty, out = ctx.meta
        x, y = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (_einsum_terms([out, ty], tx, (grad, y)) if needs[0] else None,
                _einsum_terms([out, tx], ty, (grad, x)) if needs[1] else None, None, None, None)


def einsum(equation: Any, *operands: Any) -> Tensor:
    """Sums of products over the subscripts of ``equation`` (``"ij,jk->ik"``); also torch's sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, each operand followed by its subscripts as integers 0-51 (and ``...``),
    the output's last and optional."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    return _einsum(equation, *operands)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """The equation and operands of torch's sublist form of ``einsum``."""
    def subscripts(sublist: Any) -> str:
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(_LETTERS):
                out.append(_LETTERS[s])
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got "
                                 f"{s}")
        return "".join(out)

    operands = args[0::2]
    lists = args[1::2]
    output = None
    if len(args) % 2:  # an output sublist after the last operand's
        operands, output = operands[:-1], operands[-1]
    if not all(isinstance(t, Tensor) for t in operands):
        raise TypeError("einsum(): the sublist form takes operands and subscript lists in turn")
    equation = ",".join(subscripts(sub) for sub in lists)
    if output is not None:
        equation += "->" + subscripts(output)
    return equation, tuple(operands)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first ``dims`` of ``b`` (an int), or the listed dims
    (a pair of sequences, or of ints), as one matrix product."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"both dimension lists should have same length, got {len(dims_a)} and {len(dims_b)}")
    dims_a = [normalize_dim("tensordot", d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim("tensordot", d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    inner = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(math.prod(a.shape[d] for d in free_a), inner)
    right = b.permute(*dims_b, *free_b).reshape(inner, math.prod(b.shape[d] for d in free_b))
    return matmul(left, right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


def _cross_dim(op: str, shape: tuple[int, ...], dim: int | None) -> int:
    if dim is None:
        for k, n in enumerate(shape):
            if n == 3:
                return k
        raise RuntimeError(f"{op}: no dimension of size 3 in input")
    return normalize_dim(op, dim, len(shape))


def _cross(op: str, input: Tensor, other: Tensor, dim: int | None) -> Tensor:
    if input.ndim != other.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions, got {input.ndim} and "
                           f"{other.ndim}")
    shape = broadcast_shapes(op, input.shape, other.shape)
    d = _cross_dim(op, shape, dim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim if dim is not None else d} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    if input.dtype is other.dtype and not input.dtype.is_complex:
        return LinalgCross.apply(input, other, d)
    a, b = input.expand(shape), other.expand(shape)
    next_, after = input.new_tensor([1, 2, 0], dtype=dtypes.int64), input.new_tensor([2, 0, 1], dtype=dtypes.int64)
    return a.index_select(d, next_) * b.index_select(d, after) - a.index_select(d, after) * b.index_select(d, next_)


def _rolled(x: NDArray, d: int, shift: int) -> NDArray:
    """``x`` rolled along its size-3 dim ``d`` so that element i holds element i + shift: one cat of two views."""
    return ndarray_cat([x.narrow(d, shift, 3 - shift), x.narrow(d, 0, shift)], d)


def _cross_arrays(a: NDArray, b: NDArray, d: int) -> NDArray:
    """``a x b`` along ``d`` (broadcasting), in torch's order: ``a[i+1] b[i+2] - a[i+2] b[i+1]``."""
    shape = a.shape if a.shape == b.shape else broadcast_shapes("linalg.cross", a.shape, b.shape)
    a, b = a.expand(shape), b.expand(shape)
    return _rolled(a, d, 1) * _rolled(b, d, 2) - _rolled(a, d, 2) * _rolled(b, d, 1)


class LinalgCross(Primitive):
    """The cross product of real 3-vectors along ``d``, one node: four rolled copies, two products and a difference
    each way; the gradients are torch's ``other x grad`` and ``grad x input`` (summed back over broadcast dims)."""

    @staticmethod
    def forward(ctx, a: NDArray, b: NDArray, d: int) -> NDArray:
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
            ctx.d = d
        return _cross_arrays(a, b, d)

    @staticmethod
    def backward(ctx, grad):
        needs, d = ctx.needs_input_grad, ctx.d
        if is_grad_enabled():
            a, b = ctx.saved_tensors
            return (LinalgCross.apply(b, grad, d) if needs[0] else None,
                    LinalgCross.apply(grad, a, d) if needs[1] else None, None)
        a, b = ctx.saved_arrays()
        g = grad.ndarray
        return _cross_arrays(b, g, d) if needs[0] else None, _cross_arrays(g, a, d) if needs[1] else None, None


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None), broadcasting the rest."""
    check_tensors("cross", input=input, other=other)
    return _cross("cross", input, other, dim)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-D tensors, the first conjugated: ``sum(conj(input) * other)``."""
    check_tensors("vdot", input=input, other=other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype.name} and "
                           f"{other.dtype.name}")
    return (input.conj() if input.dtype.is_complex else input).dot(other)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block ``(i, j, ...)`` of the result is ``input[i, j, ...] * other``."""
    check_tensors("kron", input=input, other=other)
    ndim = builtins.max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # Interleave the dims: a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...).
    a = input.reshape([s for n in a_shape for s in (n, 1)])
    b = other.reshape([s for n in b_shape for s in (1, n)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])


@one_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"
          ) -> Tensor:
    """p-norm distances between each row of ``x1`` (..., P, M) and each row of ``x2`` (..., R, M): (..., P, R).

    Computed from the differences directly (no matrix-product shortcut), so every ``compute_mode`` gives the
    exact distances; the gradient is zero where a distance is zero, as torch's.
    """
    check_tensors("cdist", x1=x1, x2=x2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtypes.SCALAR_TYPE_NAMES[x.dtype]}")
    if x2.dtype is not x1.dtype:  # torch's kernel reads both in one dtype: no promotion
        raise RuntimeError(f"expected scalar type {dtypes.SCALAR_TYPE_NAMES[x1.dtype]} but found "
                           f"{dtypes.SCALAR_TYPE_NAMES[x2.dtype]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes("cdist", x1.shape[:-2], x2.shape[:-2])
    x1, x2 = x1.expand((*batch, *x1.shape[-2:])), x2.expand((*batch, *x2.shape[-2:]))
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or compute_mode == "use_mm_for_euclid_dist_if_necessary"
                   and (x1.shape[-2] > 25 or x2.shape[-2] > 25)):
        return EuclideanDist.apply(x1, x2)
    return distance_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)  # (..., P, 1, M) - (..., 1, R, M)


class EuclideanDist(Function):
    """Euclidean distances through one matrix product, as torch's ``_euclidean_dist`` (cdist's choice for p = 2
    when a side has more than 25 rows): ``sqrt(max(0, |a|^2 + |b|^2 - 2 a.b))`` from padded operands, so the values
    equal torch's; the gradient is torch's ``_euclidean_dist_backward`` (zero where a distance is zero)."""

    @staticmethod
    def forward(ctx, x1: Tensor, x2: Tensor) -> Tensor:
        n1, n2 = sum(x1 * x1, -1, keepdim=True), sum(x2 * x2, -1, keepdim=True)
        a = cat([x1 * -2, n1, ones_like(n1)], -1)
        b = cat([x2, ones_like(n2), n2], -1)
        res = matmul(a, b.mT).clamp(min=0).sqrt()
        ctx.save_for_backward(x1, x2, res)
        return res

    @staticmethod
    def backward(ctx, grad):
        x1, x2, res = ctx.saved_tensors
        ratio = where(res == 0, 0.0, grad / res)
        return (x1 * sum(ratio, -1, keepdim=True) - matmul(ratio, x2) if ctx.needs_input_grad[0] else None,
                x2 * sum(ratio, -2).unsqueeze(-1) - matmul(ratio.mT, x1) if ctx.needs_input_grad[1] else None)


def distance_norm(diff: Tensor, p: float) -> Tensor:
    """The p-norm of the differences ``diff`` along the last dim, differentiated as torch's ``cdist`` and ``pdist``:
    with p = inf every coordinate at the maximum receives the whole gradient (``norm`` shares it among ties), and
    the p = 0 count stays attached to the graph with a zero gradient."""
    if p != math.inf:
        return _graph_norm(diff, p, (-1,))
    if diff.shape[-1] == 0:  # vectors without coordinates are 0 apart (a maximum over nothing would raise)
        return sum(diff, -1)
    size = diff.abs()
    top = amax(size.detach(), -1, keepdim=True)
    return (top + sum(where(size == top, size - size.detach(), 0.0), -1, keepdim=True)).squeeze(-1)


@one_op("dist")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over all elements."""
    diff = input - other
    if diff.dtype.category < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{dtypes.SCALAR_TYPE_NAMES[diff.dtype]} instead.")
    return _graph_norm(diff, p, None)


def _graph_norm(x: Tensor, p: float, dims: Any, keepdim: bool = False) -> Tensor:
    """``norm`` whose p = 0 count stays attached to the graph with a zero gradient, as torch's."""
    if p != 0:
        return norm(x, p, dims, keepdim)
    nonzero = (x != 0).to(x.dtype)
    return sum(where(ones_like_bool(x), nonzero, x), dims, keepdim)


def _scaled(x: Tensor, beta: float) -> Tensor:
    """``beta * x``; beta == 0 ignores x entirely (NaN and inf do not propagate), as torch's BLAS-style ops."""
    if beta == 0:
        return where(ones_like_bool(x), 0, x)
    return x if beta == 1 else x * beta


def _add_product(op: str, input: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    if broadcast_shapes(op, input.shape, product.shape) != tuple(product.shape):
        raise RuntimeError(f"{op}: the size of input {list(input.shape)} cannot be broadcast to the product's size "
                           f"{list(product.shape)}")
    return _blend(input, product, beta, alpha, input.dtype)


@one_op("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _check_blend_dtypes("addmv", input, mat, vec)
    return _add_product("addmv", input, _product(mv, mat, vec), beta, alpha)


@one_op("addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _add_product("addr", input, vec1.outer(vec2), beta, alpha)


@one_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _check_blend_dtypes("addbmm", input, batch1, batch2)
    return _add_product("addbmm", input, batch1.bmm(batch2).sum(0), beta, alpha)


@one_op("renorm")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Rescale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` to norm ``maxnorm`` (others unchanged)."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = normalize_dim("renorm", dim, input.ndim)
    # The norms and the factor in float32 for half-precision input, the factor then rounded to the input's dtype,
    # as torch's kernel.
    wide = input.float() if input.dtype in (dtypes.float16, dtypes.bfloat16) else input
    norms = norm(wide, p, [k for k in range(input.ndim) if k != d], keepdim=True)
    # torch's factor, including its 1e-7 guard against dividing by a zero norm.
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor.to(input.dtype)
