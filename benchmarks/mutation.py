"""Mutation testing of the safety checks, one module at a time, with mutmut (not a test).

For each safety module this builds a scratch copy of the project (the package, ``tests/`` and a
``pyproject.toml`` whose ``[tool.mutmut]`` names only that module and the test files that
exercise it), runs ``mutmut run`` there and prints the mutants no test killed. The worktree is
never touched: mutmut's ``mutants/`` folder lives in the scratch copy
(``$MUTATION_SCRATCH``, default ``/tmp/trading-checkpoints-mutation/<module>``).

    pip install 'mutmut>=3.3,<4'
    python benchmarks/mutation.py paths               # one module (see MODULES for the names)
    python benchmarks/mutation.py all                 # every safety module, one after another
    python benchmarks/mutation.py paths --show        # also print each survivor's diff
    python benchmarks/mutation.py paths --baseline    # without the FOUND_BY_MUTATION tests
    python benchmarks/mutation.py paths --recheck     # only what a --baseline run left alive
    python benchmarks/mutation.py paths --again       # only what the last run left alive

A run takes minutes (paths, safety, journal, credentials) to most of an hour (deskio,
checkout: the symlink races run for every mutant they cover); ``--max-children 2`` halves that
on an idle machine. Every surviving mutant of a safety check is either a missing test or an
equivalent mutant: ``benchmarks/README.md`` lists the equivalent ones and why.

mutmut only learns which tests cover a function from calls made in the test process itself, so
a check exercised only in a forked child or a subprocess shows as ``no tests``/``survived``;
the tests in ``FOUND_BY_MUTATION`` exercise such checks in-process for that reason.

Code that runs only in another process (the warm server's ``main``, its forked children, the
console script's ``run``), or whose telling tests only run it there, is reached through
``PROCESS_TESTS``: tests that start the real processes. A mutant is active there too: the
processes the tests start import the package from mutmut's ``mutants/`` copy (the tests'
``ROOT`` is that copy's folder, put on ``PYTHONPATH``) and inherit ``MUTANT_UNDER_TEST`` from the
test's environment. After the first ``mutmut run``, the process tests' ids are added, in
``mutants/mutmut-stats.json`` (``tests_by_mangled_function_name``, which a later ``mutmut run``
loads rather than learning again), to the tests of every function of the module with a mutant
left alive (``no tests`` or ``survived``), and those mutants are run again by name. A mutant
given tests that never reach it survives: the mapping can only lose a kill, never invent one.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path(os.environ.get('MUTATION_SCRATCH', '/tmp/trading-checkpoints-mutation'))

# The tests mutation testing found missing, each pinning one safety check (every module's run
# takes all of them; ``--baseline`` runs without them).
FOUND_BY_MUTATION = [
    'tests/core/test_path_vetting.py',
    'tests/desk/test_folders.py',
    'tests/desk/test_folders_races.py',
    'tests/desk/test_size_rule.py',
    'tests/desk/test_blob_vetting.py',
    'tests/desk/test_checkout_plan.py',
    'tests/desk/test_checkout_writes.py',
    'tests/desk/test_checkout_races.py',
    'tests/ops/test_recovery_completion.py',
    'tests/ops/test_journal_record.py',
    'tests/ops/test_retention_limits.py',
    'tests/ops/test_prune_results.py',
    'tests/remote/test_credential_urls.py',
    'tests/remote/test_credential_file.py',
    'tests/store/test_tree_flattening.py',
    'tests/ops/test_retention_budget.py',
    'tests/desk/test_racy_entries.py',
    'tests/remote/test_clone_checkout.py',
    'tests/store/test_consolidation.py',
    'tests/ops/test_oversize_carry.py',
    'tests/ops/test_flush_order.py',
    'tests/store/test_rollup_vetting.py',
    'tests/ops/test_declared_paths.py',
    'tests/desk/test_emptied_folders.py',
    'tests/store/test_pruned_log.py',
    'tests/core/test_lock_holder.py',
    'tests/store/test_append_targets.py',
    'tests/store/test_rollup_choices.py',
    'tests/remote/test_clone_results.py',
    'tests/ops/test_attribution.py',
    'tests/desk/test_scan_edges.py',
    'tests/ops/test_capture_announced.py',
    'tests/ops/test_oversize_seal.py',
    'tests/desk/test_read_entry.py',
]

# module -> (mutant name pattern, focused test files)
# What catches the pack append's and the roll-up's mutants (they write the same packs).
PACK_TESTS = [
    'tests/store/test_pack_append.py',
    'tests/store/test_snapshots_go_into_packs.py',
    'tests/store/test_storage.py',
    'tests/store/test_damaged_packs.py',
    'tests/store/test_replaced_packs.py',
    'tests/store/test_kept_packs.py',
    *FOUND_BY_MUTATION,
]

# What catches the mutants of the watcher's vouch, at both ends.
WATCH_TESTS = [
    'tests/agent/test_vouchwatch.py',
    'tests/agent/test_watch_vouch_safety.py',
    'tests/agent/test_watch_blind_spots.py',
    'tests/agent/test_watch_restart.py',
    'tests/agent/test_watch_vouch.py',
    'tests/agent/test_watch_narrow.py',
]

# What catches the mutants of the hooks' event handling, in the test's process.
HOOK_TESTS = [
    'tests/agent/test_hook_dispatch.py',
    'tests/agent/test_hooks_protect.py',
]

MODULES: dict[str, tuple[str, list[str]]] = {
    'paths': (
        'trading_checkpoints.core.paths.*',
        [
            'tests/core/test_tracked_paths.py',
            'tests/store/test_tree_vetting.py',
            'tests/store/test_untrusted_trees.py',
            'tests/store/test_hostile_repositories.py',
            'tests/store/test_hostile_config.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'deskio': (
        'trading_checkpoints.desk.folders.*',
        [
            'tests/desk/test_symlink_races.py',
            'tests/ops/test_engine.py',
            'tests/store/test_hostile_repositories.py',
            'tests/core/test_tracked_paths.py',
            'tests/desk/test_statcache.py',
            'tests/core/test_fs.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'safety': (
        'trading_checkpoints.desk.safety.*',
        [
            'tests/store/test_untrusted_trees.py',
            'tests/store/test_hostile_repositories.py',
            'tests/product/test_hostile_inputs.py',
            'tests/product/test_crash_recovery.py',
            'tests/ops/test_external_edits.py',
            'tests/store/test_noop_snapshot_memos.py',
            'tests/product/test_clear_errors.py',
            'tests/desk/test_in_place_writes.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'checkout': (
        'trading_checkpoints.desk.checkout.*',
        [
            'tests/store/test_hostile_repositories.py',
            'tests/desk/test_symlink_races.py',
            'tests/ops/test_snapshot_list_restore.py',
            'tests/ops/test_engine.py',
            'tests/product/test_crash_recovery.py',
            'tests/ops/test_restore_options.py',
            'tests/desk/test_in_place_writes.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'journal': (
        'trading_checkpoints.ops.journal.*',
        [
            'tests/product/test_crash_recovery.py',
            'tests/ops/test_engine.py',
            'tests/ops/test_retention.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'recovery': (
        'trading_checkpoints.ops.recovery.*',
        [
            'tests/product/test_crash_recovery.py',
            'tests/ops/test_engine.py',
            'tests/ops/test_external_edits.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'retention': (
        'trading_checkpoints.ops.retention.*',
        [
            'tests/ops/test_retention.py',
            'tests/remote/test_backup_after_prune.py',
            'tests/store/test_hostile_config.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'credentials': (
        'trading_checkpoints.remote.credentials.*',
        [
            'tests/remote/test_credentials.py',
            'tests/remote/test_push_pull_clone.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'snapshot': (
        'trading_checkpoints.ops.snapshot.*',
        [
            'tests/ops/test_snapshot_without_lock.py',
            'tests/store/test_noop_snapshot_memos.py',
            'tests/ops/test_snapshot_list_restore.py',
            'tests/ops/test_external_edits.py',
            'tests/product/test_crash_recovery.py',
            'tests/ops/test_turn_records.py',
            'tests/ops/test_toolcalls.py',
            'tests/ops/test_attribution_turns.py',
            'tests/ops/test_rewind_records.py',
            'tests/ops/test_blame_calls.py',
            'tests/agent/test_watch_narrow.py',
            'tests/agent/test_watch_in_process.py',
            'tests/agent/test_hooks_calls.py',
            'tests/ops/test_capture_announced.py',
            # the seal's time on the commit that supersedes it, the seal's other readers, and
            # what a commit tells a running watcher
            'tests/ops/test_attribution.py',
            'tests/ops/test_held_at.py',
            'tests/ops/test_oversize_seal.py',
            'tests/ops/test_asof.py',
            'tests/agent/test_watch_commit_report.py',
            'tests/agent/test_watch_vouch.py',
            'tests/agent/test_watch_vouch_safety.py',
            'tests/agent/test_watch_blind_spots.py',
            'tests/ops/test_settled.py',
            'tests/ops/test_rewind.py',
            'tests/ops/test_calls.py',
            'tests/agent/test_hooks_unexplained.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'flatten_tree': (
        'trading_checkpoints.store.treevetting.*',
        [
            'tests/store/test_tree_vetting.py',
            'tests/store/test_untrusted_trees.py',
            'tests/store/test_hostile_repositories.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'lock': (
        'trading_checkpoints.core.lock.*',
        [
            'tests/core/test_locking.py',
            'tests/product/test_clear_errors.py',  # the held lock; a holder killed holding it
            'tests/ops/test_snapshot_without_lock.py',
            'tests/test_error_kinds.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'consolidation': (
        'trading_checkpoints.store.pack.consolidation.*',
        [
            'tests/ops/test_retention.py',
            'tests/store/test_storage.py',
            'tests/remote/test_backup_after_prune.py',
            'tests/store/test_kept_packs.py',
            'tests/ops/test_prune_crashes.py',
            'tests/store/test_damaged_packs.py',
            'tests/ops/test_retention_chains.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'packappend': (
        'trading_checkpoints.store.pack.append.*',
        PACK_TESTS,
    ),
    'packrollup': (
        'trading_checkpoints.store.pack.rollup.*',
        PACK_TESTS,
    ),
    'remoteclone': (
        'trading_checkpoints.remote.clone.*',
        [
            'tests/remote/test_push_pull_clone.py',
            'tests/ops/test_engine.py',
            'tests/test_error_kinds.py',
            'tests/remote/test_clone_failures.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'external': (
        'trading_checkpoints.ops.external.*',
        [
            'tests/ops/test_external_edits.py',
            'tests/ops/test_undo.py',
            'tests/ops/test_restore_options.py',
            'tests/ops/test_snapshot_without_lock.py',
            'tests/store/test_noop_snapshot_memos.py',
            'tests/ops/test_rewind.py',
            'tests/ops/test_turns.py',
            'tests/ops/test_removed_tracked_paths.py',
            'tests/ops/test_oversize_agent_writes.py',
            'tests/ops/test_attribution_turns.py',
            'tests/ops/test_attribution_oversize.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'scan': (
        'trading_checkpoints.desk.scan.*',
        [
            'tests/desk/test_statcache.py',
            'tests/ops/test_engine.py',
            'tests/product/test_clear_errors.py',
            'tests/store/test_hostile_repositories.py',
            'tests/ops/test_snapshot_list_restore.py',
            'tests/desk/test_mount_points.py',
            'tests/ops/test_oversize_agent_writes.py',
            'tests/ops/test_removed_tracked_paths.py',
            'tests/desk/test_scan_compare.py',
            'tests/desk/test_scan_limit_races.py',
            'tests/desk/test_scan_memory.py',  # 8 MiB files: kept out of the other runs
            *FOUND_BY_MUTATION,
        ],
    ),
    'walk': (
        'trading_checkpoints.desk.walk.*',
        [
            'tests/desk/test_walk.py',
            'tests/desk/test_narrow.py',  # Narrowed: which rows a narrowed walk replaces
            'tests/desk/test_statcache.py',
            'tests/desk/test_mount_points.py',
            'tests/store/test_hostile_repositories.py',
            'tests/ops/test_snapshot_list_restore.py',
            'tests/ops/test_removed_tracked_paths.py',
            'tests/desk/test_symlink_races.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'calls': (
        'trading_checkpoints.ops.calls.*',
        [
            'tests/ops/test_calls.py',  # in-process: what mutmut learns coverage from
            'tests/agent/test_hooks_calls.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'protectmatch': (
        'trading_checkpoints.ops.protectmatch.*',
        [
            'tests/ops/test_protect_matching.py',  # in-process: what mutmut learns coverage from
            'tests/agent/test_hooks_protect.py',  # the hooks, in-process too
            'tests/ops/test_policy.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'policy': (
        'trading_checkpoints.ops.policy.*',
        [
            'tests/ops/test_protect_matching.py',
            'tests/ops/test_policy.py',
            'tests/ops/test_policy_values.py',
            'tests/agent/test_hooks_protect.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    'narrow': (
        'trading_checkpoints.desk.narrow.*',
        [
            'tests/desk/test_narrow.py',  # in-process: what mutmut learns coverage from
            'tests/agent/test_watch_narrow.py',  # real watchers: the scan runs in the test too
            *FOUND_BY_MUTATION,
        ],
    ),
    # The watcher's vouch: the watcher runs in the test's process in test_vouchwatch.py (what
    # mutmut learns coverage from for agent/); the client side runs in-process everywhere.
    'vouchprotocol': (
        'trading_checkpoints.desk.vouchprotocol.*',
        ['tests/desk/test_vouchprotocol.py', *WATCH_TESTS],
    ),
    'vouch': (
        'trading_checkpoints.desk.vouch.*',
        ['tests/desk/test_vouch_client.py', *WATCH_TESTS],
    ),
    # A seal's scan past the memory budget (8 MiB files) stores what it recorded.
    'vouched': (
        'trading_checkpoints.ops.vouched.*',
        [*WATCH_TESTS, 'tests/desk/test_scan_memory.py'],
    ),
    'inotify': ('trading_checkpoints.agent.inotify.*', WATCH_TESTS),
    # Only test_vouchwatch.py runs the watcher in the test's process: the other watch tests'
    # watchers are processes of their own, from which mutmut learns no coverage.
    'vouchwatch': ('trading_checkpoints.agent.vouchwatch.*', ['tests/agent/test_vouchwatch.py']),
    # The warm server: each step is tested in the test process (what mutmut learns coverage
    # from); the real clients, servers and children of tests/warm run in other processes.
    'warmclient': (
        'trading_checkpoints.warm.client.*',
        ['tests/warm/test_client_steps.py', 'tests/warm/test_client_handover.py'],
    ),
    'warmchild': ('trading_checkpoints.warm.child.*', ['tests/warm/test_child_steps.py']),
    'warmserver': ('trading_checkpoints.warm.server.*', ['tests/warm/test_server_steps.py']),
    'warmcontext': (
        'trading_checkpoints.warm.context.*',
        [
            'tests/warm/test_context.py',
            'tests/warm/test_child_steps.py',
            'tests/warm/test_context_steps.py',
        ],
    ),
    'warmaddress': ('trading_checkpoints.warm.address.*', ['tests/warm/test_address.py']),
    'warmwire': (
        'trading_checkpoints.warm.wire.*',
        ['tests/warm/test_wire.py', 'tests/warm/test_child_steps.py'],
    ),
    'warmcommand': ('trading_checkpoints.warm.command.*', ['tests/warm/test_command.py']),
    'warmpreload': (
        'trading_checkpoints.warm.preload.*',
        ['tests/warm/test_preload_steps.py', 'tests/warm/test_preload.py'],
    ),
    # Rewinding a turn: every test drives the library in the test process (the hooks' tests
    # of it run the hooks in other processes).
    'rewind': (
        'trading_checkpoints.ops.rewind.*',
        [
            'tests/ops/test_rewind.py',
            'tests/ops/test_rewind_records.py',
            'tests/ops/test_turns.py',
            'tests/ops/test_capture_announced.py',
            'tests/test_error_kinds.py',
        ],
    ),
    # Turns: opened, snapshotted, marked and listed by the library in the test process (the
    # hooks' and the command line's tests of them run in other processes).
    'turns': (
        'trading_checkpoints.ops.turns.*',
        [
            'tests/ops/test_turns.py',
            'tests/ops/test_turn_arguments.py',
            'tests/ops/test_turn_records.py',
            'tests/ops/test_turn_index.py',
            'tests/ops/test_rewind.py',
            'tests/ops/test_attribution_turns.py',
            'tests/ops/test_result_forms.py',
            'tests/test_error_kinds.py',
        ],
    ),
    # As-of lookups and what the desk held then, in-process (the command line's tests of
    # ``--at`` run in other processes).
    'asof': ('trading_checkpoints.ops.asof.*', ['tests/ops/test_asof.py']),
    'heldat': (
        'trading_checkpoints.ops.heldat.*',
        ['tests/ops/test_held_at.py', 'tests/ops/test_asof.py'],
    ),
    # Who made each change: the reading rewinds and blame share, both run in-process.
    'credits': (
        'trading_checkpoints.ops.credits.*',
        [
            'tests/ops/test_rewind.py',
            'tests/ops/test_rewind_records.py',
            'tests/ops/test_blame.py',
            'tests/ops/test_blame_calls.py',
            'tests/ops/test_capture_announced.py',
        ],
    ),
    # A tool call from its hook before to its hook after, driven in the test process.
    # A write tool's hooks: the folders they walk (its declared paths', an earlier seal's),
    # and when the checkpoint before it may walk only those (no link, no second name).
    'declared': (
        'trading_checkpoints.ops.declared.*',
        [
            'tests/ops/test_declared_seal.py',
            'tests/ops/test_declared_prewrite.py',
            'tests/ops/test_toolcalls.py',
            *FOUND_BY_MUTATION,
        ],
    ),
    # The current announcement, kept beside the seal ref: it counts only on the ref's value
    # it stands on, whole (its id), and a move of the seal ref removes it.
    'announced': (
        'trading_checkpoints.ops.announced.*',
        [
            'tests/ops/test_announced_record.py',
            'tests/ops/test_capture_announced.py',
            'tests/ops/test_snapshot_without_lock.py',
            'tests/ops/test_settled.py',
            'tests/ops/test_attribution.py',
            'tests/ops/test_attribution_turns.py',
        ],
    ),
    'toolcalls': (
        'trading_checkpoints.ops.toolcalls.*',
        [
            'tests/ops/test_toolcalls.py',
            'tests/ops/test_declared_prewrite.py',
            'tests/ops/test_rewind_records.py',
            # the other callers' tests: who wrote what, the turns, the hooks' calls in-process
            'tests/ops/test_blame_calls.py',
            'tests/ops/test_turn_records.py',
            'tests/ops/test_held_at.py',
            'tests/agent/test_watch_narrow.py',
            'tests/agent/test_hooks_calls.py',
            'tests/agent/test_hook_writes.py',
            'tests/agent/test_hooks_shell.py',
            'tests/agent/test_hook_dispatch.py',
            'tests/agent/test_hooks_unexplained.py',
        ],
    ),
    # The watch itself: run in a thread of the test process, or in its main thread stopped by
    # a signal (test_watch.py runs it as its own process).
    'watch': (
        'trading_checkpoints.agent.watch.*',
        [
            'tests/agent/test_watch_in_process.py',
            'tests/agent/test_watch_steps.py',
            'tests/ops/test_capture_announced.py',
        ],
    ),
    'warmwatched': ('trading_checkpoints.warm.watched.*', ['tests/warm/test_watched.py']),
    # The hooks: each event handled in the test's process (``hooks.run``, with real desks and
    # the real harnesses' saved payloads); the hook command's own tests run it as a process.
    'hookdispatch': ('trading_checkpoints.agent.hooks.dispatch.*', HOOK_TESTS),
    'hookevents': (
        'trading_checkpoints.agent.hooks.events.*',
        ['tests/agent/test_real_hook_events.py', 'tests/agent/test_hook_events.py'],
    ),
    'hookprotect': (
        'trading_checkpoints.agent.hooks.protect.*',
        ['tests/agent/test_hooks_protect.py', 'tests/agent/test_hook_protect_steps.py'],
    ),
    'hookprocess': (
        'trading_checkpoints.agent.hooks.process.*',
        ['tests/agent/test_hook_process.py'],
    ),
    'hookplace': (
        'trading_checkpoints.agent.hooks.place.*',
        ['tests/agent/test_hook_place.py', *HOOK_TESTS],
    ),
    # The MCP server's start: each step in the test's process (the handshake over real pipes in
    # place of stdin and stdout), and whole servers with the SDK there too; test_mcp_start.py
    # runs whole servers as processes.
    'mcpstart': (
        'trading_checkpoints.agent.mcpstart.*',
        ['tests/agent/test_mcp_start_steps.py', 'tests/agent/test_mcp_start_relay.py'],
    ),
    'private': ('trading_checkpoints.core.private.*', ['tests/core/test_private_sockets.py']),
    'installation': (
        'trading_checkpoints.core.installation.*',
        ['tests/core/test_installation.py', 'tests/warm/test_address.py'],
    ),
}


DIFFERENTIAL = 'tests/warm/test_differential.py::test_a_command_served_does_what_it_does_in_process'

# module -> tests (files, or ``file::test`` ids) that run the module's code in the real processes
# they start: what the functions of the mutants left alive are mapped to too (see above).
PROCESS_TESTS: dict[str, list[str]] = {
    # ``run`` runs only in the console script's process (a served command's child, or a
    # client's own process): the tests run it there.
    'warmcommand': ['tests/warm/test_command.py'],
    # The console script's client: a command served (its output, status and signals relayed),
    # the server started, and the off switch; a server killed mid-command, a hung server given
    # up, Ctrl-C before any child answers, a signal mid-command as in-process, stdin closed.
    'warmclient': [
        'tests/warm/test_server.py::test_served_commands_print_and_exit_as_in_process',
        'tests/warm/test_server.py::test_a_served_command_runs_in_a_child_of_the_server_once',
        'tests/warm/test_server.py::test_ctrl_c_reaches_the_served_command',
        'tests/warm/test_server.py::test_the_off_switch_starts_no_server',
        'tests/warm/test_server.py::test_a_server_killed_mid_command_is_reported_never_rerun',
        'tests/warm/test_server.py::test_ctrl_c_before_any_child_answers_runs_nothing',
        'tests/warm/test_exactly_once.py::test_a_hung_server_is_given_up_before_the_command_starts',
        'tests/warm/test_exactly_once.py::test_a_signal_mid_command_ends_it_as_in_process',
        'tests/warm/test_exactly_once.py::'
        'test_checkpoints_hook_with_stdin_closed_never_hangs_and_never_runs_twice',
    ],
    # ``serve``, ``_run`` and ``_finalize`` run in the server's child: commands served as they
    # run in-process (output, status, Ctrl-C, a reader gone, the environment taken).
    'warmchild': [
        'tests/warm/test_server.py::test_served_commands_print_and_exit_as_in_process',
        'tests/warm/test_server.py::test_a_served_command_runs_in_a_child_of_the_server_once',
        'tests/warm/test_server.py::test_ctrl_c_reaches_the_served_command',
        f'{DIFFERENTIAL}[stdout closed by its reader]',
        f'{DIFFERENTIAL}[environment]',
        # its end in a forked child (an interrupt, an error let out, a final flush that fails),
        # the hook's own script, a client gone before ``run N``, the server's code changed
        'tests/warm/test_child_end.py',
        'tests/warm/test_server.py::test_the_hook_script_served_runs_the_hook',
        'tests/warm/test_exactly_once.py::test_a_client_that_hangs_up_before_its_command_starts_leaves_nothing_run',
        'tests/warm/test_fresh_code.py::test_a_watched_server_refuses_a_client_of_changed_code_before_it_notices',
    ],
    # ``adopt`` takes a real client's limits in a second process.
    'warmcontext': [
        'tests/warm/test_context.py::test_the_child_takes_the_clients_folder_umask_limits_and_signals',
        'tests/warm/test_context.py::test_a_limit_the_child_cannot_reach_is_refused',
        'tests/warm/test_context.py::test_a_limit_on_what_the_process_used_is_refused',
        'tests/warm/test_context.py::test_a_clients_folder_it_may_enter_but_not_list_is_taken',
    ],
    # ``preload`` itself runs in a fresh interpreter, as the server runs it,
    # and a preload that fails in the server leaves every command unserved.
    'warmpreload': [
        'tests/warm/test_preload.py',
        'tests/warm/test_server.py::test_a_served_command_runs_in_a_child_of_the_server_once',
    ],
    # The interpreter's options, told apart by interpreters started with them.
    'installation': [
        'tests/core/test_installation.py::test_the_interpreter_and_its_options_are_part_of_it'
    ],
    # The relay's threads and its wait for them, seen only as a server process ends: a client
    # that stopped reading, an SDK that fails as it starts.
    'mcpstart': [
        'tests/agent/test_mcp_start.py::test_a_server_whose_client_stopped_reading_still_ends',
        'tests/agent/test_mcp_start.py::test_a_server_that_fails_as_it_starts_ends_while_its_client_waits',
    ],
    # ``main``, ``_fork_waiting``, ``_wait_for_client`` and ``_stop``: a real server started by
    # a client, a served command, a server stopped, one gone idle, another user's process, its
    # start (what it inherits, the slot's start lock, its folder), its code watched or listed,
    # a pid namespace of its own.
    'warmserver': [
        'tests/warm/test_server.py::test_a_served_command_runs_in_a_child_of_the_server_once',
        'tests/warm/test_server.py::test_a_stopped_server_takes_its_waiting_child_along',
        'tests/warm/test_server.py::test_an_idle_server_goes_away',
        'tests/warm/test_private.py::test_another_users_process_reaching_the_server_runs_nothing',
        'tests/warm/test_server_start.py',
        'tests/warm/test_pid_namespace.py',
        # the waiting child hands its client's connection over (a child a signal ends is told)
        'tests/warm/test_server_steps.py::test_serving_hands_each_client_to_a_child_and_tells_one_a_signal_ended',
        'tests/warm/test_fresh_code.py::test_a_watched_server_refuses_a_client_of_changed_code_before_it_notices',
        'tests/warm/test_fresh_code.py::test_code_off_the_local_file_systems_is_listed_for_every_client_to_check',
    ],
}


# Imported first by every process the tests start (the ``mutants/`` copy is on their
# ``PYTHONPATH``): mutmut's stats pass records coverage in the test process alone, and the
# recording fails in a process whose folder holds no mutmut configuration, so there the
# original code runs. A mutant's own run is left alone: its mutant is active in them too.
SITECUSTOMIZE = """\
import os

