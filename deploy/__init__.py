"""Running the playground: local Streamlit servers, several behind HAProxy, or a static site.

- :mod:`deploy.launch`: one Streamlit server on a free loopback port, started, waited for and
  stopped with its process group (tests, benchmarks, docs/screenshots.py and serve.py use it);
- ``deploy/serve.py``: ``make serve``, N Streamlit processes behind HAProxy;
- ``deploy/warm_start.py``: the ``streamlit run`` of ``make run`` and ``make serve``, which
  fills the caches (:func:`ui.serving.warm`) once the server is up;
- ``deploy/static.py``: ``make static``, the stlite site in ``dist/``.

Scripts elsewhere import it with the repository on ``sys.path`` (``from deploy.launch import
free_port``); nothing here imports pytest or a third-party library, except ``warm_start.py``,
which is the Streamlit server itself.
"""
