"""One event -> one ``Outcome``: select, order, run the one chain (scripts, callables,
hooks.yaml entries), judge, launch async work, guard the stop loop.
"""
