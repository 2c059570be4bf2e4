"""torch.distributed.elastic's module path, for the parts training scripts import (``multiprocessing.errors``)."""
