"""The operations: one module per thing a verb does, over a session of one desk and its store.

``deskconfig`` says where a desk and its repository are and what holds for them; ``session``
opens the repository and the desk state together, as a ``ReadSession`` or, under the lock, a
``LockedSession``, the only kind that writes; ``engine`` takes the lock, does the repository's
upkeep and completes an interrupted restore. Then one module per operation: ``snapshot``,
``restore`` (its input in ``request``, its intent record in ``journal``, and ``recovery``,
which completes one), ``undo`` (undo and redo), ``external`` (edits made outside the agent),
``history`` (diff, show, log, status), ``listing``, ``retention`` (prune), ``turns``,
``guard`` (checkpoint before a write tool), ``policy`` (the desk's protected paths and size
budgets), ``protectmatch`` (which targets they cover), ``putback`` (what an agent's shell
command changed there, put back) and ``results`` (the values returned).

May import: ``desk``, ``store``, ``core`` and ``errors``.
"""
