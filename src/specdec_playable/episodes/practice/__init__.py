"""Each episode's "Try this" steps and end-of-page exercises, one module per episode.

A page module (``episodes/epN.py``) holds the episode's metadata, prose and ``page()``; what the
visitor is asked to do and to predict lives here, beside the answers computed from the state's own
numbers (``tests/test_try_this.py`` and ``tests/test_exercises.py`` check every one).
"""
