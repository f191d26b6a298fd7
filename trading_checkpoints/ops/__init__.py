"""The operations: one module per thing a verb does, over a session of one desk and its store.

``session`` opens the repository and the desk state together; ``engine`` takes the lock,
does the repository's upkeep and completes an interrupted restore. Then one module per
operation: ``snapshot``, ``restore`` (with ``journal``, its intent record, and ``recovery``,
which completes one), ``undo``, ``external`` (edits made outside the agent), ``history``
(diff, show, log), ``listing``, ``retention`` (prune), ``turns``, ``guard`` (checkpoint before
a write tool) and ``results`` (the values returned).

May import: ``desk``, ``store``, ``core`` and ``errors``.
"""
