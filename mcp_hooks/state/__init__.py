"""One owner for per-session state: the event log, the signal log, waiting aid.
"""
