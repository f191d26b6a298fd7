"""A warm command server for the console script, so a hook costs little more than Python's start.

The ``checkpoints`` console script is :func:`client.main`. A harness runs it for every hook
event, and most of such a process's time goes to importing the command (click, the verbs, the
engine), not to the work. So, as Mercurial's ``chg`` does, the client hands the command to a
server that has imported everything already: it connects to a per-user socket, sends its
arguments, folder, environment and umask, and passes its own stdin, stdout and stderr over the
socket; the server forks a child that takes those as its own and runs the very same command,
and the client exits with the child's status.

- ``address``: where the socket is (a folder only the user can enter) and which code it serves
  (the installation's files, so a changed installation gets a server of its own);
- ``client``: the console script: the server when it can, else the command in-process, never
  both; imports almost nothing;
- ``server``: the warm process: one per user and installation, started by the first client
  that finds none, gone after a while without clients;
- ``command``: one command line run in a process (the server's child, or the client when no
  server took it): a hook event straight to the hook's parser, the rest through the group.

A harness runs ``checkpoints-hook`` (``bin/``, what ``checkpoints hook install`` registers):
the client's ``hook_main``, without the console script's own imports.

Optional: ``CHECKPOINTS_SERVER=off`` runs every command in-process, and so do commands whose
stdin is a terminal (a person at a prompt) and the long-running verbs (``mcp``, ``watch``).
A command run by the server takes the same lock and does the same work as in-process: the
child starts from the server's freshly imported state, never from another command's.

May import: ``cli`` (the server, to run a command) and the standard library; the client only
the standard library until it falls back to ``cli``.
"""
