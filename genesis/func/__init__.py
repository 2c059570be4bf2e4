"""``genesis.func`` (``torch.func``): function transforms and modules as functions.

- :mod:`~genesis.func.functional_call`: ``functional_call`` (a module run with other tensors in place of its
  parameters and buffers) and ``stack_module_state`` (an ensemble's parameters stacked for ``vmap``).
- :mod:`~genesis.func.transforms`: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``,
  ``jacfwd`` and ``hessian``, built on Genesis's autograd; they compose (``grad(grad(f))``, ``jacfwd(jacrev(f))``).
- :mod:`~genesis.func.vmap`: ``vmap`` as a per-sample loop (torch's results, not its speed), composing with the
  transforms (``vmap(grad(loss))`` for per-sample gradients), and ``replace_all_batch_norm_modules_``.
- :mod:`~genesis.func.pytree`: the nested tuples, lists and dicts of tensors the transforms take and return.
"""

from genesis.func.functional_call import functional_call, stack_module_state
from genesis.func.transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from genesis.func.vmap import replace_all_batch_norm_modules_, vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]
