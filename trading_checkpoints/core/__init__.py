"""The floor every other layer stands on: system calls in the right order and git's formats.

Owns the small file-system helpers (``fs``), getting bytes onto the disk in order
(``durability``), the one-writer lock (``lock``), the allowlist of tracked paths (``paths``)
and git's tree and blob format (``trees``). Nothing here knows about a desk or a repository.

May import: ``errors`` only.
"""
