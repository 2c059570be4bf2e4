"""Genesis Triton kernels (device code only; launch logic lives in ``genesis.backends.cuda``)."""
