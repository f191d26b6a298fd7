"""What agents talk to: harness hooks, the MCP server and the narrated demo.

``hooks`` turns a harness's hook events (JSON on stdin) into checkpoints and installs itself
in a harness's settings, ``watch`` records every change to a desk as the kernel reports it,
``mcp`` serves the verbs over the Model Context Protocol (``mcpresults`` shapes its answers)
and ``demo`` runs a scripted agent session on an example workspace.

May import: the facade (``checkpoints``, ``workspace``), ``ops`` and the layers below.
"""
