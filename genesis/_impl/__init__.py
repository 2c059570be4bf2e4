"""The backend implementations: the contract every backend implements (``contract``), the CPU backend (``cpu``, on
PyTorch CPU tensors) and the CUDA backend (``cuda``, Genesis's own runtime, allocator, Triton kernels, cuBLASLt and
cuDNN). A backend is imported by :class:`genesis.device.device` when its device is first used.
"""
