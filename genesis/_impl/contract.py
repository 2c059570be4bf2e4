"""The backend contract: the one list of primitives every device backend implements.

A backend is a module (``genesis._impl.cpu``, ``genesis._impl.cuda``) defining one function per entry of
:data:`PRIMITIVES`, with the parameter names listed there. It receives and returns :class:`genesis.ndarray.NDArray`
objects. The NDArray layer has already done the bookkeeping shared by every device, so a backend can count on:

- binary operands have broadcast-compatible shapes and the same dtype (type promotion is done above); the second
  operand may be a Python number, already compatible with the first operand's dtype;
- dims are normalized (non-negative, tuples sorted), index tensors are int64 and in range,
  ``out=`` arrays have the result's shape and dtype and may be strided views.

Views (reshape, permute, expand, slicing, diagonal ...) never reach a backend: they change only the NDArray's
shape, strides and offset over the same buffer (a view as another dtype asks the backend only for that buffer read
as the new dtype: ``reinterpret_buffer``). A backend reads strided inputs directly or copies to contiguous.

Neural-network primitives work over the trailing spatial dims of (N, C, *spatial) arrays (tuples hold one entry per
spatial dim); the fused ones work over the last dim, with statistics in float32 and results in the input's dtype.
Random primitives are counter-based: the same seed and offset give the same numbers.
"""

UNARY_OPS = (
    "neg", "abs", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "softplus", "erf", "sign", "floor", "ceil",
    "round", "trunc", "isnan", "isinf", "logical_not", "bitwise_not",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc", "erfinv", "lgamma", "digamma",
    "trigamma", "i0", "i1", "signbit",
)
BINARY_OPS = (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "atan2",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor",
    "hypot", "copysign", "logaddexp", "logaddexp2",
    # activation gradients: (grad, x) -> grad * d activation(x) / dx, floating arrays only; relu_backward takes
    # relu's output: grad where out > 0, else 0 (torch's threshold_backward)
    "gelu_backward", "gelu_tanh_backward", "silu_backward", "relu_backward",
)
# Activations with Python-number parameters, as torch's kernels compute them (``activation`` and its gradient
# ``activation_backward``): op -> its parameters.
ACTIVATION_OPS = {
    "elu": ("alpha", "scale", "input_scale"),  # x * scale where x > 0, else expm1(x * input_scale) * alpha * scale
    "hardswish": (),  # x * min(max(x + 3, 0), 6) / 6
    "hardsigmoid": (),  # min(max(x + 3, 0), 6) / 6
    "hardtanh": ("min_val", "max_val"),  # clamp; the gradient is zero at the bounds too
    "softplus": ("beta", "threshold"),  # log1p(exp(beta x)) / beta, x where beta x > threshold
    "softshrink": ("lambd",),  # x - lambd above lambd, x + lambd below -lambd, 0 between (NaN stays NaN)
    "hardshrink": ("lambd",),  # 0 where |x| <= lambd, else x
    "threshold": ("threshold", "value"),  # value where x <= threshold, else x; the gradient is zero there
    "mish": (),  # x * tanh(softplus(x))
    "log_sigmoid": (),  # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))
    "logit": ("eps",),  # log(z / (1 - z)), z = x clamped to [eps, 1 - eps] (x itself for eps < 0: no eps)
}
COMPARISON_OPS = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"))
REDUCE_OPS = ("sum", "mean", "prod", "amax", "amin", "any", "all")

