"""What every training manager offers: the one interface the pages hold.

Two managers satisfy :class:`Manager`: ``training.manager.TrainingManager`` (a server: worker
processes, a queue, a limit across processes) and ``training.inpage.InPageTrainingManager``
(a browser tab: one thread, a slice of work per :meth:`Manager.advance`). ``ui.training``
picks one; the Train page and the sidebar call only these methods, so they never ask which.

>>> from training.inpage import InPageTrainingManager
>>> isinstance(InPageTrainingManager(), Manager)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from training.inputs import CorpusSource
from training.snapshot import JobSnapshot

__all__ = ["Manager"]


@runtime_checkable
class Manager(Protocol):
    """Training jobs keyed by unguessable IDs: submit, watch, control, forget.

    :meth:`snapshot`, :meth:`wait` and the controls (pause, resume, stop, cancel) raise
    ``KeyError`` for an unknown ID; controls on an ended job do nothing (a late :meth:`stop`
    says so in the job's messages).
    """

    #: Trainings that run at once; more wait in a queue (1 in a browser tab: no queue).
    max_concurrent: int

    def submit(
        self,
        corpus: str | Sequence[str] | CorpusSource,
        *,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        corpus_name: str = "",
        pace: float = 0.0,
    ) -> str:
        """Start (or queue) a training on ``corpus`` (texts, or files read where they are);
        returns its ID. ``pace``: merges per second, 0 = full speed."""
        ...

    def snapshot(self, job_id: str) -> JobSnapshot:
        """An immutable copy of the job's state."""
        ...

    def status(self, job_id: str) -> str | None:
        """The job's status, or None for an unknown ID (cheap: no copy of its rows)."""
        ...

    def __contains__(self, job_id: object) -> bool:
        """True while the manager still knows the job."""
        ...

    def pause(self, job_id: str, *, shown: int | None = None) -> None:
        """Pause before the next merge, holding the ``shown`` merges the page showed."""
        ...

    def resume(self, job_id: str) -> None:
        """Resume a paused job."""
        ...

    def stop(self, job_id: str, *, shown: int | None = None) -> None:
        """End the job keeping its merges (exactly ``shown`` of them when given)."""
        ...

    def cancel(self, job_id: str) -> None:
        """End the job keeping nothing."""
        ...

    def forget(self, job_id: str) -> None:
        """Cancel the job if needed and drop everything kept about it."""
        ...

    def wait(self, job_id: str, timeout: float | None = None) -> JobSnapshot:
        """Block until the job ends (or ``timeout`` seconds pass): for tests and scripts."""
        ...

    def advance(self, job_id: str, budget: float = ...) -> None:
        """Do about ``budget`` seconds of the job's work now, where training moves only when
        asked (a browser tab); nothing where workers train on their own."""
        ...

    def status_counts(self) -> dict[str, int]:
        """``running``, ``queued`` and ``waiting_for_other_processes`` (a status line)."""
        ...

    def warm_up(self) -> None:
        """Get ready for the first job (start an idle worker), where there is anything to do."""
        ...

    def shutdown(self) -> None:
        """Cancel every job and free what the manager holds."""
        ...