if os.environ.get('MUTANT_UNDER_TEST') == 'stats':
    del os.environ['MUTANT_UNDER_TEST']
"""


# ``python -m mutmut`` without the CPU-time limit (``RLIMIT_CPU``) mutmut sets on each mutant's
# run: every process the tests start inherits it, and the warm server's child refuses a client
# limited so (a CPU time counts what the server used before the command), so every served
# command would run in its client and every test that sees one served would fail, whatever
# the mutant. mutmut's wall-clock timeout (half that CPU limit) still ends a mutant that hangs.
MUTMUT = """\
import importlib.util
import os
import resource
import sys
import time
import types

from mutmut.workers import isolation


def setrlimit(kind, limits):
    if kind != resource.RLIMIT_CPU:
        resource.setrlimit(kind, limits)


# The limit left out where mutmut sets it, and only there (the tests set limits of their own).
isolation.resource = types.SimpleNamespace(**{**vars(resource), 'setrlimit': setrlimit})
sys.argv[0] = 'mutmut'
from mutmut import __main__ as mutmut_main

# The tests' warm servers import the package from mutants/, and a server will not serve code
# changed less than ``installation.RACY_SECONDS`` before it starts (it may still be being
# written): mutmut writes its copy there moments before its first tests, and its statistics
# file (in mutants/, a folder on the import path) after them, moments before the clean run.
# The rule is read from its file, the package left unimported: the tests import it from mutants/.
rule = importlib.util.spec_from_file_location('rule', 'trading_checkpoints/core/installation.py')
installation = importlib.util.module_from_spec(rule)
rule.loader.exec_module(installation)


