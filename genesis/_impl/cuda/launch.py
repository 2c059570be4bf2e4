"""Shared launch helpers of the CUDA backend: dtype tables, new arrays, pointers and Triton signatures,
stride coalescing, tiles, and the elementwise launcher every family builds on."""

from __future__ import annotations

import math
from typing import Sequence

from genesis import dtypes
from genesis._impl.cuda import runtime as rt
from genesis._impl.cuda import storage
from genesis._impl.cuda import triton_driver as td
from genesis._impl.cuda.kernels import elementwise as ek
from genesis.memo import remember
from genesis.ndarray import NDArray, contiguous_strides

_TT = {
    dtypes.bool_: "i1", dtypes.uint8: "u8", dtypes.int8: "i8", dtypes.int16: "i16", dtypes.int32: "i32",
    dtypes.int64: "i64", dtypes.float16: "fp16", dtypes.bfloat16: "bf16", dtypes.float32: "fp32",
    dtypes.float64: "fp64",
}
_PTR = {d: "*" + t for d, t in _TT.items()}
_PTR16 = {d: "*" + t + ":16" for d, t in _TT.items()}


# ---------------------------------------------------------------- arrays and pointers

_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _cstrides(shape: tuple[int, ...]) -> tuple[int, ...]:
    s = _STRIDES.get(shape)
    if s is None:
        s = remember(_STRIDES, shape, contiguous_strides(shape), 8192)
    return s


def complex_unsupported(what: str, dtype: dtypes.dtype) -> NotImplementedError:
    """The error for a complex array reaching a CUDA primitive that has no complex implementation."""
    return NotImplementedError(f"{what}: not implemented for '{dtype.name}' on cuda (complex tensors there support "
                               "creation, copies, casts, views, indexing, + - * /, ==, !=, where, exp, reciprocal, "
                               "abs, angle, conj, sum, mean and matmul)")


def real_view(x: NDArray) -> NDArray:
    """The complex array ``x`` as its real and imaginary parts: shape ``(..., 2)``, strides ``(2 s..., 1)`` in the
    real dtype, sharing memory (torch's ``view_as_real``)."""
    return NDArray(x.buffer, x.shape + (2,), tuple(2 * s for s in x.strides) + (1,), 2 * x.offset, x.dtype.to_real,
                   x.device)


def part(x: NDArray, k: int) -> NDArray:
    """The real (``k = 0``) or imaginary (``k = 1``) parts of the complex array ``x``, as a real view."""
    return NDArray(x.buffer, x.shape, tuple(2 * s for s in x.strides), 2 * x.offset + k, x.dtype.to_real, x.device)


