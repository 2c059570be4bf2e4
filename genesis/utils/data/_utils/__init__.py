"""Helpers of the DataLoader (``genesis.utils.data._utils``, as ``torch.utils.data._utils``): collation and the
body of worker processes."""
