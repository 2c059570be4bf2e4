"""CUDA backend: the backend contract (see ``genesis.backends``) on NVIDIA GPUs, without PyTorch.

Memory comes from Genesis's caching allocator (``allocator``), kernels are Genesis's Triton kernels (``kernels/``)
launched through Genesis's own Triton driver on Genesis's current stream (``triton_driver``, ``runtime``), and
matrix products go to cuBLASLt (``blas``). An NDArray's buffer here is a ``CudaStorage``; its ``_native`` slot caches
whether the view is contiguous.
"""

from __future__ import annotations

import math

import numpy as np
from cuda.bindings import driver as cu

from genesis import dtypes
from genesis.backends import COMPARISON_OPS, cuda_switches
from genesis.backends.cuda import runtime, storage
from genesis.backends.cuda import triton_driver as td
from genesis.backends.cuda.kernels import elementwise as ek
from genesis.backends.cuda.kernels import index as ik
from genesis.backends.cuda.kernels import random as rk_random
from genesis.backends.cuda.kernels import reduce as rk
from genesis.backends.sdp import (  # noqa: F401 - torch.backends.cuda's attention switches
    cudnn_sdp_enabled,
    enable_cudnn_sdp,
    enable_flash_sdp,
    enable_math_sdp,
    flash_sdp_enabled,
    math_sdp_enabled,
)
from genesis.ndarray import NDArray, broadcast_shapes, contiguous_strides, view_strides

rt = runtime

_TT = {
    dtypes.bool_: "i1", dtypes.uint8: "u8", dtypes.int8: "i8", dtypes.int16: "i16", dtypes.int32: "i32",
    dtypes.int64: "i64", dtypes.float16: "fp16", dtypes.bfloat16: "bf16", dtypes.float32: "fp32",
    dtypes.float64: "fp64",
}
_PTR = {d: "*" + t for d, t in _TT.items()}
_PTR16 = {d: "*" + t + ":16" for d, t in _TT.items()}


def _np_dtype(d: dtypes.dtype) -> np.dtype:
    if d is dtypes.bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype("bool" if d is dtypes.bool_ else d.name)


# ---------------------------------------------------------------- arrays and pointers

_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _cstrides(shape: tuple[int, ...]) -> tuple[int, ...]:
    s = _STRIDES.get(shape)
    if s is None:
        if len(_STRIDES) > 8192:  # many distinct shapes (dynamic sequence lengths): start over
            _STRIDES.clear()
        s = _STRIDES[shape] = contiguous_strides(shape)
    return s


def _new(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    n = math.prod(shape)
    st = storage.alloc(n * dtype.itemsize, device.index)
    return NDArray(st, shape, _cstrides(shape), 0, dtype, device, True)


def _contig(x: NDArray) -> bool:
    c = x._native
    if c is None:
        c = x._native = x.is_contiguous()
    return c


def _ptr(x: NDArray) -> int:
    return x.buffer.ptr + x.offset * x.dtype.itemsize


def _psig(x: NDArray, ptr: int) -> str:
    return _PTR16[x.dtype] if ptr % 16 == 0 else _PTR[x.dtype]


def data_ptr(x: NDArray) -> int:
    """Device address of the view's first element."""
    return _ptr(x)


def _check_device(op: str, x: NDArray, *others: object) -> None:
    for o in others:
        if isinstance(o, NDArray) and o.device is not x.device:
            raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found at least two "
                               f"devices, {x.device} and {o.device}!")


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


def _istr(v: int) -> str:
    if v == 1:
        return "1"
    return "i64:16" if v % 16 == 0 else "i64"