def complex_view(r: NDArray) -> NDArray:
    """The real array ``r`` of shape ``(..., 2)`` (unit last stride, even other strides and offset) as a complex
    array of one dim less, sharing memory (torch's ``view_as_complex``)."""
    return NDArray(r.buffer, r.shape[:-1], tuple(s // 2 for s in r.strides[:-1]), r.offset // 2, r.dtype.to_complex,
                   r.device)


def _new(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    st = storage.alloc(math.prod(shape) * dtype.itemsize, device.index)
    strides = _STRIDES.get(shape)
    return NDArray(st, shape, strides if strides is not None else _cstrides(shape), 0, dtype, device, True)


_CL_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _new_channels_last(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    """A new (N, C, *spatial) array stored as (N, *spatial, C): torch's channels_last (channels_last_3d for 5-d).
    The strides are worked out once per shape (no permuted view is built per call)."""
    strides = _CL_STRIDES.get(shape)
    if strides is None:
        stored = contiguous_strides((shape[0],) + shape[2:] + (shape[1],))
        strides = remember(_CL_STRIDES, shape, (stored[0], stored[-1]) + stored[1:-1], 8192)
    st = storage.alloc(math.prod(shape) * dtype.itemsize, device.index)
    return NDArray(st, shape, strides, 0, dtype, device)


def _contig(x: NDArray) -> bool:
    c = x._native
    if c is None:
        c = x._native = x.is_contiguous()
    return c


def _fills_block(x: NDArray) -> bool:
    """Whether ``x`` fills one block of memory without gaps or overlaps, in any dim order (row-major, channels_last,
    a transpose): then an elementwise op over arrays laid out alike walks them as one flat array."""
    expected = 1
    for stride, n in sorted((s, n) for n, s in zip(x.shape, x.strides) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True


_DENSE: dict[tuple, bool] = {}


def _dense_layout(x: NDArray) -> bool:
    """``_fills_block(x)``, kept per (shape, strides): asked by every elementwise op on channels_last arrays."""
    key = (x.shape, x.strides)
    dense = _DENSE.get(key)
    if dense is None:
        dense = remember(_DENSE, key, _fills_block(x))
    return dense


def _new_like(x: NDArray, dtype: dtypes.dtype, other: NDArray | None = None) -> NDArray:
    """A new array of ``x``'s shape laid out as ``x`` when ``x`` is dense, else as ``other`` (an operand of that
    shape) when that one is, else row-major: elementwise results keep their inputs' memory format (a channels_last
    network stays channels_last, also where one operand is a broadcast gradient), as torch's do."""
    if _contig(x):
        return _new(x.shape, dtype, x.device)
    if not _dense_layout(x):
        if other is None or other.shape != x.shape or _contig(other) or not _dense_layout(other):
            return _new(x.shape, dtype, x.device)
        x = other
    st = storage.alloc(x.size * dtype.itemsize, x.device.index)
    return NDArray(st, x.shape, x.strides, 0, dtype, x.device, False)


def _ptr(x: NDArray) -> int:
    return x.buffer.ptr + x.offset * x.dtype.itemsize


def _psig(x: NDArray, ptr: int) -> str:
    sig = _PTR16.get(x.dtype) if ptr % 16 == 0 else _PTR.get(x.dtype)
    if sig is None:  # a complex array in a kernel written for real ones
        raise complex_unsupported("this operation", x.dtype)
    return sig


def _pointers(arrays: Sequence[NDArray]) -> tuple[list[int], tuple[str, ...]]:
    """The device pointers of ``arrays`` and their Triton pointer types (``:16`` where 16-byte aligned), in one pass
    without a Python call per array."""
    ptrs = [a.buffer.ptr + a.offset * a.dtype.itemsize for a in arrays]
    try:
        sig = tuple([_PTR[a.dtype] if p & 15 else _PTR16[a.dtype] for a, p in zip(arrays, ptrs)])
    except KeyError:  # a complex array in a kernel written for real ones
        raise complex_unsupported("this operation", next(a.dtype for a in arrays if a.dtype not in _PTR)) from None
    return ptrs, sig


def _stream() -> int:
    s = rt.state.streams.get(rt.state.device)
    return 0 if s is None else s.handle


# ---------------------------------------------------------------- layouts


def _bstrides(x: NDArray, shape: tuple[int, ...]) -> list[int]:
    """Strides of ``x`` broadcast to ``shape`` (0 along broadcast dims)."""
    lead = len(shape) - x.ndim
    out = [0] * lead
    for n, xs, xst in zip(shape[lead:], x.shape, x.strides):
        out.append(0 if xs == 1 and n != 1 else (xst if xs != 1 else 0))
    return out


def _coalesce(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge neighbours that every operand walks as one dim."""
    cs: list[int] = []
    cst: list[list[int]] = [[] for _ in strides]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if cs and all(st[-1] == s[d] * n for st, s in zip(cst, strides)):
            cs[-1] *= n
            for st, s in zip(cst, strides):
                st[-1] = s[d]
            continue
        cs.append(n)
        for st, s in zip(cst, strides):
            st.append(s[d])
    if not cs:
        return [1], [[0] for _ in strides]
    return cs, cst


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _tile(n_rows: int, C: int, itemsize: int) -> tuple[int, int, int]:
    block_c = min(_next_pow2(C), 2048 if itemsize <= 2 else 1024)
    block_r = min(max(1, 4096 // block_c), _next_pow2(n_rows))
    warps = 8 if block_r * block_c >= 4096 else 4
    return block_r, block_c, warps


def _i32(v: int) -> str:
    """An int32 argument's type (a row length, a bound), marked a multiple of 16 when it is one: a mask against such
    a bound is constant over 16 lanes and rows start 16-byte aligned (given an aligned base), so loads vectorize."""
    return "i32:16" if v % 16 == 0 else "i32"


def _istr(v: int) -> str:
    if v == 1:
        return "1"
    return "i64:16" if v % 16 == 0 else "i64"


def _split_rank4(shape: list[int], strides: list[list[int]], ptrs: list[int], itemsizes: list[int]):
    """Yield (shape4, strides4, ptrs) pieces with at most 4 dims: the dims beyond 4 become a host loop.

    The loop runs over the smallest dims other than the last (which stays the kernel's innermost one), so that a
    rank-5 copy such as an attention gradient laid out (T, B, 3, H, D) takes 2 or 3 launches, not T.
    """
    extra = len(shape) - 4
    if extra <= 0:
        pad = 4 - len(shape)
        yield [1] * pad + shape, [[0] * pad + s for s in strides], ptrs
        return
    looped = sorted(sorted(range(len(shape) - 1), key=lambda d: shape[d])[:extra])
    kept = [d for d in range(len(shape)) if d not in looped]
    kept_shape = [shape[d] for d in kept]
    kept_strides = [[s[d] for d in kept] for s in strides]
    lead = [shape[d] for d in looped]
    for flat in range(math.prod(lead)):
        idx = []
        r = flat
        for n in reversed(lead):
            idx.append(r % n)
            r //= n
        idx.reverse()
        moved = [p + sum(i * st[d] for i, d in zip(idx, looped)) * isz for p, st, isz in zip(ptrs, strides, itemsizes)]
        yield kept_shape, kept_strides, moved


# ---------------------------------------------------------------- elementwise launcher

_EW_CONTIG = td.Kernel(ek.ew_contig)
_FAST: dict[tuple, object] = {}


def _contig_launcher(op: str, nin: int, out: NDArray, optr: int, ins: tuple, ptrs: tuple, n: int,
                     scalar_dtype: dtypes.dtype | None) -> tuple:
    """(launcher, args) of the contiguous kernel for ``ins`` (contiguous NDArrays, single elements or numbers)."""
    types = [_psig(out, optr)]
    args = [optr]
    modes = []
    for x, p in zip(ins, ptrs):
        if isinstance(x, NDArray):
            types.append(_psig(x, p))
            args.append(p)
            modes.append(1 if x.shape == out.shape else 3)
        else:
            ty, v = _scalar_sig(x, scalar_dtype or out.dtype)
            types.append(ty)
            args.append(v)
            modes.append(2)
    while len(modes) < 3:
        types.append("i32")
        args.append(0)
        modes.append(0)
    big = n >= 2**31 - 65536
    types.append(("i64" if big else "i32") + (":16" if n % 16 == 0 else ""))
    args.append(n)
    block, warps = _CONTIG_CFG[out.dtype.itemsize]
    go = _EW_CONTIG.launcher(tuple(types), (op, nin, modes[0], modes[1], modes[2], block, big), warps)
    return go, args


_EW_STRIDED = td.Kernel(ek.ew_strided)
_CONTIG_CFG = {1: (4096, 4), 2: (4096, 4), 4: (2048, 4), 8: (1024, 4)}  # itemsize -> (BLOCK, num_warps)


def _scalar_sig(value: object, dtype: dtypes.dtype) -> tuple[str, object]:
    if dtype.category == 2:
        return ("fp64" if dtype is dtypes.float64 else "fp32"), float(value)
    if dtype.category == 1:
        return "i64", int(value)
    return "i32", int(bool(value))


def _ew(op: str, nin: int, out: NDArray, ins: tuple, scalar_dtype: dtypes.dtype | None = None) -> NDArray:
    """Run elementwise ``op`` over ``ins`` (NDArrays broadcastable to ``out`` or Python numbers) into ``out``."""
    shape = out.shape
    n = math.prod(shape)
    if n == 0:
        return out
    if rt.state.device != out.device.index:
        rt.set_device(out.device.index)
    # The hot path inlines _contig and _ptr: a Python call per operand is a measurable part of a small op.
    fast = out._native
    if fast is None:
        fast = _contig(out)
    a = ins[0]
    if nin <= 2 and a.__class__ is NDArray and a.shape == shape:
        # The common cases, kept short: same-shape operands all contiguous, or all laid out alike in another dense
        # order (channels_last, a transpose: walked as one flat array as well), or a tensor and a Python number.
        if fast:
            flat = a._native if a._native is not None else _contig(a)
        else:
            flat = a.strides == out.strides and _dense_layout(out)
        if flat:
            b = ins[1] if nin == 2 else None
            if b is None:
                bkey, barg = None, 0
            elif b.__class__ is NDArray:
                if b.shape != shape or not ((b._native if b._native is not None else _contig(b)) if fast
                                            else b.strides == out.strides):
                    bkey = False
                else:
                    barg = b.buffer.ptr + b.offset * b.dtype.itemsize
                    bkey = b.dtype
            else:
                bkey, barg = _scalar_sig(b, scalar_dtype or out.dtype)
            optr = out.buffer.ptr + out.offset * out.dtype.itemsize
            pa = a.buffer.ptr + a.offset * a.dtype.itemsize
            # Only the all-aligned case is cached by dtype alone; other alignments take the general path.
            if bkey is not False and not ((optr | pa | (barg if bkey.__class__ is dtypes.dtype else 0)) & 15):
                key = (op, nin, out.dtype, a.dtype, bkey, n & 15 == 0, n >= 2**31 - 65536, out.device)
                go = _FAST.get(key)
                if go is None:
                    go = _FAST[key] = _contig_launcher(op, nin, out, optr, ins, (pa, barg)[:nin], n, scalar_dtype)[0]
                block = _CONTIG_CFG[out.dtype.itemsize][0]
                go((n + block - 1) // block, 1, 1, optr, pa, barg, 0, n)
                return out
    # Every other layout: a launch plan cached by everything that shapes the launch (dtypes, shapes, strides and
    # pointer alignments), so a broadcast or strided op pays the layout analysis once, not at every call.
    optr = out.buffer.ptr + out.offset * out.dtype.itemsize
    key = [op, nin, out.dtype, shape, out.strides, optr & 15, scalar_dtype, out.device.index]
    vals = [optr]
    for x in ins:
        if x.__class__ is NDArray:
            p = x.buffer.ptr + x.offset * x.dtype.itemsize
            key += (x.dtype, x.shape, x.strides, p & 15)
            vals.append(p)
        else:
            key.append(None)
            vals.append(x)
    key = tuple(key)
    plan = _PLANS.get(key)
    if plan is None:
        plan = remember(_PLANS, key, _ew_plan(op, nin, out, ins, vals, scalar_dtype))
    conv, pieces = plan
    if conv is not None:
        vals = [v if x.__class__ is NDArray else conv(v) for v, x in zip(vals, (out,) + tuple(ins))]
    while len(vals) < 4:
        vals.append(0)
    v0, v1, v2, v3 = vals
    for go, grid, (o0, o1, o2, o3), tail in pieces:
        go(grid, 1, 1, v0 + o0, v1 + o1, v2 + o2, v3 + o3, *tail)
    return out


_PLANS: dict[tuple, tuple] = {}


def _bool_int(value: object) -> int:
    return int(bool(value))


def _ew_plan(op: str, nin: int, out: NDArray, ins: tuple, vals: list, scalar_dtype: dtypes.dtype | None) -> tuple:
    """The launches of elementwise ``op`` for this layout: ``(conv, pieces)`` where ``conv`` converts the Python
    numbers among ``ins`` to their kernel argument (None when there are none) and each piece is ``(launcher, grid,
    byte offsets of the four pointer slots, trailing arguments)``; ``vals`` holds the current pointers (for their
    alignment) and numbers."""
    sdt = scalar_dtype or out.dtype
    conv = None
    if any(x.__class__ is not NDArray for x in ins):
        conv = {2: float, 1: int}.get(sdt.category, _bool_int)
    shape = out.shape
    contig = _contig(out)
    flat = contig or _fills_block(out)  # a dense output in any dim order: flat if every operand is laid out alike
    if flat:
        ostr = out.strides
        flat = all(x.__class__ is not NDArray or x.size == 1 or x.shape == shape and (
            x.strides == ostr or contig and _contig(x)) for x in ins)
    if flat:
        go, args = _contig_launcher(op, nin, out, vals[0], ins, tuple(vals[1:]), out.size, scalar_dtype)
        block = _CONTIG_CFG[out.dtype.itemsize][0]
        return conv, [(go, (out.size + block - 1) // block, (0, 0, 0, 0), tuple(args[4:]))]
    tensors = [out] + [x for x in ins if x.__class__ is NDArray]
    cshape, cstrides = _coalesce(shape, [list(out.strides)] + [_bstrides(x, shape) for x in tensors[1:]])
    ptrs = [_ptr(t) for t in tensors]
    pieces = []
    for shape4, strides4, tptrs in _split_rank4(cshape, cstrides, ptrs, [t.dtype.itemsize for t in tensors]):
        R1, R2, C = shape4[1], shape4[2], shape4[3]
        n_rows = shape4[0] * R1 * R2
        block_r, block_c, warps = _tile(n_rows, C, out.dtype.itemsize)
        n_cblocks = (C + block_c - 1) // block_c
        types = [_psig(out, tptrs[0])]
        offsets = [tptrs[0] - ptrs[0]]
        modes = []
        op_strides = []
        k = 1
        for x in ins:
            if x.__class__ is NDArray:
                types.append(_psig(x, tptrs[k]))
                offsets.append(tptrs[k] - ptrs[k])
                op_strides.append(strides4[k])
                modes.append(1)
                k += 1
            else:
                types.append(_scalar_sig(x, sdt)[0])
                offsets.append(0)
                op_strides.append([0, 0, 0, 0])
                modes.append(2)
        while len(modes) < 3:
            types.append("i32")
            offsets.append(0)
            modes.append(0)
            op_strides.append([0, 0, 0, 0])
        types += ["i32", _i32(C), "i32", "i32", "i32"]
        tail = [n_rows, C, R1, R2, n_cblocks]
        for st in [strides4[0]] + op_strides:
            types += [_istr(s) for s in st]
            tail += st
        go = _EW_STRIDED.launcher(tuple(types), (op, nin, modes[0], modes[1], modes[2], block_r, block_c), warps)
        pieces.append((go, ((n_rows + block_r - 1) // block_r) * n_cblocks, tuple(offsets), tuple(tail)))
    return conv, pieces
