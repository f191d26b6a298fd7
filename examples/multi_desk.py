"""A workspace with several desks: each desk has its own checkpoints, restored independently.

The standard layout is ``<workspace>/desks/<desk>`` with ``<workspace>/.checkpoints/<desk>.git``;
``Workspace`` hands out a ``Checkpoints`` per desk. Here three agents (one per desk) work in
parallel threads, then one desk is rewound without touching the others.

Run it with ``python examples/multi_desk.py [WORKSPACE]``; without an argument it works in a
temporary folder and removes it afterwards.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

from trading_checkpoints import Workspace

PLANS = {
    'equities': ['- long MSFT', '- trim AAPL', '- SELL EVERYTHING'],
    'rates': ['- duration neutral', '- steepener 2s10s'],
    'research': ['- read the Fed minutes', '- model CPI surprise', '- write up notes'],
}


def desk_agent(workspace: Workspace, name: str, lines: list[str]) -> None:
    """One agent on one desk: every write goes through a guard, one turn per task."""
    checkpoints = workspace.desk(name, create=True)
    memory = checkpoints.desk_directory / 'Memory.md'
    for number, line in enumerate(lines, 1):
        with checkpoints.turn(f'task {number} on {name}', message_id=f'{name}-{number}'):
            with checkpoints.guard('write_file Memory.md'):
                previous = memory.read_text() if memory.exists() else f'# {name}\n'
                memory.write_text(previous + line + '\n')


def main(root: Path) -> None:
    workspace = Workspace(root)
    threads = [
        threading.Thread(target=desk_agent, args=(workspace, name, lines))
        for name, lines in PLANS.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    print('desks:')
    for name in workspace.desks():
        checkpoints = workspace.desk(name)
        print(
            f'  {name:<9} {len(checkpoints.list(limit=100))} checkpoints, '
            f'{len(checkpoints.turns())} turns'
        )
    assert workspace.desks() == sorted(PLANS)

    equities = workspace.desk('equities')
    before = {name: (workspace.desk_directory(name) / 'Memory.md').read_text() for name in PLANS}
    result = equities.restore_turn('equities-3')  # the bad call on one desk
    after = {name: (workspace.desk_directory(name) / 'Memory.md').read_text() for name in PLANS}
    print(f'\nrewound equities-3 on equities (restored {result.target_id}):')
    print('  ' + after['equities'].strip().replace('\n', '\n  '))
    assert 'SELL EVERYTHING' not in after['equities']
    assert after['rates'] == before['rates'] and after['research'] == before['research'], (
        'the other desks are untouched'
    )


if __name__ == '__main__':
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder))