def _split_rank4(shape: list[int], strides: list[list[int]], ptrs: list[int], itemsizes: list[int]):
    """Yield (shape4, strides4, ptrs) pieces with at most 4 dims: leading dims beyond 4 become a host loop."""
    extra = len(shape) - 4
    if extra <= 0:
        pad = 4 - len(shape)
        yield [1] * pad + shape, [[0] * pad + s for s in strides], ptrs
        return
    lead = shape[:extra]
    for flat in range(math.prod(lead)):
        idx = []
        r = flat
        for n in reversed(lead):
            idx.append(r % n)
            r //= n
        idx.reverse()
        moved = [p + sum(i * s for i, s in zip(idx, st[:extra])) * isz for p, st, isz in zip(ptrs, strides, itemsizes)]
        yield shape[extra:], [s[extra:] for s in strides], moved


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
    n = out.size
    if n == 0:
        return out
    if rt.state.device != out.device.index:
        rt.set_device(out.device.index)
    shape = out.shape
    fast = _contig(out)
    if fast and nin <= 2:
        a = ins[0]
        if a.__class__ is NDArray and a.shape == shape and _contig(a):
            # The common cases, kept short: contiguous same-shape operands, or a tensor and a Python number.
            b = ins[1] if nin == 2 else None
            if b is None:
                bkey, barg = None, 0
            elif b.__class__ is NDArray:
                if b.shape != shape or not _contig(b):
                    bkey = False
                else:
                    barg = _ptr(b)
                    bkey = b.dtype
            else:
                bkey, barg = _scalar_sig(b, scalar_dtype or out.dtype)
            optr, pa = _ptr(out), _ptr(a)
            # Only the all-aligned case is cached by dtype alone; other alignments take the general path.
            if bkey is not False and not ((optr | pa | (barg if bkey.__class__ is dtypes.dtype else 0)) & 15):
                key = (op, nin, out.dtype, a.dtype, bkey, n & 15 == 0, n >= 2**31 - 65536, out.device)
                go = _FAST.get(key)
                if go is None:
                    go = _FAST[key] = _contig_launcher(op, nin, out, optr, ins, (pa, barg)[:nin], n, scalar_dtype)[0]
                block = _CONTIG_CFG[out.dtype.itemsize][0]
                go((n + block - 1) // block, 1, 1, optr, pa, barg, 0, n)
                return out
    if fast:
        for x in ins:
            if isinstance(x, NDArray) and not ((x.shape == shape and _contig(x)) or x.size == 1):
                fast = False
                break
    if fast:
        optr = _ptr(out)
        ptrs = tuple(_ptr(x) if isinstance(x, NDArray) else 0 for x in ins)
        go, args = _contig_launcher(op, nin, out, optr, ins, ptrs, n, scalar_dtype)
        block = _CONTIG_CFG[out.dtype.itemsize][0]
        go((n + block - 1) // block, 1, 1, *args)
        return out
    tensors = [out] + [x for x in ins if isinstance(x, NDArray)]
    cshape, cstrides = _coalesce(shape, [list(out.strides)] + [_bstrides(x, shape) for x in tensors[1:]])
    ptrs = [_ptr(t) for t in tensors]
    for shape4, strides4, tptrs in _split_rank4(cshape, cstrides, ptrs, [t.dtype.itemsize for t in tensors]):
        R1, R2, C = shape4[1], shape4[2], shape4[3]
        n_rows = shape4[0] * R1 * R2
        block_r, block_c, warps = _tile(n_rows, C, out.dtype.itemsize)
        n_cblocks = (C + block_c - 1) // block_c
        types = [_psig(out, tptrs[0])]
        args = [tptrs[0]]
        modes = []
        op_strides = []
        k = 1
        for x in ins:
            if isinstance(x, NDArray):
                types.append(_psig(x, tptrs[k]))
                args.append(tptrs[k])
                op_strides.append(strides4[k])
                modes.append(1)
                k += 1
            else:
                ty, v = _scalar_sig(x, scalar_dtype or out.dtype)
                types.append(ty)
                args.append(v)
                op_strides.append([0, 0, 0, 0])
                modes.append(2)
        while len(modes) < 3:
            types.append("i32")
            args.append(0)
            modes.append(0)
            op_strides.append([0, 0, 0, 0])
        types += ["i32", "i32:16" if C % 16 == 0 else "i32", "i32", "i32", "i32"]
        args += [n_rows, C, R1, R2, n_cblocks]
        for st in [strides4[0]] + op_strides:
            s0, s1, s2, sc = st
            types += [_istr(s0), _istr(s1), _istr(s2), _istr(sc)]
            args += [s0, s1, s2, sc]
        go = _EW_STRIDED.launcher(tuple(types), (op, nin, modes[0], modes[1], modes[2], block_r, block_c), warps)
        go(((n_rows + block_r - 1) // block_r) * n_cblocks, 1, 1, *args)
    return out


# ---------------------------------------------------------------- memory and creation


def empty(shape: tuple[int, ...], dtype: dtypes.dtype, device: object) -> NDArray:
    return _new(tuple(shape), dtype, device)


def full(shape: tuple[int, ...], value: int | float | bool, dtype: dtypes.dtype, device: object) -> NDArray:
    out = _new(tuple(shape), dtype, device)
    if dtype.category == 1 and isinstance(value, float):
        value = int(value)
    return _ew("copy", 1, out, (value,))


_ARANGE = td.Kernel(ek.arange_kernel)


def arange(start: float, end: float, step: float, dtype: dtypes.dtype, device: object) -> NDArray:
    n = max(0, math.ceil((end - start) / step))
    out = _new((n,), dtype, device)
    if n:
        rt.ensure_device(device.index)
        if dtype.category == 2 or any(isinstance(v, float) for v in (start, step)):
            types, start, step = ("fp64", "fp64"), float(start), float(step)
        else:
            types, start, step = ("i64", "i64"), int(start), int(step)
        p = _ptr(out)
        go = _ARANGE.launcher((_psig(out, p), *types, "i32"), (1024,), 4)
        go((n + 1023) // 1024, 1, 1, p, start, step, n)
    return out


def from_numpy(array: np.ndarray, dtype: dtypes.dtype, device: object) -> NDArray:
    arr = array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)
    want = _np_dtype(dtype)
    if arr.dtype != want:
        if arr.dtype.itemsize == want.itemsize and dtype is dtypes.bfloat16:
            arr = arr.view(want)
        else:
            arr = arr.astype(want)
    out = _new(tuple(arr.shape), dtype, device)
    if arr.nbytes:
        storage.copy_from_host(out.buffer.ptr, arr, _stream())
    return out


def to_numpy(x: NDArray) -> np.ndarray:
    if not _contig(x):
        x = contiguous(x)
    arr = np.empty(x.shape, _np_dtype(x.dtype))
    if arr.nbytes:
        rt.ensure_device(x.device.index)
        s = _stream()
        rt.check(cu.cuMemcpyDtoHAsync(arr.ctypes.data, _ptr(x), arr.nbytes, s), "cuMemcpyDtoHAsync")
        rt.check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
    return arr


def copy_(dst: NDArray, src: NDArray | int | float | bool) -> NDArray:
    if isinstance(src, NDArray):
        _check_device("copy_", dst, src)
        if src.buffer is dst.buffer and src.size > 1:
            src = contiguous(src)  # overlapping views: read everything before writing
        return _ew("copy", 1, dst, (src,))
    return _ew("copy", 1, dst, (src,), dst.dtype)


def cast(x: NDArray, dtype: dtypes.dtype) -> NDArray:
    return _ew("copy", 1, _new(x.shape, dtype, x.device), (x,))


def contiguous(x: NDArray) -> NDArray:
    return _ew("copy", 1, _new(x.shape, x.dtype, x.device), (x,))


def to_dlpack(x: NDArray, stream: object = None, max_version: tuple[int, int] | None = None) -> object:
    from genesis.backends.cuda import dlpack

    # Only legacy (unversioned) capsules are produced; DLPack consumers accept them whatever max_version they name.
    return dlpack.to_dlpack(x, stream)


def from_dlpack(obj: object) -> NDArray:
    from genesis.backends.cuda import dlpack

    return dlpack.from_dlpack(obj)


# ---------------------------------------------------------------- elementwise

_BOOL_UNARY = frozenset(("isnan", "isinf", "logical_not", "signbit"))


def unary(op: str, x: NDArray, out: NDArray | None = None) -> NDArray:
    if out is None:
        out = _new(x.shape, dtypes.bool_ if op in _BOOL_UNARY else x.dtype, x.device)
    return _ew(op, 1, out, (x,))


def binary(op: str, a: NDArray, b: NDArray | int | float | bool, out: NDArray | None = None) -> NDArray:
    if out is None:
        if b.__class__ is NDArray:
            if b.device is not a.device:
                _check_device(op, a, b)
            shape = a.shape if a.shape == b.shape else broadcast_shapes(op, a.shape, b.shape)
        else:
            shape = a.shape
        out = _new(shape, dtypes.bool_ if op in COMPARISON_OPS else a.dtype, a.device)
    if op in ("floor_divide", "remainder") and a.dtype.category < 2:
        _check_nonzero_divisor(op, b)
    return _ew(op, 2, out, (a, b), a.dtype)


def _check_nonzero_divisor(op: str, b: NDArray | int | float | bool) -> None:
    # Integer division by zero is an error (as on the CPU); checking a tensor divisor synchronizes with the GPU.
    if isinstance(b, NDArray):
        zero = b.size and bool(to_numpy(reduce("any", binary("eq", b, 0), tuple(range(b.ndim)), False)))
    else:
        zero = b == 0
    if zero:
        raise RuntimeError(f"{op}: ZeroDivisionError (integer division by zero)")


def where(cond: NDArray, a: NDArray | float, b: NDArray | float) -> NDArray:
    _check_device("where", cond, a, b)
    shapes = [cond.shape] + [t.shape for t in (a, b) if isinstance(t, NDArray)]
    shape = broadcast_shapes("where", *shapes)
    dt = a.dtype if isinstance(a, NDArray) else b.dtype
    return _ew("where", 3, _new(shape, dt, cond.device), (cond, a, b), dt)


# ---------------------------------------------------------------- reductions

_RROWS = td.Kernel(rk.reduce_rows)
_RCOLS = td.Kernel(rk.reduce_cols)
_TILE = 4096  # elements per program of a row reduction (swept on an H200: 4096 beats 2048 and 8192)
_TILE_COLS = 8192  # elements per program of a column reduction (8192 beats 4096 there)


def _identity(op: str, dtype: dtypes.dtype) -> int | float:
    if op in ("sum", "any"):
        return 0
    if op in ("prod", "all"):
        return 1
    big = op == "amin"
    if dtype.category == 2:
        return math.inf if big else -math.inf
    if dtype is dtypes.bool_:
        return 1 if big else 0
    info = np.iinfo(dtype.name)
    return int(info.max) if big else int(info.min)


def _acc_dtype(op: str, dtype: dtypes.dtype) -> dtypes.dtype:
    if op in ("any", "all") or dtype is dtypes.bool_:
        return dtypes.int32
    if dtype in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return dtype


def _as_2d(x: NDArray, kept: list[int], red: list[int]) -> tuple[NDArray, int, int, int, int]:
    """View x as (M kept, K reduced) with strides (sm, sk); copy to contiguous when the dims do not merge."""
    M = math.prod(x.shape[d] for d in kept)
    K = math.prod(x.shape[d] for d in red)
    ms = view_strides(tuple(x.shape[d] for d in kept), tuple(x.strides[d] for d in kept), (M,)) if kept else (0,)
    ks = view_strides(tuple(x.shape[d] for d in red), tuple(x.strides[d] for d in red), (K,)) if red else (0,)
    if ms is None or ks is None:
        x = contiguous(x.permute(kept + red))
        return x, M, K, K, 1
    return x, M, K, ms[0] if M > 1 else K, ks[0] if K > 1 else 1


def _reduce_2d(op: str, x: NDArray, M: int, K: int, sm: int, sk: int, out: NDArray) -> None:
    """out[m] = op over k of x[m*sm + k*sk] (out contiguous, M elements)."""
    ident = _identity(op, x.dtype)
    ity, ival = _scalar_sig(ident, x.dtype)
    if ity == "i64" and x.dtype is dtypes.uint8:
        ity = "i32"
    sms = rt.multiprocessor_count()
    p = _ptr(x)
    if sk != 1 and sm == 1 and M > 1:
        # Reduced axis outer, kept axis contiguous: column reduction, split over K when the columns are few.
        block_n = min(_next_pow2(M), 256 if x.dtype.itemsize >= 4 else 512)
        block_k = min(max(1, _TILE_COLS // block_n), _next_pow2(K))
        grid_n = (M + block_n - 1) // block_n
        n_split = max(1, min((K + block_k - 1) // block_k, (4 * sms + grid_n - 1) // grid_n))
        kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
        n_split = (K + kps - 1) // kps
        dst = out if n_split == 1 else _new((n_split, M), _acc_dtype(op, x.dtype), x.device)
        dp = _ptr(dst)
        go = _RCOLS.launcher((_psig(x, p), _psig(dst, dp), "i32", "i32:16" if M % 16 == 0 else "i32", _istr(sk),
                              "1", "i32", ity), (op, block_k, block_n), 4)
        go(grid_n, n_split, 1, p, dp, K, M, sk, 1, kps, ival)
        if n_split > 1:
            _reduce_2d(_merge_op(op), dst, M, n_split, 1, M, out)
        return
    block_k = min(_next_pow2(K), _TILE)
    block_m = min(max(1, _TILE // block_k), _next_pow2(M))
    grid_m = (M + block_m - 1) // block_m
    n_split = 1
    if grid_m < 2 * sms and K >= 8 * block_k:
        n_split = min((K + block_k - 1) // block_k, (4 * sms + grid_m - 1) // grid_m)
    kps = ((K + n_split - 1) // n_split + block_k - 1) // block_k * block_k
    n_split = (K + kps - 1) // kps
    dst = out if n_split == 1 else _new((M, n_split), _acc_dtype(op, x.dtype), x.device)
    dp = _ptr(dst)
    warps = 8 if block_m * block_k >= 4096 else 4
    go = _RROWS.launcher((_psig(x, p), _psig(dst, dp), "i32", "i32", _istr(sm), _istr(sk), "i32", "i32", ity),
                         (op, block_m, block_k), warps)
    go(grid_m, n_split, 1, p, dp, M, K, sm, sk, kps, n_split, ival)
    if n_split > 1:
        _reduce_2d(_merge_op(op), dst, M, n_split, n_split, 1, out)


def _merge_op(op: str) -> str:
    return {"any": "amax", "all": "amin"}.get(op, op)


def reduce(op: str, x: NDArray, dims: tuple[int, ...], keepdim: bool) -> NDArray:
    out_dtype = dtypes.bool_ if op in ("any", "all") and x.dtype is not dtypes.uint8 else x.dtype
    if not dims:
        return cast(x, out_dtype)
    kept = [d for d in range(x.ndim) if d not in dims]
    red = list(dims)
    shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape)) if keepdim else \
        tuple(x.shape[d] for d in kept)
    out = _new(shape, out_dtype, x.device)
    M = out.size
    K = math.prod(x.shape[d] for d in red)
    if M == 0:
        return out
    if K == 0:
        if op in ("amax", "amin"):
            raise IndexError(f"{op}(): Expected reduction dim {red[0]} to have non-zero size.")
        return _ew("copy", 1, out, (_identity(op, out_dtype),), out_dtype)
    rt.ensure_device(x.device.index)
    xx, M, K, sm, sk = _as_2d(x, kept, red)
    _reduce_2d(op, xx, M, K, sm, sk, out)
    return out


_ARG = td.Kernel(rk.arg_reduce_rows)
_ARG_CFG = (1024, 8)  # (elements per program, warps) of arg-reductions (1024 beat 2048 and 4096 on an H200)


def arg_reduce(op: str, x: NDArray, dim: int, keepdim: bool) -> NDArray:
    if x.ndim == 0:
        return full((), 0, dtypes.int64, x.device)
    if x.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
    kept = [d for d in range(x.ndim) if d != dim]
    shape = tuple(1 if d == dim else n for d, n in enumerate(x.shape)) if keepdim else \
        tuple(x.shape[d] for d in kept)
    out = _new(shape, dtypes.int64, x.device)
    if out.size == 0:
        return out
    rt.ensure_device(x.device.index)
    xx, M, K, sm, sk = _as_2d(x, kept, [dim])
    tile, big_warps = _ARG_CFG
    block_k = min(_next_pow2(K), tile)
    block_m = min(max(1, tile // block_k), _next_pow2(M))
    p, op_ = _ptr(xx), _ptr(out)
    warps = big_warps if block_m * block_k >= 2048 else 4
    go = _ARG.launcher((_psig(xx, p), _psig(out, op_), "i32", "i32", _istr(sm), _istr(sk)),
                       (op == "argmax", block_m, block_k), warps)
    go((M + block_m - 1) // block_m, 1, 1, p, op_, M, K, sm, sk)
    return out


_SCAN_ROWS = td.Kernel(rk.scan_rows)
_SCAN_COLS = td.Kernel(rk.scan_cols)


def cumulative(op: str, x: NDArray, dim: int) -> NDArray:
    out_dtype = x.dtype  # the layer above chose the dtype (torch would widen integers)
    if x.ndim == 0:
        return cast(x, out_dtype)
    out = _new(x.shape, out_dtype, x.device)
    if out.size == 0:
        return out
    rt.ensure_device(x.device.index)
    x = x if _contig(x) else contiguous(x)
    K = x.shape[dim]
    inner = math.prod(x.shape[dim + 1:])
    outer = math.prod(x.shape[:dim])
    p, q = _ptr(x), _ptr(out)
    if inner == 1:
        block_k = min(_next_pow2(K), 1024)
        block_m = min(max(1, 1024 // block_k), _next_pow2(outer))
        go = _SCAN_ROWS.launcher((_psig(x, p), _psig(out, q), "i32", "i32"), (op, block_m, block_k), 4)
        go((outer + block_m - 1) // block_m, 1, 1, p, q, outer, K)
    else:
        block_n = min(_next_pow2(inner), 512)
        n_blocks = (inner + block_n - 1) // block_n
        go = _SCAN_COLS.launcher((_psig(x, p), _psig(out, q), "i32", "i32", "i32"), (op, block_n), 4)
        go(n_blocks * outer, 1, 1, p, q, K, inner, n_blocks)
    return out


_SOFTMAX = td.Kernel(rk.softmax_rows)
_SOFTMAX64 = td.Kernel(rk.softmax_rows64)


def softmax(x: NDArray, dim: int, log: bool) -> NDArray:
    if x.ndim == 0:
        return full((), 0.0 if log else 1.0, x.dtype, x.device)
    last = x.ndim - 1
    xt = x if dim == last else x.transpose(dim, last)
    xt = xt if _contig(xt) else contiguous(xt)
    out = _new(xt.shape, x.dtype, x.device)
    K = xt.shape[-1]
    M = xt.size // K if K else 0
    if M and K:
        rt.ensure_device(x.device.index)
        p, q = _ptr(xt), _ptr(out)
        sig = (_psig(xt, p), _psig(out, q), "i32", "i32")
        if x.dtype is dtypes.float64:
            go = _SOFTMAX64.launcher(sig, (log, min(_next_pow2(K), 1024)), 4)
        elif K <= 8192:
            block = _next_pow2(K)
            go = _SOFTMAX.launcher(sig, (log, block, True), 4 if block <= 1024 else 8 if block <= 4096 else 16)
        else:
            go = _SOFTMAX.launcher(sig, (log, 2048, False), 8)
        go(M, 1, 1, p, q, M, K)
    if dim != last:
        out = contiguous(out.transpose(dim, last))
    return out


# ---------------------------------------------------------------- linear algebra


class _Matmul:
    """The ``matmul`` primitive. As ``genesis.backends.cuda.matmul`` it also carries the switch of
    ``torch.backends.cuda.matmul``: ``allow_tf32`` lets float32 products use TF32 tensor cores (off by default)."""

    def __call__(self, a: NDArray, b: NDArray) -> NDArray:
        from genesis.backends.cuda import blas

        return blas.matmul(a, b)

    @property
    def allow_tf32(self) -> bool:
        return cuda_switches.matmul.allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, flag: bool) -> None:
        cuda_switches.matmul.allow_tf32 = bool(flag)


matmul = _Matmul()


def linear(x: NDArray, w: NDArray, bias: NDArray | None) -> NDArray:
    from genesis.backends.cuda import blas

    if bias is None:
        return blas.matmul(x, w.transpose(0, 1))
    # cuBLASLt's bias epilogue adds the bias before the output is rounded: one kernel instead of two. It takes a
    # dense bias of the output's dtype at an aligned address; anything else gets a separate add.
    if x.dtype in blas._DATA and bias.dtype is x.dtype and bias.strides[-1] == 1 and _ptr(bias) % 16 == 0 \
            and x.shape[1]:
        return blas.linear(x, w, bias)
    out = blas.matmul(x, w.transpose(0, 1))
    return binary("add", out, bias, out=out)


# ---------------------------------------------------------------- indexing

_GATHER = td.Kernel(ik.gather_kernel)
_SCATTER = td.Kernel(ik.scatter_kernel)


def _index_launch(kernel: td.Kernel, shape: tuple[int, ...], first: NDArray, first_strides: list[int],
                  second: NDArray | int | float, second_strides: list[int], idx: NDArray, idx_strides: list[int],
                  dim_stride: int, consts: tuple, second_dtype: dtypes.dtype) -> None:
    """Launch gather (first=out, second=src) or scatter (first=dst, second=src) over ``shape``."""
    n = math.prod(shape)
    if n == 0:
        return
    rt.ensure_device(idx.device.index)
    tensors = [first, second, idx] if isinstance(second, NDArray) else [first, idx]
    strides = [first_strides, second_strides, idx_strides] if isinstance(second, NDArray) else \
        [first_strides, idx_strides]
    cshape, cstrides = _coalesce(shape, [list(s) for s in strides])
    ptrs = [_ptr(t) for t in tensors]
    for shape4, strides4, tptrs in _split_rank4(cshape, cstrides, ptrs, [t.dtype.itemsize for t in tensors]):
        R1, R2, C = shape4[1], shape4[2], shape4[3]
        n_rows = shape4[0] * R1 * R2
        block_r, block_c, warps = _tile(n_rows, C, 4)
        n_cblocks = (C + block_c - 1) // block_c
        if isinstance(second, NDArray):
            fp, sp, ip = tptrs
            fs, ss, is_ = strides4
            stype, sval = _psig(second, sp), sp
        else:
            fp, ip = tptrs
            fs, is_ = strides4
            ss = [0, 0, 0, 0]
            stype, sval = _scalar_sig(second, second_dtype)
        types = [_psig(first, fp), stype, _psig(idx, ip), "i32", "i32", "i32", "i32", "i32"]
        args = [fp, sval, ip, n_rows, C, R1, R2, n_cblocks]
        for st in (fs, ss, is_):
            types += [_istr(v) for v in st]
            args += list(st)
        types.append(_istr(dim_stride))
        args.append(dim_stride)
        row_index = is_[3] == 0  # one index per row: the indexed rows are read with wide contiguous loads
        go = kernel.launcher(tuple(types), consts + (row_index, block_r, block_c), warps)
        go(((n_rows + block_r - 1) // block_r) * n_cblocks, 1, 1, *args)


def _pos_strides(x: NDArray, shape: tuple[int, ...], dim: int | None) -> list[int]:
    return [0 if d == dim or (x.shape[d] == 1 and n != 1) else x.strides[d] for d, n in enumerate(shape)]


def gather(x: NDArray, dim: int, index: NDArray) -> NDArray:
    _check_device("gather", x, index)
    out = _new(index.shape, x.dtype, x.device)
    if x.ndim == 0:
        return _ew("copy", 1, out, (x,))
    _index_launch(_GATHER, index.shape, out, list(out.strides), x, _pos_strides(x, index.shape, dim), index,
                  list(index.strides), x.strides[dim], (), x.dtype)
    return out


def index_select(x: NDArray, dim: int, index: NDArray) -> NDArray:
    _check_device("index_select", x, index)
    if x.ndim == 0:
        return gather(x, 0, index.reshape(()) if index.ndim else index)
    shape = x.shape[:dim] + (index.size,) + x.shape[dim + 1:]
    out = _new(shape, x.dtype, x.device)
    flat = index.reshape((index.size,))
    istr = [0] * len(shape)
    istr[dim] = flat.strides[0] if flat.ndim else 0
    _index_launch(_GATHER, shape, out, list(out.strides), x, _pos_strides(x, shape, dim), flat, istr,
                  x.strides[dim], (), x.dtype)
    return out


def _flat_offsets(x: NDArray, indices: tuple, shape: tuple[int, ...] | None = None) -> NDArray:
    """int64 element offsets (relative to x's first element) for one index array per dim."""
    off = None
    for d, ix in enumerate(indices):
        if x.strides[d] == 0 or x.shape[d] == 1:
            continue
        term = binary("mul", ix, x.strides[d])
        off = term if off is None else binary("add", off, term)
    if off is None:
        shp = broadcast_shapes("index", *[i.shape for i in indices]) if shape is None else shape
        off = full(shp, 0, dtypes.int64, x.device)
    return off


def index(x: NDArray, indices: tuple) -> NDArray:
    from genesis.ndarray import full_indices

    _check_device("index", x, *[i for i in indices if i is not None])
    full_ix = full_indices(x.shape, indices)
    shape = broadcast_shapes("index", *[i.shape for i in full_ix])
    off = _flat_offsets(x, full_ix, shape)
    if off.shape != shape:
        off = contiguous(off.expand(shape))
    out = _new(shape, x.dtype, x.device)
    zeros = [0] * len(shape)
    _index_launch(_GATHER, shape, out, list(out.strides), x, zeros, off, _bstrides(off, shape), 1, (), x.dtype)
    return out


_ATOMIC_DTYPES = frozenset((dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32,
                            dtypes.int64))


def _host_fallback_put(x: NDArray, offsets: NDArray, values: NDArray, accumulate: bool) -> None:
    # Atomics exist for 16/32/64-bit floats and 32/64-bit ints only; other dtypes accumulate on the host.
    base = x if _contig(x) else contiguous(x)
    host = to_numpy(base).reshape(-1).copy()
    offs = to_numpy(offsets).reshape(-1)
    vals = np.broadcast_to(to_numpy(values), offsets.shape).reshape(-1)
    np.add.at(host, offs, vals) if accumulate else host.__setitem__(offs, vals)
    copy_(x, from_numpy(host.reshape(x.shape), x.dtype, x.device))


def index_put_(x: NDArray, indices: tuple, values: NDArray, accumulate: bool) -> NDArray:
    _check_device("index_put_", x, values, *indices)
    shape = broadcast_shapes("index_put_", values.shape, *[i.shape for i in indices])
    if x.ndim == 0:
        return copy_(x, values.reshape(()) if values.size == 1 else values) if values.size else x
    if values.buffer is x.buffer:
        values = contiguous(values)
    if not _contig(x):
        # Offsets are computed for a contiguous layout of x, written back through the view afterwards.
        tmp = contiguous(x)
        index_put_(tmp, indices, values, accumulate)
        return copy_(x, tmp)
    off = _flat_offsets(x, indices, shape)
    if accumulate and x.dtype not in _ATOMIC_DTYPES:
        _host_fallback_put(x, off, values, True)
        return x
    zeros = [0] * len(shape)
    if accumulate:
        _index_launch(_SCATTER, shape, x, zeros, values, _bstrides(values, shape), off, _bstrides(off, shape), 1,
                      (1, 1), x.dtype)
        return x
    # Plain assignment with repeated indices: the last write in index order wins, as in a sequential loop (and on
    # the CPU). An atomic max of each write's position picks the winner; the others go to a spill slot.
    n = math.prod(shape)
    dev = x.device
    pos = arange(0, n, 1, dtypes.int64, dev).reshape(shape)
    winner = full((x.size,), -1, dtypes.int64, dev)
    off_strides = _bstrides(off, shape)
    _index_launch(_SCATTER, shape, winner, zeros, pos, list(pos.strides), off, off_strides, 1, (2, 1), dtypes.int64)
    won = _new(shape, dtypes.int64, dev)
    _index_launch(_GATHER, shape, won, list(won.strides), winner, zeros, off, off_strides, 1, (), dtypes.int64)
    target = where(binary("eq", won, pos), off if off.shape == shape else contiguous(off.expand(shape)), x.size)
    spill = _new((x.size + 1,), x.dtype, dev)
    flat = x.reshape((x.size,))
    copy_(spill.narrow(0, 0, x.size), flat)
    _index_launch(_SCATTER, shape, spill, zeros, values, _bstrides(values, shape), target, list(target.strides), 1,
                  (0, 1), x.dtype)
    copy_(flat, spill.narrow(0, 0, x.size))
    return x


def scatter(x: NDArray, dim: int, index: NDArray, src: NDArray | float, mode: str) -> NDArray:
    _check_device("scatter", x, index, src)
    out = contiguous(x)
    if index.size == 0:
        return out
    if x.ndim == 0:
        return _ew("copy", 1, out, (src,), x.dtype) if mode == "set" else binary("add", out, src)
    if isinstance(src, NDArray):
        if src.ndim != index.ndim or any(index.shape[d] > src.shape[d] or (d != dim and index.shape[d] > x.shape[d])
                                         for d in range(index.ndim)):
            raise RuntimeError(f"scatter(): Expected index {list(index.shape)} to be smaller than self "
                               f"{list(x.shape)} apart from dimension {dim} and to be smaller size than src "
                               f"{list(src.shape)}")
    add = mode == "add"
    if add and x.dtype not in _ATOMIC_DTYPES:
        return _scatter_host(out, dim, index, src, add)
    shape = index.shape
    dst_pos = [0 if d == dim else out.strides[d] for d in range(len(shape))]
    if isinstance(src, NDArray):
        _index_launch(_SCATTER, shape, out, dst_pos, src, _pos_strides(src, shape, None), index,
                      list(index.strides), out.strides[dim], (int(add), 1), x.dtype)
    else:
        _index_launch(_SCATTER, shape, out, dst_pos, src, [0] * len(shape), index, list(index.strides),
                      out.strides[dim], (int(add), 2), x.dtype)
    return out


def _scatter_host(out: NDArray, dim: int, index: NDArray, src: NDArray | float, add: bool) -> NDArray:
    host = to_numpy(out).copy()
    idx = to_numpy(index)
    vals = to_numpy(src) if isinstance(src, NDArray) else np.full(idx.shape, src, host.dtype)
    vals = vals[tuple(slice(0, n) for n in idx.shape)]
    coords = list(np.indices(idx.shape))
    coords[dim] = idx
    if add:
        np.add.at(host, tuple(coords), vals)
    else:
        host[tuple(coords)] = vals
    return from_numpy(host, out.dtype, out.device)


def nonzero(x: NDArray) -> NDArray:
    mask = x if x.dtype is dtypes.bool_ else binary("ne", x, 0 if x.dtype.category < 2 else 0.0)
    flat = contiguous(mask).reshape((mask.size,)) if not _contig(mask) else mask.reshape((mask.size,))
    counts = cumulative("cumsum", cast(flat, dtypes.int64), 0) if flat.size else flat
    n = int(to_numpy(counts.narrow(0, flat.size - 1, 1))[0]) if flat.size else 0
    out = _new((n, x.ndim), dtypes.int64, x.device)
    if n == 0:
        return out
    lin = _new((n,), dtypes.int64, x.device)
    # Position i goes to slot counts[i] - 1 where the mask is set: a scatter of arange through the scan.
    slots = binary("sub", counts, 1)
    ar = arange(0, flat.size, 1, dtypes.int64, x.device)
    masked_slots = where(flat, slots, full((), n, dtypes.int64, x.device))
    spill = _new((n + 1,), dtypes.int64, x.device)
    _index_launch(_SCATTER, (flat.size,), spill, [0], ar, [1], masked_slots, [1], 1, (0, 1), dtypes.int64)
    copy_(lin, spill.narrow(0, 0, n))
    rem = lin
    for d in range(x.ndim - 1, -1, -1):
        col = out.as_strided((n,), (x.ndim,), d)
        size = x.shape[d]
        copy_(col, binary("remainder", rem, size))
        rem = binary("floor_divide", rem, size)
    return out


_SORT = td.Kernel(ik.sort_rows_kernel)


def sort(x: NDArray, dim: int, descending: bool, stable: bool) -> tuple[NDArray, NDArray]:
    """Stable sort along ``dim``: rows of up to 4096 elements of 32-bit or narrower types sort on the GPU (one row
    per program); longer rows and 64-bit types sort on the host (numpy, stable)."""
    K = x.shape[dim] if x.ndim else 1
    if x.ndim and x.size and x.dtype.itemsize <= 4 and K <= 4096:
        last = x.ndim - 1
        xt = x if dim == last else x.transpose(dim, last)
        xt = xt if _contig(xt) else contiguous(xt)
        values, order = _new(xt.shape, x.dtype, x.device), _new(xt.shape, dtypes.int64, x.device)
        p, q, r = _ptr(xt), _ptr(values), _ptr(order)
        block = _next_pow2(K)
        go = _SORT.launcher((_psig(xt, p), _psig(values, q), _psig(order, r), "i32"), (bool(descending), block),
                            4 if block <= 1024 else 8)
        rt.ensure_device(x.device.index)
        go(xt.size // K, 1, 1, p, q, r, K)
        if dim != last:
            values, order = contiguous(values.transpose(dim, last)), contiguous(order.transpose(dim, last))
        return values, order
    host = to_numpy(x)
    if host.ndim == 0:
        return from_numpy(host, x.dtype, x.device), full((), 0, dtypes.int64, x.device)
    key = host.astype(np.float32) if x.dtype is dtypes.bfloat16 else host
    if descending:
        if x.dtype.category == 2:
            order = np.flip(np.argsort(np.flip(key, dim), axis=dim, kind="stable"), dim)
            order = key.shape[dim] - 1 - order
        elif x.dtype is dtypes.bool_:
            order = np.argsort(~key, axis=dim, kind="stable")
        else:
            order = np.argsort(-key.astype(np.int64) if x.dtype.itemsize < 8 else ~key, axis=dim, kind="stable")
    else:
        order = np.argsort(key, axis=dim, kind="stable")
    values = np.take_along_axis(host, order, dim)
    return from_numpy(values, x.dtype, x.device), from_numpy(order.astype(np.int64), dtypes.int64, x.device)


def unique(x: NDArray, return_inverse: bool, return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    """Sorted unique values: on the GPU when the flattened array sorts in one row (see ``sort``), else on the host.
    NaNs count as one value (as numpy and the CPU path)."""
    n = x.size
    if 1 < n <= 4096 and x.dtype.itemsize <= 4:
        return _unique_gpu(x, n, return_inverse, return_counts)
    host = to_numpy(x).reshape(-1)
    key = host.astype(np.float32) if x.dtype is dtypes.bfloat16 else host
    values, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    values = host[first]
    inv = from_numpy(inverse.reshape(x.shape).astype(np.int64), dtypes.int64, x.device) if return_inverse else None
    cnt = from_numpy(counts.astype(np.int64), dtypes.int64, x.device) if return_counts else None
    return from_numpy(values, x.dtype, x.device), inv, cnt


def _unique_gpu(x: NDArray, n: int, return_inverse: bool,
                return_counts: bool) -> tuple[NDArray, NDArray | None, NDArray | None]:
    dev = x.device
    flat = x.reshape((n,)) if _contig(x) else contiguous(x).reshape((n,))
    values, order = sort(flat, 0, False, True)
    cur, prev = values.narrow(0, 1, n - 1), values.narrow(0, 0, n - 1)
    new_value = binary("ne", cur, prev)
    if x.dtype.category == 2:
        both_nan = binary("logical_and", unary("isnan", cur), unary("isnan", prev))
        new_value = binary("logical_and", new_value, unary("logical_not", both_nan))
    starts = full((n,), True, dtypes.bool_, dev)
    copy_(starts.narrow(0, 1, n - 1), new_value)
    group = binary("sub", cumulative("cumsum", cast(starts, dtypes.int64), 0), 1)  # group id of each sorted element
    m = int(to_numpy(group.narrow(0, n - 1, 1))[0]) + 1
    # The first element of each group goes to its slot; the others to a spill slot past the end.
    spill = _new((m + 1,), x.dtype, dev)
    target = where(starts, group, m)
    _index_launch(_SCATTER, (n,), spill, [0], values, [1], target, [1], 1, (0, 1), x.dtype)
    uniq = contiguous(spill.narrow(0, 0, m))
    inverse = counts = None
    if return_inverse:
        inverse = _new((n,), dtypes.int64, dev)
        _index_launch(_SCATTER, (n,), inverse, [0], group, [1], order, [1], 1, (0, 1), dtypes.int64)
        inverse = inverse.reshape(x.shape)
    if return_counts:
        counts = full((m,), 0, dtypes.int64, dev)
        _index_launch(_SCATTER, (n,), counts, [0], 1, [0], group, [1], 1, (1, 2), dtypes.int64)
    return uniq, inverse, counts


_SEARCH = td.Kernel(ik.searchsorted_kernel)


def searchsorted(seq: NDArray, values: NDArray, right: bool) -> NDArray:
    _check_device("searchsorted", seq, values)
    out = _new(values.shape, dtypes.int64, values.device)
    if out.size == 0:
        return out
    seq = seq if _contig(seq) else contiguous(seq)
    vals = values if _contig(values) else contiguous(values)
    K = seq.shape[-1] if seq.ndim else 1
    V = vals.shape[-1] if vals.ndim else 1
    rows_per_seq = 0 if seq.ndim <= 1 else 1
    p, q, r = _ptr(seq), _ptr(vals), _ptr(out)
    steps = max(1, K.bit_length() + 1)
    go = _SEARCH.launcher((_psig(seq, p), _psig(vals, q), _psig(out, r), "i32", "i32", "i32", "i32"),
                          (right, steps, 256), 4)
    rt.ensure_device(values.device.index)
    go((out.size + 255) // 256, 1, 1, p, q, r, out.size, K, rows_per_seq, V)
    return out


# ---------------------------------------------------------------- neural network (see nn.py)


def conv(x: NDArray, w: NDArray, bias: NDArray | None, stride: tuple, padding: tuple, dilation: tuple, groups: int,
         transposed: bool, output_padding: tuple) -> NDArray:
    from genesis.backends.cuda import nn

    _check_device("conv", x, w, bias)
    return nn.conv(x, w, bias, stride, padding, dilation, groups, transposed, output_padding)


def conv_backward(grad: NDArray, x: NDArray, w: NDArray, stride: tuple, padding: tuple, dilation: tuple, groups: int,
                  transposed: bool, output_padding: tuple, output_mask: tuple) -> tuple:
    from genesis.backends.cuda import nn

    return nn.conv_backward(grad, x, w, stride, padding, dilation, groups, transposed, output_padding, output_mask)


def pool(x: NDArray, mode: str, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, ceil_mode: bool,
         count_include_pad: bool, divisor_override: int | None) -> tuple[NDArray, NDArray | None]:
    from genesis.backends.cuda import nn_layers

    _check_device("pool", x)
    return nn_layers.pool(x, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override)


def pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str, kernel: tuple, stride: tuple,
                  padding: tuple, dilation: tuple, ceil_mode: bool, count_include_pad: bool,
                  divisor_override: int | None) -> NDArray:
    from genesis.backends.cuda import nn_layers

    return nn_layers.pool_backward(grad, x, indices, mode, kernel, stride, padding, dilation, ceil_mode,
                                   count_include_pad, divisor_override)


def adaptive_pool(x: NDArray, mode: str, output_size: tuple) -> tuple[NDArray, NDArray | None]:
    from genesis.backends.cuda import nn_layers

    return nn_layers.adaptive_pool(x, mode, output_size)


def adaptive_pool_backward(grad: NDArray, x: NDArray, indices: NDArray | None, mode: str) -> NDArray:
    from genesis.backends.cuda import nn_layers

    return nn_layers.adaptive_pool_backward(grad, x, indices, mode)


def batch_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, running_mean: NDArray | None,
               running_var: NDArray | None, training: bool, momentum: float, eps: float) -> tuple:
    from genesis.backends.cuda import nn_layers

    _check_device("batch_norm", x, weight, bias, running_mean, running_var)
    return nn_layers.batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)


def batch_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, running_mean: NDArray | None,
                        running_var: NDArray | None, save_mean: NDArray, save_invstd: NDArray, training: bool,
                        eps: float, output_mask: tuple) -> tuple:
    from genesis.backends.cuda import nn_layers

    return nn_layers.batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                                         training, eps, output_mask)


def group_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, num_groups: int,
               eps: float) -> tuple[NDArray, NDArray, NDArray]:
    from genesis.backends.cuda import nn_layers

    _check_device("group_norm", x, weight, bias)
    return nn_layers.group_norm(x, weight, bias, num_groups, eps)


def group_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray,
                        num_groups: int, output_mask: tuple) -> tuple:
    from genesis.backends.cuda import nn_layers

    return nn_layers.group_norm_backward(grad, x, weight, mean, rstd, num_groups, output_mask)


def upsample(x: NDArray, output_size: tuple, mode: str, align_corners: bool | None, scales: tuple) -> NDArray:
    from genesis.backends.cuda import nn_layers

    return nn_layers.upsample(x, output_size, mode, align_corners, scales)


def upsample_backward(grad: NDArray, input_size: tuple, mode: str, align_corners: bool | None,
                      scales: tuple) -> NDArray:
    from genesis.backends.cuda import nn_layers

    return nn_layers.upsample_backward(grad, input_size, mode, align_corners, scales)


def embedding_backward(grad: NDArray, index: NDArray, num_weights: int) -> NDArray:
    from genesis.backends.cuda import nn_layers

    _check_device("embedding_backward", grad, index)
    return nn_layers.embedding_backward(grad, index, num_weights)


# ---------------------------------------------------------------- random

_RANDOM = td.Kernel(rk_random.random_kernel)
_ONE_BELOW = {dtypes.float16: 0.99951171875, dtypes.bfloat16: 0.99609375}


def _random(dist: str, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int,
            low: int = 0, span: int = 1) -> NDArray:
    out = _new(tuple(shape), dtype, device)
    n = out.size
    if n:
        rt.ensure_device(device.index)
        p = _ptr(out)
        go = _RANDOM.launcher((_psig(out, p), "i64", "u64", "i64", "i64", "u64"),
                              (dist, _ONE_BELOW.get(dtype, 0.99999994), 1024), 4)
        go((n + 1023) // 1024, 1, 1, p, n, seed % (1 << 64), offset, low, span)
    return out


def uniform(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _random("uniform", shape, dtype, device, seed, offset)


def normal(shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int, offset: int) -> NDArray:
    return _random("normal", shape, dtype, device, seed, offset)


_DROPOUT = td.Kernel(rk_random.dropout_kernel)


def dropout(x: NDArray, p: float, seed: int, offset: int) -> NDArray:
    x = x if _contig(x) else contiguous(x)  # element i is the i-th in row-major order, for x and its gradient
    out = _new(x.shape, x.dtype, x.device)
    n = out.size
    if n:
        rt.ensure_device(x.device.index)
        px, po = _ptr(x), _ptr(out)
        go = _DROPOUT.launcher((_psig(x, px), _psig(out, po), "i64", "u64", "i64", "fp32", "fp32"), (1024,), 4)
        go((n + 1023) // 1024, 1, 1, px, po, n, seed % (1 << 64), offset, p, 1.0 / (1.0 - p))
    return out


def randint(low: int, high: int, shape: tuple[int, ...], dtype: dtypes.dtype, device: object, seed: int,
            offset: int) -> NDArray:
    return _random("randint", shape, dtype, device, seed, offset, low, high - low)


def synchronize(device: object = None) -> None:
    rt.synchronize(None if device is None or getattr(device, "index", None) is None else device.index)


# ---------------------------------------------------------------- fused neural-network kernels (see nn_fused.py)


def softmax_backward(grad: NDArray, out: NDArray, dim: int, log: bool) -> NDArray:
    from genesis.backends.cuda import nn_fused

    return nn_fused.softmax_backward(grad, out, dim, log)


def layer_norm(x: NDArray, weight: NDArray | None, bias: NDArray | None, eps: float, rms: bool) -> tuple:
    from genesis.backends.cuda import nn_fused

    _check_device("layer_norm", x, weight, bias)
    return nn_fused.layer_norm(x, weight, bias, eps, rms)


def layer_norm_backward(grad: NDArray, x: NDArray, weight: NDArray | None, mean: NDArray, rstd: NDArray, rms: bool,
                        output_mask: tuple, bias_dtype: dtypes.dtype | None = None) -> tuple:
    from genesis.backends.cuda import nn_fused

    return nn_fused.layer_norm_backward(grad, x, weight, mean, rstd, rms, output_mask, bias_dtype)


def cross_entropy(x: NDArray, target: NDArray, ignore_index: int, label_smoothing: float) -> tuple:
    from genesis.backends.cuda import nn_fused

    _check_device("cross_entropy", x, target)
    return nn_fused.cross_entropy(x, target, ignore_index, label_smoothing)


def cross_entropy_backward(grad: NDArray, x: NDArray, target: NDArray, lse: NDArray, ignore_index: int,
                           label_smoothing: float) -> NDArray:
    from genesis.backends.cuda import nn_fused

    return nn_fused.cross_entropy_backward(grad, x, target, lse, ignore_index, label_smoothing)


def swiglu(gate: NDArray, up: NDArray) -> NDArray:
    from genesis.backends.cuda import nn_fused

    _check_device("swiglu", gate, up)
    return nn_fused.swiglu(gate, up)


def swiglu_backward(grad: NDArray, gate: NDArray, up: NDArray) -> tuple:
    from genesis.backends.cuda import nn_fused

    return nn_fused.swiglu_backward(grad, gate, up)


def rope(x: NDArray, cos: NDArray, sin: NDArray, inverse: bool) -> NDArray:
    from genesis.backends.cuda import nn_fused

    _check_device("rope", x, cos, sin)
    return nn_fused.rope(x, cos, sin, inverse)


def attention(q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, is_causal: bool, scale: float) -> tuple:
    from genesis.backends.cuda import sdpa

    _check_device("attention", q, k, v, mask)
    return sdpa.attention(q, k, v, mask, is_causal, scale)


def attention_backward(grad: NDArray, q: NDArray, k: NDArray, v: NDArray, mask: NDArray | None, out: NDArray,
                       lse: NDArray, is_causal: bool, scale: float) -> tuple:
    from genesis.backends.cuda import sdpa

    return sdpa.attention_backward(grad, q, k, v, mask, out, lse, is_causal, scale)


def kv_cache_write_(cache: NDArray, new: NDArray, position: NDArray) -> None:
    from genesis.backends.cuda import nn_decode

    _check_device("kv_cache_write_", cache, new, position)
    nn_decode.kv_cache_write_(cache, new, position)


def rope_kv_cache_write_(q: NDArray, k: NDArray, v: NDArray, cos: NDArray, sin: NDArray, k_cache: NDArray,
                         v_cache: NDArray, position: NDArray) -> NDArray:
    from genesis.backends.cuda import nn_decode

    _check_device("rope_kv_cache_write_", q, k, v, cos, sin, k_cache, v_cache, position)
    return nn_decode.rope_kv_cache_write_(q, k, v, cos, sin, k_cache, v_cache, position)


def decode_attention(q: NDArray, k: NDArray, v: NDArray, length: NDArray, key_mask: NDArray | None,
                     scale: float) -> NDArray:
    from genesis.backends.cuda import nn_decode

    _check_device("decode_attention", q, k, v, length, key_mask)
    return nn_decode.decode_attention(q, k, v, length, key_mask, scale)


def adam_step_(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, step: int) -> None:
    from genesis.backends.cuda import nn_fused

    _check_device("adam_step_", param, grad, exp_avg, exp_avg_sq)
    nn_fused.adam_step_(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step)


def adam_multi_step_(params: list[NDArray], grads: list[NDArray], exp_avgs: list[NDArray],
                     exp_avg_sqs: list[NDArray], masters: list[NDArray] | None, lr: float, beta1: float, beta2: float,
                     eps: float, weight_decay: float, decoupled: bool, step: int, maximize: bool) -> None:
    from genesis.backends.cuda import nn_fused

    nn_fused.adam_multi_step_(params, grads, exp_avgs, exp_avg_sqs, masters, lr, beta1, beta2, eps, weight_decay,
                              decoupled, step, maximize)


def sgd_multi_step_(params: list[NDArray], grads: list[NDArray], bufs: list[NDArray] | None, lr: float,
                    momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                    first: bool) -> None:
    from genesis.backends.cuda import nn_fused

    nn_fused.sgd_multi_step_(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov, maximize, first)


def unscale_grads_(grads: list[NDArray], inv_scale: float) -> NDArray:
    from genesis.backends.cuda import nn_fused

    return nn_fused.unscale_grads_(grads, inv_scale)
