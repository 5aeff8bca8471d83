"""Real-browser tests: Playwright drives Debian's chromium against `streamlit run app.py`."""
