"""The shadow repository: objects, refs, commits, their trailers and everything else in it.

Owns the repository object (``repo``: ``ShadowRepo``), its folder before it opens
(``repofolder``), reading its objects (``objectread``), the refs (``refs``), git's files that
dulwich reads too (``gitfiles``: refs, ``shallow``, the reflog, each checked or read through
``core.repofiles``), what a commit says (``commitinfo``, ``metadata``, ``changestats``, the
on-disk memo ``commitmemo``), vetting a stored tree before it is used (``treevetting``), the
pruned log (``prunedlog``), what a killed writer leaves (``leftovers``), the config file
(``config/``) and the object storage (``storage``, ``pack/``). Everything in the repository
is untrusted input: it is vetted here before any layer above sees it.

The store is the only place dulwich is imported: ``dulwichrepo`` opens its repository object,
``dulwichadapter`` holds every use of its private names (and gives ids dulwich's types),
``transport`` its clients and the repositories on a path that backups reach, ``damage`` names
what it raises when it meets a damaged file (and which pack or index is at fault,
``pack/verify``).

May import: ``core`` and ``errors``. Never the desk.
"""
