"""The protocol load test (``benchmarks/load_protocol.py``, ``make load``), one part a module.

:mod:`benchmarks.load.client` speaks Streamlit's websocket protocol as a browser does (one
``Session`` per websocket); :mod:`benchmarks.load.reruns` says what each rerun asks of a page
and what the page must then show; :mod:`benchmarks.load.runner` starts the server and the
trainings and runs the closed loop of each cell; :mod:`benchmarks.load.report` holds a cell's
figures and prints the table.
"""