# name -> "(parameters): what it computes". A test checks that every backend defines each name with these parameters.
PRIMITIVES: dict[str, str] = {
    # memory and creation
    "empty": "(shape, dtype, device): uninitialized contiguous array",
    "full": "(shape, value, dtype, device): array filled with a Python number",
    "arange": "(start, end, step, dtype, device): 1-D range",
    "from_numpy": "(array, dtype, device, non_blocking): copy a host numpy array in; non_blocking: the host need not "
                  "wait for the copy (a contiguous array in page-locked memory may be read while the host goes on; "
                  "pageable memory is staged before the call returns)",
    "pin_memory": "(x): contiguous copy of a host array in page-locked memory (RuntimeError where no CUDA device can "
                  "run, or for device arrays)",
    "is_pinned": "(x): whether the array's memory is page-locked host memory",
    "to_numpy": "(x): contiguous host numpy array (zero-copy where possible)",
    "copy_": "(dst, src): dst[...] = src, src broadcastable, dtype cast; returns dst",
    "cast": "(x, dtype): new contiguous array of another dtype",
    "contiguous": "(x): new contiguous copy of a strided view",
    "cat": "(arrays, dim): new contiguous array: the arrays (at least one; one dtype and device; equal shapes except "
           "along dim) concatenated along dim",
    "stack": "(arrays, dim): new contiguous array: the arrays (at least one; one shape, dtype and device) stacked "
             "along a new dim at position dim",
    "data_ptr": "(x): address of the view's first element (host or device memory)",
    "storage_nbytes": "(x): size in bytes of the memory block behind x's buffer, the one all views of it share "
                      "(torch's untyped_storage().nbytes(): the bytes asked for, not the allocator's rounded block)",
    "record_stream": "(x, stream): the memory behind x is in use by work queued on stream (a Stream of x's "
                     "device): when its last view goes, the allocator must not hand the block out again before "
                     "that work is done (torch's Tensor.record_stream); NotImplementedError on host backends",
    "reinterpret_buffer": "(x, dtype): x's buffer with its bytes read as elements of dtype, no copy, so that NDArray "
                          "offsets over it count dtype's elements from the buffer's start (torch's "
                          "Tensor.view(dtype); NDArray.view_dtype checks and computes the view's layout)",
    "to_dlpack": "(x, stream, max_version): zero-copy export: a DLPack capsule, versioned when the consumer passes "
                 "max_version >= (1, 0)",
    "from_dlpack": "(obj): zero-copy import of any DLPack producer",
    # elementwise
    "unary": "(op, x, out): op in UNARY_OPS (trigamma: polygamma(1, x); signbit: bool result, floating x only)",
    "binary": "(op, a, b, out): op in BINARY_OPS, result dtype of a (bool for comparisons); the activation gradients "
              "(gelu_backward ...) take the gradient a and the activation's input b, both arrays",
    "where": "(cond, a, b): cond bool; a, b same dtype, broadcastable",
    "masked_fill_": "(x, mask, value): in place x = where(mask, value, x), mask bool broadcastable to x's shape, "
                    "value a Python number; returns x",
    "triangle": "(x, k, upper): x (at least 2-d) with the elements of its last two dims below diagonal k (upper) "
                "or above it (lower) set to zero, as torch's triu / tril",
    "nan_to_num": "(x, nan, posinf, neginf): floating x with NaN, +inf and -inf replaced by the given values (Python "
                  "numbers, or 0-d arrays of x's dtype for values that round to an infinity there)",
    "add_scaled": "(a, b, alpha, out): a + alpha * b rounded once (torch's add with alpha: one fused multiply-add); "
                  "a and b of one floating dtype, broadcastable; alpha a Python number; out as binary's",
    "clamp": "(x, lo, hi): x clamped into [lo, hi], bounds Python numbers or None (unbounded; not both), computed in "
             "float32 for half types; NaN stays NaN; floating x",
    "clamp_backward": "(grad, x, lo, hi): grad where lo <= x <= hi (each bound cast to x's dtype; None: unbounded), "
                      "0 elsewhere and where x is NaN (torch's clamp_backward); grad and x of one shape",
    "lerp": "(start, end, weight): start + weight * (end - start), from end (end - (end - start) * (1 - weight)) "
            "where |weight| >= 0.5, as torch; start and end (and an array weight) of one floating dtype, "
            "broadcastable; weight an array or a Python number",
    "complex_op": "(op, x): complex numbers: "
                  "'view_as_real' (complex -> real with a last dim of 2, sharing memory), 'view_as_complex' (the "
                  "reverse), 'real' / 'imag' (the parts, sharing memory), 'conj', 'abs' and 'angle' (real results)",
    # reductions
    "reduce": "(op, x, dims, keepdim): op in REDUCE_OPS over the tuple of dims",
    "logsumexp": "(x, dims): floating x's log(sum(exp(x))) over the tuple of dims, kept as size-1 dims; computed "
                 "with the maximum subtracted first (0 where that is infinite)",
    "variance": "(x, dims, correction, keepdim, root): floating x's variance over the tuple of dims (the sum of "
                "squared deviations divided by max(0, n - correction)), with root its square root (the standard "
                "deviation); half precision accumulates in float32 and rounds once",
    "arg_reduce": "(op, x, dim, keepdim): 'argmax' / 'argmin' (first occurrence), int64",
    "extremum_with_index": "(op, x, dim, keepdim): 'max' / 'min' along dim -> (values, int64 positions of the "
                           "first extremum; NaN is the extremum)",
    "cumulative": "(op, x, dim): 'cumsum' / 'cumprod'",
    "softmax": "(x, dim, log, safe): softmax or log_softmax over one dim; safe: a row of -inf only gives zeros "
               "(torch's safe softmax), not NaN",
    # linear algebra
    "matmul": "(a, b): (..., M, K) @ (..., K, N), batch dims equal",
    "linear": "(x, w, bias): x @ w.T + bias for 2-D x (M, K), w (N, K), bias (N,) or None, one dtype (the bias may "
              "be fused into the product)",
    "eig": "(A): (eigenvalues (..., n), eigenvectors (..., n, n)) of square (..., n, n) A, float32, float64, complex64 "
           "or complex128, both complex (complex64 for float32 and complex64 A), as LAPACK's geev: the eigenvectors "
           "are the columns, each of unit 2-norm with its largest-magnitude component real",
    "cholesky": "(A): (L, info) of the Cholesky factorization A = L L^T of symmetric positive-definite (..., n, n) A "
                "of float32 or float64, read from its lower triangle: L lower triangular (zeros above the diagonal), "
                "info int32 (...,), 0 or the order of the first leading minor that is not positive-definite (LAPACK's "
                "potrf; L's values past a failure are the library's)",
    "triangular_solve": "(A, B, upper, unitriangular): X with A X = B for triangular (..., n, n) A, read from its "
                        "upper or lower triangle only (its diagonal taken as ones when unitriangular), and "
                        "(..., n, k) B of A's dtype (float32 or float64), batch dims equal (LAPACK's trsm)",
    "eigh": "(A): (eigenvalues (..., n) ascending, eigenvectors (..., n, n) as columns) of symmetric (..., n, n) A of "
            "float32 or float64, as LAPACK's syevd (each eigenvector's sign is the library's)",
    "svd": "(A): (U (..., m, n), S (..., n), Vh (..., n, n)) the reduced SVD of tall (m >= n) (..., m, n) A of "
           "float32 or float64, singular values descending, as LAPACK's gesvd (the vectors' signs are the library's)",
    "qr": "(A, complete): (Q, R), the Householder QR of (..., m, n) A of float32 or float64 with min(m, n) > 0, as "
          "LAPACK's geqrf + orgqr (their signs): Q (..., m, k) and R (..., k, n) with k = min(m, n), or with "
          "complete Q (..., m, m) and R (..., m, n)",
    "lu_factor": "(A): (LU, pivots, info) of LAPACK getrf (partial pivoting) on square (..., n, n) A of float32 or "
                 "float64: U on and above LU's diagonal, L's multipliers below it, pivots int32 (..., n) 1-based "
                 "(row i swapped with row pivots[i] at step i), info int32 (...,), 0 or the 1-based index of the "
                 "first zero on U's diagonal",
    "pivot_order": "(pivots, m): int64 (..., m) row order that 1-based int32 LAPACK pivots (..., k) apply to m rows: "
                   "row i of P^T A is row order[i] of A",
    "ldl_factor": "(A, hermitian): (LD, pivots, info) of the Bunch-Kaufman factorization A = L D L^T (hermitian: "
                  "L D L^H) of square (..., n, n) A read from its lower triangle, in LAPACK sytrf's (hetrf's) compact "
                  "form: LD holds L's multipliers below the diagonal, D's 1x1 and 2x2 blocks on and below it, zeros "
                  "above it; pivots int32 (..., n), 1-based: k > 0 a 1x1 block after swapping rows and columns i "
                  "and k, two equal negative entries -k a 2x2 block after swapping the block's second row with k; "
                  "info int32 (...,), 0 or the 1-based index of the first exactly zero D[i, i]",
    "ldl_solve": "(LD, pivots, B, hermitian): X with A X = B for the A that ldl_factor (same hermitian) factored "
                 "into LD and int32 pivots (LAPACK's sytrs); B (..., n, k) of LD's dtype, batch dims equal",
    # indexing
    "index": "(x, indices): x[i0, i1, ...]; indices: one entry per dim, None (all) or int64 arrays broadcast to one "
             "shape; result dims as torch",
    "index_put_": "(x, indices, values, accumulate): in-place x[i0, i1, ...] = values (or +=, duplicates summed); "
                  "one int64 array per dim, all broadcast to values' shape",
    "gather": "(x, dim, index): torch.gather",
    "scatter": "(x, dim, index, src, mode): out-of-place torch.scatter; mode 'set' or 'add'",
    "scatter_": "(out, dim, index, src, mode): scatter into out itself (no copy of it); returns out",
    "index_add_": "(x, dim, index, src): in place x.index_select(dim, index) += src, index 1-d int64 in range, src "
                  "of x's dtype and shape but index.size along dim (repeated indices add up); returns x",
    "scatter_reduce": "(x, dim, index, src, reduce, include_self): out-of-place torch.scatter_reduce; reduce sum, "
                      "mean (integers rounded down), prod, amax or amin (NaN propagates); src at least index's "
                      "shape (its leading part is read)",
    "index_select": "(x, dim, index): torch.index_select",
    "nonzero": "(x): (n, ndim) int64 coordinates of non-zero elements",
    "sort": "(x, dim, descending, stable): (values, int64 indices)",
    "topk": "(x, k, dim, largest): (values, int64 indices) of the k largest (smallest) elements along dim (x at "
            "least 1-d), new contiguous arrays in descending (ascending) order; ties in any order",
    "unique": "(x, return_inverse, return_counts): sorted unique values of the flattened array",
    "searchsorted": "(seq, values, right): insertion points along the last dim",
    "check_index": "(x, low, high, ignore, error, message): x (integer) checked to lie in [low, high) or equal "
                   "ignore (None: no such value), negatives in [low, 0) wrapped by +high. A bad value raises "
                   "error(message.format(value=v, size=high)) at the call on the CPU; the CUDA backend records it "
                   "on the device, raises RuntimeError at the next synchronization and replaces the value by 0 "
                   "(ignore where given) so later kernels stay in bounds",
    # neural network
    "conv": "(x, w, bias, stride, padding, dilation, groups, transposed, output_padding, out): convolution "
            "(transposed: its adjoint, 'deconvolution'); bias may be None; arguments already validated; out: None, "
            "or a dense array (any dim order) of the result's shape and dtype on x's device, written in place and "
            "returned",
    "conv_backward": "(grad, x, w, stride, padding, dilation, groups, transposed, output_padding, output_mask): "
                     "(grad_x, grad_w, grad_bias), None where output_mask is False",
    "pool": "(x, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, "
            "indices): mode 'max': (values, int64 argmax indices into each plane, or None when indices is False), "
            "mode 'avg': (values, None); 2 or 3 spatial dims",
    "pool_backward": "(grad, x, indices, mode, kernel, stride, padding, dilation, ceil_mode, count_include_pad, "
                     "divisor_override): gradient with respect to x",
    "batch_norm": "(x, weight, bias, running_mean, running_var, training, momentum, eps): (out, save_mean, "
                  "save_invstd) normalizing over every dim but 1; weight/bias/running stats may be None; in training "
                  "the running stats are updated in place (unbiased variance); all one dtype",
    "batch_norm_backward": "(grad, x, weight, running_mean, running_var, save_mean, save_invstd, training, eps, "
                           "output_mask): (grad_x, grad_weight, grad_bias), None where output_mask is False",
    "adaptive_pool": "(x, mode, output_size): (N, C, H, W) pooled to (OH, OW) over windows [floor(i H / OH), "
                     "ceil((i + 1) H / OH)); mode 'max': (values, int64 argmax indices into each plane), 'avg': "
                     "(values, None)",
    "adaptive_pool_backward": "(grad, x, indices, mode): gradient with respect to x",
    "group_norm": "(x, weight, bias, num_groups, eps): (out, mean, rstd) normalizing each of num_groups channel "
                  "groups of each sample; mean/rstd (N, num_groups), float32 (float64 for float64 x)",
    "group_norm_backward": "(grad, x, weight, mean, rstd, num_groups, output_mask): (grad_x, grad_weight, "
                           "grad_bias), None where output_mask is False",
    "upsample": "(x, output_size, mode, align_corners, scales): (N, C, H, W) resampled to output_size (OH, OW); mode "
                "'nearest', 'nearest-exact' or 'bilinear'; scales: (scale_h, scale_w), each a float or None, as "
                "torch's upsample ops",
    "upsample_backward": "(grad, input_size, mode, align_corners, scales): gradient with respect to the (N, C, H, W) "
                         "input of input_size",
    "pad": "(x, pad, mode): x padded over its trailing len(pad) // 2 dims (1 to 3) by non-negative amounts pad = "
           "(last_before, last_after, previous_before, ...) as torch; mode 'reflect' (amounts < the dim), "
           "'replicate' or 'circular' (amounts <= the dim); arguments already validated",
    "pad_backward": "(grad, input_shape, pad, mode): gradient with respect to the input of input_shape: each input "
                    "element gets the sum of the gradients of the outputs that read it",
    "rnn_cell_": "(mode, gi, gh, h, c, h_out, saved): one time step of a recurrent cell, in place; mode 'LSTM', "
                 "'GRU', 'RNN_TANH' or 'RNN_RELU'; gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh (B, gates * H) in "
                 "torch's gate order, h (B, H) the previous hidden state, c the previous cell state (LSTM) or None; "
                 "writes the new hidden state into h_out (B, H) and, for LSTM, (sigmoid(i), sigmoid(f), tanh(g), "
                 "sigmoid(o), c') into saved (B, 5H), for GRU (r, z, n, h W_hn^T + b_hn) into saved (B, 4H) (None "
                 "for RNN); all arrays one dtype, row views with unit column stride; float32 arithmetic",
    "rnn_cell_backward_": "(mode, grad_out, grad_h, grad_state, h, c, saved, grad_gi, grad_gh, grad_state_prev): the "
                          "gradients of one rnn_cell_ step, in place: dh = grad_out + grad_h (+ grad_state for GRU), "
                          "each (B, H) or None (zero); grad_state: the incoming dc (LSTM) or the carried dh z part "
                          "(GRU); h, c: the step's previous hidden / cell state (GRU uses h, LSTM c); saved: the "
                          "step's saved activations (for RNN: its output h'); writes grad_gi (B, gates * H), grad_gh "
                          "(GRU only, where r scales the n part; None otherwise: it equals grad_gi) and "
                          "grad_state_prev (B, H): dc_prev (LSTM), dh * z (GRU), None for RNN",
    "rnn_layer": "(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, training, batch_sizes): one "
                 "layer-direction of an RNN, LSTM or GRU over x (T, B, I), or with batch_sizes (a tuple, as a "
                 "PackedSequence's) over packed x (N, I), from h0 (B, P) and c0 (LSTM, (B, H); else None) with "
                 "weights (gates * H, I), (gates * H, P) and biases (gates * H,) or None in torch's gate order, and "
                 "for an LSTM with a projection w_hr (P, H) (else None, P = H), all one dtype; reverse runs the "
                 "steps from T - 1 down to 0; returns (out (T, B, P) or (N, P), h_n, c_n or None, saved): h_n and "
                 "c_n hold each sequence's state after its own last step; saved is a tuple of arrays (or None) that "
                 "rnn_layer_backward needs, meaningful only to the same backend; training False: no backward will "
                 "follow",
    "rnn_layer_backward": "(mode, grad_out, grad_h, grad_c, x, h0, c0, w_ih, w_hh, w_hr, out, saved, reverse, "
                          "has_bias, mask, batch_sizes): the gradients of rnn_layer, (dx, dh0, dc0, dw_ih, dw_hh, "
                          "db_ih, db_hh, dw_hr), each None where the boolean mask (same order) is False, dw_hr also "
                          "without a projection; the incoming gradients may be None (zero)",
    "leaky_relu": "(x, negative_slope): x where x > 0, negative_slope * x elsewhere (a Python number); floating x",
    "leaky_relu_backward": "(grad, x, negative_slope): grad where x > 0, negative_slope * grad elsewhere (x: "
                           "leaky_relu's input, same shape as grad); floating arrays",
    "activation": "(op, x, params): an activation of ACTIVATION_OPS over floating x, its Python-number params in the "
                  "order listed there; half precision computed in float32 and rounded once",
    "activation_backward": "(op, grad, x, params): grad * d activation(x) / dx (x: the activation's input, same "
                           "shape as grad); floating arrays",
    "glu": "(x, dim): a * sigmoid(b) for the halves a, b of x along dim (even size), computed in float32 for half "
           "precision and rounded once",
    "glu_backward": "(grad, x, dim): the gradient for x, its halves (grad sigmoid(b), grad a sigmoid(b) "
                    "(1 - sigmoid(b))) along dim",
    "binary_cross_entropy": "(p, t): unreduced -(t max(log p, -100) + (1 - t) max(log1p(-p), -100)) of probabilities "
                            "p and targets t (same shape, one floating dtype); RuntimeError 'all elements of input "
                            "(target) should be between 0 and 1' otherwise (CUDA: at the next synchronization)",
    "binary_cross_entropy_backward": "(grad, p, t): grad * (p - t) / max(p (1 - p), 1e-12), the gradient for p",
    "embedding_backward": "(grad, index, num_weights): (num_weights, D) sum of the rows of grad (*index.shape, D) "
                          "by int64 index of any shape, deterministic (the same bits on every run)",
    # fused neural-network kernels (over the last dim)
    "softmax_backward": "(grad, out, dim, log): gradient of softmax / log_softmax from its output",
    "grid_sample_2d": "(x, grid, mode, padding_mode, align_corners): (N, C, Ho, Wo) samples of (N, C, H, W) x at "
                      "the (N, Ho, Wo, 2) grid's normalized (x, y) points, as torch's grid_sampler_2d; mode "
                      "'bilinear' or 'nearest', padding_mode 'zeros', 'border' or 'reflection'; grid of x's dtype",
    "grid_sample_2d_backward": "(grad, x, grid, mode, padding_mode, align_corners, needs_input, needs_grid): "
                               "(grad_x or None, grad_grid or None), as torch's grid_sampler_2d_backward",
    "layer_norm": "(x, weight, bias, eps, rms): (out, mean, rstd) of layer_norm, or rms_norm (rms=True: mean 0, no "
                  "bias); mean/rstd float32 of shape x.shape[:-1]",
    "layer_norm_backward": "(grad, x, weight, mean, rstd, rms, output_mask, bias_dtype): (grad_x, grad_weight, "
                           "grad_bias in bias_dtype, float32 where None), None where not needed",
    "cross_entropy": "(x, target, ignore_index, label_smoothing, reduction, out_dtype, check): (loss, logsumexp, "
                     "count) of 2-D logits: loss per row ('none'; 0 where target == ignore_index), summed ('sum') or "
                     "averaged over the non-ignored rows ('mean'), in out_dtype; logsumexp per row and count (mean "
                     "only, else None) float32; a target outside [0, C) raises check = (error class, message "
                     "template with {value} and {size}), on CUDA at the next synchronization",
    "nll_loss": "(x, target, weight, ignore_index, reduction): (loss, total_weight) of (N, C) log-probabilities and "
                "int64 class indices (in range or ignore_index), as torch's nll_loss_forward: -weight[t] * x[t] per "
                "row (0 for an ignored row; weight None: ones, else (C,) in x's dtype), unreduced ('none'), summed "
                "('sum') or summed over total_weight ('mean'); total_weight, 0-d in x's dtype: the kept rows' summed "
                "weights ('mean'; any value otherwise)",
    "nll_loss_backward": "(grad, x, target, weight, ignore_index, reduction, total_weight): nll_loss's gradient for x "
                         "(x gives shape and dtype): -weight[t] * grad (over total_weight for 'mean') at each kept "
                         "row's target class, zero elsewhere; grad per row ('none') or 0-d",
    "cross_entropy_backward": "(grad, x, target, lse, count, ignore_index, label_smoothing): d(loss . grad)/d(logits) "
                              "in x's dtype; grad per row or one value for a reduced loss, divided by count when "
                              "given",
    "ctc_loss": "(log_probs, targets, input_lengths, target_lengths, blank): (T, N, C) float32/float64 log_probs, "
                "int targets (N, S) padded or 1-D concatenated, lengths as tuples of ints (all checked): (negative "
                "log-likelihood per sample (N,), the log of the forward variables the backward reads)",
    "ctc_loss_backward": "(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank, "
                         "zero_infinity): the gradient for log_probs of the per-sample losses given theirs (N,), as "
                         "torch's: (exp(log_probs) - the alignment posterior) * grad over each input's steps, zero "
                         "after them; NaN for an impossible alignment (zero with zero_infinity)",
    "swiglu": "(gate, up): silu(gate) * up",
    "swiglu_backward": "(grad, gate, up): (grad_gate, grad_up)",
    "rope": "(x, cos, sin, inverse): x * cos + rotate_half(x) * sin (inverse: x * cos - rotate_half(x * sin)); "
            "cos/sin broadcastable to x",
    "attention": "(q, k, v, mask, is_causal, scale): (out, lse): softmax(q k^T * scale + mask) v for (B, H, L, D) q "
                 "and (B, HK, S, D) k/v, H a multiple of HK (grouped-query); mask additive float broadcastable to "
                 "(B, H, L, S) or None; causal top-left aligned; lse: backend-specific row statistics",
    "attention_backward": "(grad, q, k, v, mask, out, lse, is_causal, scale): (grad_q, grad_k, grad_v)",
    "kv_cache_write_": "(cache, new, position): cache[:, :, p:p + T] = new in place, (B, H, S, D) cache and "
                       "(B, H, T, D) new, p = position[0] (a 1-element int64 array read on the device, so a captured "
                       "graph stays valid)",
    "decode_attention": "(q, k, v, length, key_mask, scale): (B, H, 1, D): one query per head over the first "
                        "length[0] keys of (B, HK, S, D) k/v; key_mask (B, >= length) nonzero where a key may be "
                        "attended, or None",
    "rope_kv_cache_write_": "(q, k, v, cos, sin, k_cache, v_cache, position): one decoding token: (B, H, 1, D) "
                            "rotated q; rotated k and v written into the (B, HK, S, D) caches at position[0]; q, k, v "
                            "(B, 1, heads, D), cos/sin (B or 1, D)",
    "adam_step_": "(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step): one "
                  "Adam (decoupled: AdamW) step in place on contiguous param/exp_avg/exp_avg_sq, float32 arithmetic; "
                  "step >= 1",
    "adam_multi_step_": "(params, grads, exp_avgs, exp_avg_sqs, masters, lr, beta1, beta2, eps, weight_decay, "
                        "decoupled, step, maximize): the same step over lists of dense arrays (each list one dtype, "
                        "the arrays at one position of the lists laid out alike, walked as flat memory; one step "
                        "count); masters: float32 master weights updated in place of the parameters "
                        "(which get the rounded result) or None; CUDA also takes lr and step as 0-d device arrays "
                        "(read by the kernel, so the step can be captured in a CUDA graph; step counts this update)",
    "sgd_multi_step_": "(params, grads, bufs, lr, momentum, dampening, weight_decay, nesterov, maximize, first): SGD "
                       "over lists of dense arrays in place (laid out alike at each position, as "
                       "adam_multi_step_); bufs: momentum buffers or None (momentum 0); first: the buffers are new "
                       "(buf = g)",
    "unscale_grads_": "(grads, inv_scale): grads *= inv_scale in place; returns a float32 (1,) array, 1.0 if any "
                      "gradient held an inf or nan, else 0.0",
    # multi-tensor (one launch per dtype on GPUs, whatever the number of arrays; xs on one device, any strides)
    "multi_norm": "(xs, norm_type): (len(xs),) float32 array (float64 if any x is float64) of the norm_type-norm "
                  "of each floating array of the non-empty list xs (any dtypes): 2, 1, inf (max |x|), -inf, 0 (count "
                  "of non-zeros) or any p; accumulated in float32 (float64); an empty array's norm is 0 for finite "
                  "p >= 0 (callers refuse the others, as torch)",
    "multi_scale_": "(xs, scale): every array times the 0-d array scale in place, scale read on the device (no host "
                    "sync), arithmetic in float32 (float64 for float64 arrays)",
    "multi_fill_": "(xs, value): every array filled with a Python number in place",
    "multi_copy_": "(dsts, srcs): dsts[i] = srcs[i] for every pair of equal shapes (converted to dsts[i]'s dtype, "
                   "as copy_), dsts and srcs on one device",
    "multi_clamp_": "(xs, min, max): every array clamped in place to [min, max] (Python numbers, either may be None); "
                    "nan stays nan",
    # random
    "uniform": "(shape, dtype, device, seed, offset): U[0, 1)",
    "normal": "(shape, dtype, device, seed, offset): N(0, 1)",
    "randint": "(low, high, shape, dtype, device, seed, offset): integers in [low, high)",
    "dropout": "(x, p, seed, offset): x * keep / (1 - p), keep[i] = float32 uniform(seed, offset + i) >= p over x's "
               "elements in row-major order (its own backward: the same call on the gradient regenerates the mask)",
    # device
    "synchronize": "(device): wait for all work queued on the device",
}

