"""``genesis.utils.benchmark`` (``torch.utils.benchmark``): time statements and compare the results.

    from genesis.utils.benchmark import Compare, Timer

    results = [Timer("x @ x", globals={"x": genesis.randn(n, n)}, label="matmul", sub_label=f"n={n}",
                     description="genesis").blocked_autorange() for n in (64, 256)]
    Compare(results).print()

:class:`Timer` (``timeit``, ``blocked_autorange``, ``adaptive_autorange``) returns :class:`Measurement` objects
(median, mean, IQR, the times per run) that print as torch's; :class:`Compare` lays several out as torch's tables.
torch's fuzzers and Callgrind collection are not provided.
"""

from genesis.utils.benchmark.utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from genesis.utils.benchmark.utils.compare import Colorize, Compare
from genesis.utils.benchmark.utils.timer import Language, Timer, timer

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads"]
