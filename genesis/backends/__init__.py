"""Switches that steer the backends, as ``torch.backends``: ``genesis.backends.cuda`` (TF32 matrix products, which
attention kernels may run) and ``genesis.backends.cudnn`` (cuDNN convolutions).

These are plain settings: they import no GPU package and work on every machine. The backends themselves live in
``genesis._impl`` and read these switches at every call.
"""

from genesis.backends import cuda, cudnn  # noqa: F401 - the switch namespaces, as torch.backends.cuda / .cudnn
