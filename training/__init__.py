"""Training jobs: run ``core.train`` for the pages, watch it, pause and stop it (no Streamlit).

The modules, one idea each: :mod:`training.snapshot` (what a page sees of a job: ``JobSnapshot``,
``MergeRow``, which rows it shows), :mod:`training.inputs` (a job's corpus file and pace),
:mod:`training.protocol` (``Manager``: what both managers offer), :mod:`training.manager`
(``TrainingManager``: worker processes and a queue on a server), :mod:`training.slots` (the
limit on trainings across server processes), :mod:`training.worker` (the worker process's
side, run by path: it imports core alone) and :mod:`training.inpage` (the browser tab's
manager: one thread, a slice per poll). ``ui.training`` is the Streamlit side.
"""
