"""The real agent harnesses, driven offline (``tests/harness/README.md``), a module per job.

- ``install``: Claude Code and Gemini CLI at pinned versions, installed from npm into a cache
  folder outside the repository (also a script: ``python3 tests/helpers/harness/install.py``).
- ``model``: the scripted stand-in for the model's API on loopback, recording every request.
- ``driver``: a harness run in a folder with a HOME of its own, against that model.
- ``recorder``: a hook command that records every event a harness sends.
- ``capture``: the scenarios that save those events in ``hook_events/real/`` (also a script).
- ``scenario``: the README's layout, a scenario played once for several tests, and the
  product's and real git's answers the tests compare.
"""
