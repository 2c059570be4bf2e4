"""Futures (torch.futures): a value that may not be ready yet, as collectives with ``async_op=True`` hand out.

``Work.get_future()`` of a collective gives a :class:`Future` whose value is the list of the collective's tensors.
Its ``then`` callbacks run when the value is asked for (``wait()`` or ``value()``), not on a thread of their own:
waiting for a collective on a GPU only orders the caller's stream after it, so running callbacks at that point keeps
communication overlapping the work queued meanwhile, which is how DistributedDataParallel's communication hooks
(``register_comm_hook``) use them.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")
_UNSET: Any = object()


class Future(Generic[T]):
    """A value that becomes available later (``torch.futures.Future``).

    Made complete by ``set_result`` / ``set_exception``, or by the work it stands for (``Work.get_future()``);
    ``wait()`` returns the value (raising a recorded exception), ``then(fn)`` returns a new future of ``fn(self)``.
    """

    def __init__(self, *, devices: Any = None) -> None:
        self._value: Any = _UNSET
        self._error: BaseException | None = None
        self._resolve: Callable[[], Any] | None = None  # computes the value of a future not completed by hand
        self._callbacks: list[Callable[[Future[T]], None]] = []
        self._ready: Callable[[], bool] | None = None  # whether the work behind a pending future has finished

    @classmethod
    def _pending(cls, resolve: Callable[[], Any], ready: Callable[[], bool] = lambda: False) -> Future:
        fut = cls()
        fut._resolve = resolve
        fut._ready = ready
        return fut

    def _completed(self) -> bool:
        return self._value is not _UNSET or self._error is not None

    def done(self) -> bool:
        """Whether the value (or an exception) is there, or the work behind it has finished."""
        return self._completed() or (self._ready is not None and self._ready())

    def set_result(self, result: T) -> None:
        """Complete the future with ``result`` (once)."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception, raised by ``wait()``."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception: expected an exception, got {type(result).__name__}")
        self._complete(_UNSET, result)

    def _complete(self, value: Any, error: BaseException | None) -> None:
        if self._completed():
            raise RuntimeError("Future can only be marked completed once")
        self._resolve = None
        self._value, self._error = value, error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def wait(self) -> T:
        """The value, once the work behind the future is done; raises the exception the future holds."""
        if self._resolve is not None:
            resolve = self._resolve
            try:
                value = resolve()
            except Exception as e:
                self._complete(_UNSET, e)
            else:
                self._complete(value, None)
        if self._error is not None:
            raise self._error
        if self._value is _UNSET:
            raise RuntimeError("Future.wait: the future was never completed (call set_result first)")
        return self._value

    def value(self) -> T:
        """The value (as ``wait()``)."""
        return self.wait()

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A future of ``callback(self)``, run once its value is asked for; an exception of the callback is raised
        by its ``wait()`` as torch's RuntimeError naming it."""
        def run() -> S:
            _waited(self)
            try:
                return callback(self)
            except Exception as e:
                raise RuntimeError(f"Got the following error when running the callback: {type(e).__name__}: {e}") \
                    from e
        return Future._pending(run, self.done)

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes (at once if it already has)."""
        if self._completed():
            callback(self)
        else:
            self._callbacks.append(callback)


def _waited(fut: Future) -> Future:
    fut.wait()
    return fut


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future of the list of ``futures``, complete when all of them are."""
    return Future._pending(lambda: [_waited(f) for f in futures], lambda: all(f.done() for f in futures))


def wait_all(futures: list[Future]) -> list[Any]:
    """The values of ``futures``, in order (raises the first exception met)."""
    return [f.wait() for f in futures]


__all__ = ["Future", "collect_all", "wait_all"]
