"""A warm command server for the console script, so a hook costs little more than Python's start.

The ``checkpoints`` console script is :func:`client.main`. A harness runs it for every hook
event, and most of such a process's time goes to importing the command (click, the verbs, the
engine), not to the work. So, as Mercurial's ``chg`` does, the client hands the command to a
server that has imported everything already, and a child forked by the server runs it.

**The rule: a command is served only when the server's child can be the client; otherwise it
runs in-process.** Being the client means:

- the same code: the server is named after every module file it imported and the client
  finds it by the files as they are now (``address.py``, ``core/installation.py``);
- the same context, read from ``/proc`` for the client's process and compared with the
  server's (``context.refusal``): the mount, user, pid, net, ipc, uts, cgroup and time
  namespaces, the root folder, the executable, the credentials (user and group ids, groups,
  capabilities), ``no_new_privs`` (which must also be off) and the seccomp mode, and the
  control groups;
- the client's own state, taken by the child (``context.adopt``, ``child.become``): its
  current folder (by descriptor, so a removed folder works as in-process), its whole
  environment (the server's removed first), ``TZ`` (``time.tzset``) and locale, umask, the
  signals it ignores or blocks, its resource limits (where the child cannot set one, or the
  limit counts what a process used before the command, it refuses), and its standard streams,
  set up as its Python set them up;
- nothing the child cannot give: a command that may need the controlling terminal (a standard
  stream that is a terminal, the remote verbs that may run ssh) or that runs long (``mcp``,
  ``watch``, ``browse``) runs in-process, and so does any command when a standard stream is
  closed or unusable, or when the import path holds the current folder (``client.wanted``,
  ``address.slot``).

Where the rule says no, or anything fails before the child starts, the client runs the command
itself: never both, never twice (``client.py``). The child ends as the client's own process
would have (its status, or the signal that ended it), and ends at once when its client is gone.

- ``address``: where the socket is (a folder only the user can enter) and which code and
  context it serves;
- ``context``: what the child shares with its client and what it takes from it;
- ``client``: the console script: the server when it can, else the command in-process, never
  both; imports almost nothing;
- ``server``: the warm process: one per user, context and installation, started by the first
  client that finds none, gone after a while without clients;
- ``child``: one served command, from the request to the child's end;
- ``wire``: what client and server say to each other;
- ``command``: one command line run in a process (the server's child, or the client when no
  server took it): a hook event straight to the hook's parser, the rest through the group.

A harness runs ``checkpoints-hook`` (``bin/``, what ``checkpoints hook install`` registers):
the client's ``hook_main``, without the console script's own imports.

``CHECKPOINTS_SERVER=off`` runs every command in-process. A command run by the server takes
the same lock and does the same work as in-process: the child starts from the server's freshly
imported state, never from another command's.

May import: ``cli`` (the server, to run a command) and the standard library; the client only
the standard library and ``core``'s ``private`` and ``installation`` until it falls back to
``cli``.
"""
