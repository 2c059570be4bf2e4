"""Tables of measurements (``torch.utils.benchmark.Compare``): one table per label, a row per sub-label (grouped by
thread count), a column per description, each cell the median in the table's unit, as torch prints them."""

from __future__ import annotations

import collections
import enum
import math
from collections.abc import Iterable

from genesis.utils.benchmark.utils.common import Measurement, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    """How cells are colored: not at all, against the best of their column (per thread group) or of their row."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(cell: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + cell + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + cell + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + cell + TERMINATE * 2
    if value >= best * 2:
        return BAD + cell + TERMINATE * 2
    return cell


class _Table:
    """One label's measurements laid out as torch's ``Table``."""

    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool) -> None:
        self.results = results
        self.label = results[0].label
        self.colorize = colorize
        self.trim = trim
        self.unit, self.scale = select_unit(min(r.median for r in results))
        self.highlight = highlight and any(r.has_warnings for r in results)
        self.row_keys = ordered_unique((r.num_threads, r.env, r.as_row_name) for r in results)
        self.row_keys.sort(key=lambda key: key[:2])  # by thread count and env, statements in their order
        self.column_keys = ordered_unique(r.description for r in results)
        self.cells: list[list[Measurement | None]] = [[None] * len(self.column_keys) for _ in self.row_keys]
        rows = {key: i for i, key in enumerate(self.row_keys)}
        columns = {key: j for j, key in enumerate(self.column_keys)}
        for r in results:
            self.cells[rows[(r.num_threads, r.env, r.as_row_name)]][columns[r.description]] = r
        self.templates = [self._template(j) for j in range(len(self.column_keys))]

    def _template(self, j: int) -> str:
        """The number format of column ``j``: digits enough for its largest value, decimals by significance."""
        column = [row[j] for row in self.cells if row[j] is not None]
        digits = [math.ceil(math.log10(m.median / self.scale)) for m in column]
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(digits, column)) if self.trim else 1
        length = max(digits) + decimals + (1 if decimals else 0)
        return f"{{:>{length}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def _cell(self, m: Measurement | None, j: int) -> str:
        if m is None:
            return " " * len(self.templates[j].format(1.0, ""))
        value = m.median / self.scale
        if self.trim:
            value = trim_sigfig(value, m.significant_figures)
        spread = f" (! {m.iqr / m.median * 100:.0f}%)" if self.highlight and m.has_warnings else ""
        return self.templates[j].format(value, spread)

    def render(self) -> str:
        envs = {r.env for r in self.results}
        env_width = max(len(e) for e in envs) if len(envs) > 1 else 0
        strings = [[""] + [str(k) if k is not None else "" for k in self.column_keys]]
        previous_env = None
        for (_, env, name), row in zip(self.row_keys, self.cells):
            prefix = f"({env})" if len(envs) > 1 and env != previous_env else ""
            previous_env = env
            strings.append(["  " + prefix.ljust(env_width + 4) + name] + [self._cell(m, j) for j, m in enumerate(row)])
        widths = [max(len(s[i]) for s in strings) for i in range(len(strings[0]))]
        lines = ["  |  ".join(s.center(w) for s, w in zip(strings[0], widths))]
        overall = len(lines[0])
        threads = None
        group_start = 0
        for i, ((num_threads, _, _), row, cells) in enumerate(zip(self.row_keys, strings[1:], self.cells)):
            if num_threads != threads:
                threads, group_start = num_threads, i
                lines.append(f"{num_threads} threads: ".ljust(overall, "-"))
            best: list[float | None] = [None] * len(cells)
            if self.colorize is Colorize.ROWWISE:
                best = [min(m.median for m in cells if m is not None)] * len(cells)
            elif self.colorize is Colorize.COLUMNWISE:
                group = [self.cells[k] for k in range(group_start, len(self.row_keys))
                         if self.row_keys[k][0] == num_threads]
                best = [min((r[j].median for r in group if r[j] is not None), default=None) for j in range(len(cells))]
            out = [row[0].ljust(widths[0])]
            for text, width, m, b in zip(row[1:], widths[1:], cells, best):
                text = text.center(width)
                if self.colorize is not Colorize.NONE and m is not None and b is not None:
                    text = _color(text, m.median, b)
                out.append(text)
            lines.append("  |  ".join(out))
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if self.highlight
                else "")
        title = (" " + (self.label or "") + " ").center(overall - 2, "-")
        return (f"[{title}]\n" + "\n".join(lines) +
                f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n{note}")


class Compare:
    """Print measurements side by side (``torch.utils.benchmark.Compare``).

    Measurements of the same statement spec are merged first; then one table per ``label``, rows by
    ``sub_label`` (or the statement) grouped by ``num_threads``, columns by ``description``.
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: Iterable[Measurement]) -> None:
        """Add measurements (the tables are laid out when printed)."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print only the digits each measurement's spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color each cell against the best of its column (or of its row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark measurements whose interquartile range is large, with that range in percent of the median."""
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self) -> list[str]:
        grouped: dict[str | None, list[Measurement]] = collections.defaultdict(list)
        for r in Measurement.merge(self._results):
            grouped[r.label].append(r)
        return [_Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
                for group in grouped.values()]