def settle():
    paths = [
        os.path.join(folder, name)
        for folder, names, files in os.walk('mutants')
        for name in ['', *names, *files]
    ]
    while not installation.settled(paths):
        time.sleep(0.25)


def collect_or_load_stats(*args, **kwargs):
    settle()
    try:
        return collect(*args, **kwargs)
    finally:
        settle()


collect = mutmut_main.collect_or_load_stats
mutmut_main.collect_or_load_stats = collect_or_load_stats
mutmut_main.cli()
"""


def _config(module: str, tests: list[str]) -> str:
    pattern, _ = MODULES[module]  # 'trading_checkpoints.core.paths.*' mutates core/paths.py
    source = pattern.removesuffix('.*').replace('.', '/') + '.py'
    lines = [
        '',
        '[tool.mutmut]',
        'source_paths = ["trading_checkpoints"]',
        f'only_mutate = ["{source}"]',
        'pytest_add_cli_args_test_selection = [',
        *(f'    "{test}",' for test in tests if (ROOT / test.partition('::')[0]).exists()),
        ']',
        'also_copy = ["bin", "sitecustomize.py"]',  # what the tests' processes start from
        # pytest-benchmark left out: it makes ``.benchmarks`` in mutants/ as the first tests
        # start, and the warm servers they start would take their code as just changed.
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0",',
        '    "-p", "no:benchmark"]',
        'use_setproctitle = false',
        '',
    ]
    return '\n'.join(lines)


def _prepare(module: str, fresh: bool, baseline: bool) -> Path:
    pattern, tests = MODULES[module]
    # A test id of a file already selected would narrow pytest's run of that file to it.
    files = {test.partition('::')[0] for test in tests}
    tests = [
        *tests,
        *(test for test in PROCESS_TESTS.get(module, []) if test.partition('::')[0] not in files),
    ]
    if baseline:
        tests = [test for test in tests if test not in FOUND_BY_MUTATION]
    place = SCRATCH / (f'{module}-baseline' if baseline else module)
    if fresh and place.exists():
        shutil.rmtree(place)
    place.mkdir(parents=True, exist_ok=True)
    for name in ('trading_checkpoints', 'tests', 'bin'):
        if (place / name).exists():
            shutil.rmtree(place / name)
        shutil.copytree(ROOT / name, place / name, ignore=shutil.ignore_patterns('__pycache__'))
    if baseline:
        for test in FOUND_BY_MUTATION:
            (place / test).unlink(missing_ok=True)
    (place / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    text = (ROOT / 'pyproject.toml').read_text()
    text = re.sub(r'\n\[tool\.mutmut\].*?(?=\n\[|\Z)', '', text, flags=re.S)
    (place / 'pyproject.toml').write_text(text + _config(module, tests))
    # mutmut copies a source file again only when it changed: start from the current code.
    if (place / 'mutants').exists():
        shutil.rmtree(place / 'mutants' / 'trading_checkpoints', ignore_errors=True)
        shutil.rmtree(place / 'mutants' / 'tests', ignore_errors=True)
        # Which tests cover which function is learnt again: the tests may have changed.
        (place / 'mutants' / 'mutmut-stats.json').unlink(missing_ok=True)
    return place


def _mutmut(place: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith('CHECKPOINTS_')}
    # No ``__pycache__`` made as the tests run: a folder of the package changed moments ago
    # makes a warm server started then stop at once (its code not settled yet), and a test
    # that expects one fail whatever the mutant.
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    return subprocess.run(
        [sys.executable, '-c', MUTMUT, *args],
        cwd=place,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _statuses(place: Path, prefix: str) -> dict[str, str]:
    listing = _mutmut(place, 'results', '--all', 'true').stdout
    statuses = {}
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(': ')
        if name.startswith(prefix):
            statuses[name] = status
    return statuses


def _map_to_process_tests(place: Path, names: list[str], tests: list[str]) -> None:
    """Adds ``tests``' ids to the tests of the functions of the mutants ``names`` in mutmut's
    stats."""
    stats_file = place / 'mutants' / 'mutmut-stats.json'
    stats = json.loads(stats_file.read_text())
    ids = [
        known
        for known in stats['duration_by_test']
        if any(known == test or known.startswith((test + '::', test + '[')) for test in tests)
    ]
    if not ids:
        raise SystemExit(f'the stats pass ran none of the process tests {tests}')
    covered = stats['tests_by_mangled_function_name']
    for name in names:
        function = name.partition('__mutmut_')[0]
        covered[function] = sorted({*covered.get(function, []), *ids})
    stats_file.write_text(json.dumps(stats, indent=4))


def _not_killed(place: Path, prefix: str) -> list[str]:
    listing = _mutmut(place, 'results', '--all', 'true').stdout
    names = []
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(': ')
        if name.startswith(prefix) and status not in (
            'killed',
            'caught by type check',
            'not checked',
        ):
            names.append(name)
    return names


def _run_mutmut(
    place: Path, module: str, max_children: int, names: list[str], log: str = 'run.log'
) -> None:
    done = _mutmut(place, 'run', '--max-children', str(max_children), *names)
    (place / log).write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep='\n')
        raise SystemExit(f'mutmut failed for {module} (see {place / log})')


def run(
    module: str,
    max_children: int,
    fresh: bool,
    show: bool,
    baseline: bool = False,
    recheck: bool = False,
    again: bool = False,
    functions: tuple[str, ...] = (),
) -> dict[str, int]:
    pattern, _ = MODULES[module]
    wanted = [pattern]
    if functions:  # only these functions' mutants (a method: Class.method's mangled name)
        prefix = pattern.rstrip('*')
        wanted = [
            f'{prefix}x{"ǁ" if "." in name else "_"}{name.replace(".", "ǁ")}__mutmut_*'
            for name in functions
        ]
    if recheck or again:  # only the mutants the baseline run (or the last run) left alive
        earlier = SCRATCH / (f'{module}-baseline' if recheck else module)
        wanted = _not_killed(earlier, pattern.rstrip('*'))
        if not wanted:
            print(f'== {module}: the {"baseline" if recheck else "last"} run left no mutant alive')
            return {}
    place = _prepare(module, fresh, baseline)
    print(f'== {module}: mutmut run {pattern!r} ({len(wanted)} names) in {place}', flush=True)
    _run_mutmut(place, module, max_children, wanted)
    prefix = pattern.rstrip('*')
    if module in PROCESS_TESTS:
        statuses = _statuses(place, prefix)
        alive = [
            name
            for name, status in statuses.items()
            if status in ('no tests', 'survived')
            and ((not recheck and not again) or name in wanted)
        ]
        if alive:
            print(f'   {len(alive)} mutants left alive in-process: to the process tests too')
            _map_to_process_tests(place, alive, PROCESS_TESTS[module])
            _run_mutmut(place, module, max_children, alive, log='run-processes.log')
    listing = _mutmut(place, 'results', '--all', 'true').stdout
    counts: dict[str, int] = {}
    survivors = []
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(': ')
        if not name.startswith(prefix) or ((recheck or again) and name not in wanted):
            continue
        if functions and not any(fnmatch.fnmatchcase(name, want) for want in wanted):
            continue
        counts[status] = counts.get(status, 0) + 1
        if status not in ('killed', 'caught by type check'):
            survivors.append((name, status))
    total = sum(counts.values())
    summary = ', '.join(f'{count} {status}' for status, count in sorted(counts.items()))
    print(f'   {total} mutants: {summary}')
    for name, status in survivors:
        print(f'   {status}: {name}')
        if show:
            print(_mutmut(place, 'show', name).stdout)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('module', choices=[*MODULES, 'all'])
    parser.add_argument('--max-children', type=int, default=1, help='parallel workers (1)')
    parser.add_argument('--fresh', action='store_true', help='forget earlier results')
    parser.add_argument('--show', action='store_true', help="print each survivor's diff")
    parser.add_argument(
        '--baseline',
        action='store_true',
        help='without the FOUND_BY_MUTATION tests (the figures before them)',
    )
    parser.add_argument(
        '--recheck',
        action='store_true',
        help='run only the mutants a --baseline run of the module left alive',
    )
    parser.add_argument(
        '--again',
        action='store_true',
        help='run only the mutants the last run of the module left alive (after new tests; '
        'the module itself must be unchanged, or its mutants are numbered anew)',
    )
    parser.add_argument(
        '--functions',
        nargs='+',
        default=(),
        help="only these functions' mutants (e.g. take _mark; a method as Class.method)",
    )
    args = parser.parse_args()
    for module in MODULES if args.module == 'all' else [args.module]:
        run(
            module,
            args.max_children,
            args.fresh,
            args.show,
            args.baseline,
            args.recheck,
            args.again,
            tuple(args.functions),
        )


if __name__ == '__main__':
    main()
