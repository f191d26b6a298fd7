"""The desk folder: reading and writing its tracked files, and nothing else.

Owns the one choke point for desk file access (``folders``: every access goes through folder
descriptors, never a path that could be swapped for a symlink), the scan of the tracked files
(``scan``, its walk in ``walk``) with its stat cache (``statcache``), making the desk match a
planned state (``checkout``), the checks made before a restore touches the desk (``safety``) and
the desk's files as read with their stat cache as one value (``state``: ``DeskState``).

May import: ``core`` and ``errors``. Never the store: the desk is handed trees and blobs, and
hands back entries.
"""
