"""CUDA backend: the backend contract (``genesis._impl.contract``) on NVIDIA GPUs, without PyTorch.

This module is the backend: it exposes one function per primitive, each implemented in the module of its family.
Memory comes from Genesis's caching allocator (``allocator``, ``storage``), kernels are Genesis's Triton kernels
(``kernels/``) launched through Genesis's own Triton driver on Genesis's current stream (``triton_driver``,
``runtime``, ``launch``), matrix products go to cuBLASLt (``blas``) and convolutions and attention to cuDNN where it
runs the case (``convolution_cudnn``, ``attention_cudnn``, ``cudnn_library``). An NDArray's buffer here is a
``CudaStorage``; its ``_native`` slot caches whether the view is contiguous.
"""

# ruff: noqa: F401 - the primitives are imported to be this module's attributes

from genesis._impl.cuda import (
    cudnn_library,  # read through the device's backend by the cuDNN switches
    pinned,  # the page-locked host memory the CPU backend pins into
)
from genesis._impl.cuda.blas import linear, matmul
from genesis._impl.cuda.complex import complex_op
from genesis._impl.cuda.convolution import conv, conv_backward
from genesis._impl.cuda.creation import (
    arange,
    cast,
    cat,
    contiguous,
    copy_,
    data_ptr,
    empty,
    from_dlpack,
    from_numpy,
    full,
    is_pinned,
    pin_memory,
    reinterpret_buffer,
    stack,
    synchronize,
    to_dlpack,
    to_numpy,
)
from genesis._impl.cuda.ctc import ctc_loss, ctc_loss_backward
from genesis._impl.cuda.elementwise import (
    activation,
    activation_backward,
    add_scaled,
    binary,
    clamp,
    clamp_backward,
    glu,
    glu_backward,
    leaky_relu,
    leaky_relu_backward,
    lerp,
    masked_fill_,
    nan_to_num,
    triangle,
    unary,
    where,
)
from genesis._impl.cuda.indexing import (
    check_index,
    gather,
    index,
    index_add_,
    index_put_,
    index_select,
    nonzero,
    scatter,
    scatter_,
    scatter_reduce,
    searchsorted,
    sort,
    topk,
    unique,
)
from genesis._impl.cuda.linalg_host import eig, ldl_factor, ldl_solve
from genesis._impl.cuda.multi_tensor import (
    adam_multi_step_,
    multi_clamp_,
    multi_copy_,
    multi_fill_,
    multi_norm,
    multi_scale_,
    sgd_multi_step_,
    unscale_grads_,
)
from genesis._impl.cuda.nn_decode import decode_attention, kv_cache_write_, rope_kv_cache_write_
from genesis._impl.cuda.nn_fused import (
    adam_step_,
    binary_cross_entropy,
    binary_cross_entropy_backward,
    cross_entropy,
    cross_entropy_backward,
    layer_norm,
    layer_norm_backward,
    nll_loss,
    nll_loss_backward,
    rope,
    softmax_backward,
    swiglu,
    swiglu_backward,
)
from genesis._impl.cuda.nn_grid_sample import grid_sample_2d, grid_sample_2d_backward
from genesis._impl.cuda.nn_layers import (
    adaptive_pool,
    adaptive_pool_backward,
    batch_norm,
    batch_norm_backward,
    embedding_backward,
    group_norm,
    group_norm_backward,
    pool,
    pool_backward,
    upsample,
    upsample_backward,
)
from genesis._impl.cuda.nn_padding import pad, pad_backward
from genesis._impl.cuda.nn_rnn import rnn_cell_, rnn_cell_backward_
from genesis._impl.cuda.random import dropout, normal, randint, uniform
from genesis._impl.cuda.reductions import (
    arg_reduce,
    cumulative,
    extremum_with_index,
    logsumexp,
    reduce,
    softmax,
    variance,
)
from genesis._impl.cuda.rnn_cudnn import rnn_layer, rnn_layer_backward
from genesis._impl.cuda.sdpa import attention, attention_backward
from genesis._impl.cuda.solvers import cholesky, eigh, lu_factor, pivot_order, qr, svd, triangular_solve
from genesis._impl.cuda.storage import record_stream, storage_nbytes

