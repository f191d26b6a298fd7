"""The floor every other layer stands on: system calls in the right order and git's formats.

Owns the small file-system helpers (``fs``), getting bytes onto the disk in order
(``durability``), opening a repository's own files without following links or waiting on a
FIFO (``repofiles``), the one-writer lock (``lock``), the allowlist of tracked paths
(``paths``) and git's tree and blob format (``trees``). Nothing here knows what a desk or a
repository holds.

May import: ``errors`` only.
"""
