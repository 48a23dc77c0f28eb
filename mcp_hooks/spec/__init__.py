"""What the words mean: events, HOOK.md, matchers, limits, the tool vocabulary, signals,
the ``Event`` and ``Outcome`` records. Pure data and parsing: no process, no file written.
"""
