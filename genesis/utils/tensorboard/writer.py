"""``SummaryWriter``: torch's ``torch.utils.tensorboard.SummaryWriter`` API over Genesis's own event files."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from genesis.utils.tensorboard import summary
from genesis.utils.tensorboard.event_file import FILE_VERSION, SESSION_LOG_START, EventFileWriter, encode_event

_DEFAULT_BINS = summary.default_bins()


class SummaryWriter:
    """Writes scalars, histograms, text, images and hyperparameters into TensorBoard event files in ``log_dir``.

    Args:
        log_dir: the folder of the event files; default ``runs/{%b%d_%H-%M-%S}_{hostname}{comment}``.
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: when resuming a run that crashed at a later step, the step from which TensorBoard should hide
            the crashed run's events (a ``SessionLog.START`` event at that step).
        max_queue: how many events are kept in memory before they are written.
        flush_secs: the longest time events wait for a write while more events keep arriving. No background thread
            flushes: pending events are also written by :meth:`flush`, :meth:`close`, ``with`` blocks, and when the
            writer is garbage collected or the interpreter exits.
        filename_suffix: appended to every event file's name.

    Values may be Genesis tensors (on any device: reading them copies them to the host), numpy arrays or Python
    numbers. Writing after :meth:`close` opens a new event file, as in torch.
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            log_dir = os.path.join("runs", f"{datetime.now():%b%d_%H-%M-%S}_{socket.gethostname()}{comment}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.default_bins = _DEFAULT_BINS
        # The main file writer and the per-tag ones of add_scalars, by folder; None after close().
        self.file_writer: EventFileWriter | None = None
        self.all_writers: dict[str, EventFileWriter] | None = None
        self._get_file_writer()

    def _new_file_writer(self, log_dir: str | os.PathLike) -> EventFileWriter:
        return EventFileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> EventFileWriter:
        """The main writer, opened anew after :meth:`close`."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = self._new_file_writer(self.log_dir)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                now = time.time()
                self.file_writer.add_event(encode_event(now, self.purge_step, file_version=FILE_VERSION))
                self.file_writer.add_event(encode_event(now, self.purge_step, session_log_status=SESSION_LOG_START))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str | os.PathLike:
        """The folder the event files are written to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a float32 ``simple_value``; with ``new_style`` a tensor for the scalars plugin, float64
        with ``double_precision``) at ``global_step`` and ``walltime`` (seconds since the epoch; default now)."""
        self._get_file_writer().add_summary(summary.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers in one chart: each goes, under the tag ``main_tag``, to its own event file in the
        folder ``{log_dir}/{main_tag with / as _}_{tag}`` (so TensorBoard shows each as a run)."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, value in tag_scalar_dict.items():
            folder = f"{log_dir}/{main_tag.replace('/', '_')}_{tag}"
            writer = self.all_writers.get(folder)
            if writer is None:
                writer = self.all_writers[folder] = self._new_file_writer(folder)
            writer.add_summary(summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Log a histogram of ``values``. ``bins`` is what ``np.histogram`` takes (a count, edges, or a rule name
        such as ``"auto"``), or ``"tensorflow"``: TensorBoard's default exponential edges; ``max_bins`` merges
        neighbouring buckets down to at most that many."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: float, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Log a histogram computed elsewhere: its statistics, and each bucket's right edge and count (tensors,
        arrays or sequences of numbers)."""
        self._get_file_writer().add_summary(
            summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts), global_step,
            walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Log an image, stored as PNG. ``img_tensor`` is uint8 (0-255) or another dtype with values in [0, 1];
        ``dataformats`` orders its dimensions (``"CHW"``, ``"HWC"``, ``"HW"``); 1 channel is gray, 3 RGB, 4 RGBA
        (``"HWC"``)."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images (1 or 3 channels) as one grid image, eight per row."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (markdown) for TensorBoard's text plugin, under the tag ``{tag}/text_summary``."""
        self._get_file_writer().add_summary(summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Log one run's hyperparameters and final metrics for TensorBoard's HParams tab, as torch does: into the
        sub-folder ``run_name`` (default: the current time) with a writer of its own, the experiment, session start
        and session end summaries, then each metric as a scalar."""
        experiment, start, end = summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run_writer:
            file_writer = run_writer._get_file_writer()
            for part in (experiment, start, end):
                file_writer.add_summary(part, global_step)
            for tag, value in metric_dict.items():
                run_writer.add_scalar(tag, value, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Not available: torch traces the model with TorchScript to export its graph, and Genesis has no graph
        export (it runs eagerly)."""
        raise NotImplementedError("SummaryWriter.add_graph: Genesis cannot export a model graph (torch traces it "
                                  "with TorchScript; Genesis runs eagerly). Remove the call, or log the model's "
                                  "structure with add_text(tag, str(model)).")

    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Write the pending events and close the event files (a second close does nothing)."""
        for writer in (self.all_writers or {}).values():
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
