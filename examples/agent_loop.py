"""A scripted agent loop (no model, no network): guarded write tools, one turn per user message,
then a whole turn rewound.

Each user message opens a turn (``checkpoints.turn``); the agent's write tools are wrapped with
``checkpoints.before_write``, so the desk is snapshotted before every write and each snapshot
carries the turn's id. At the end the user asks to undo one answer: ``restore_turn`` puts every
file that turn wrote back as it was before the turn began.

Run it with ``python examples/agent_loop.py [WORKSPACE]``; without an argument it works in a
temporary folder and removes it afterwards.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

from trading_checkpoints import Checkpoints, Workspace


def make_tools(checkpoints: Checkpoints) -> dict:
    """The agent's file tools: one line each to put a checkpoint before every write."""
    desk = checkpoints.desk_directory

    @checkpoints.before_write('write_file', path_arg='path')
    def write_file(path: str, content: str) -> str:
        target = desk / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f'wrote {len(content)} characters to {path}'

    @checkpoints.before_write('append_file', path_arg='path')
    def append_file(path: str, line: str) -> str:
        target = desk / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open('a') as handle:
            handle.write(line + '\n')
        return f'appended to {path}'

    @checkpoints.before_write('delete_file', path_arg='path')
    def delete_file(path: str) -> str:
        (desk / path).unlink()
        return f'deleted {path}'

    def read_file(path: str) -> str:  # reads need no checkpoint
        return (desk / path).read_text()

    return {
        'write_file': write_file,
        'append_file': append_file,
        'delete_file': delete_file,
        'read_file': read_file,
    }


# What the pretend model does for each user message: (message id, message, tool calls).
SCRIPT = [
    (
        'msg_1',
        'Set up my trading memory',
        [
            ('write_file', {'path': 'Memory.md', 'content': '# Memory\n- style: swing trades\n'}),
            ('write_file', {'path': 'notes/watchlist.md', 'content': 'AAPL\nMSFT\n'}),
        ],
    ),
    (
        'msg_2',
        'What is on my watchlist?',
        [
            ('read_file', {'path': 'notes/watchlist.md'}),  # a turn that writes nothing
        ],
    ),
    (
        'msg_3',
        'Add NVDA and remember my risk limit',
        [
            ('append_file', {'path': 'notes/watchlist.md', 'line': 'NVDA'}),
            ('append_file', {'path': 'Memory.md', 'line': '- risk: 1% per trade'}),
            ('write_file', {'path': 'scratch/tmp.txt', 'content': 'untracked scratch'}),
        ],
    ),
    (
        'msg_4',
        'Clean up my notes',
        [  # the answer the user regrets
            ('delete_file', {'path': 'notes/watchlist.md'}),
            ('write_file', {'path': 'Memory.md', 'content': '# Memory\n(cleared)\n'}),
        ],
    ),
]


def main(root: Path) -> None:
    # Writes outside the tracked paths are allowed but noted on this logger.
    logging.basicConfig(format='  note: %(message)s', stream=sys.stdout)
    checkpoints = Workspace(root).desk('main', create=True)
    desk = checkpoints.desk_directory
    tools = make_tools(checkpoints)

    for message_id, message, calls in SCRIPT:
        print(f'user ({message_id}): {message}')
        with checkpoints.turn(message, message_id=message_id) as turn:
            for name, arguments in calls:
                result = tools[name](**arguments)
                print(f'  tool {name}: {result.strip().splitlines()[0]}')
        print(f'  -> {len(turn.checkpoint_ids)} checkpoint(s) in this turn')

    print('\nturns, newest first:')
    for turn in checkpoints.turns():
        print(f'  {turn.turn_id}  {turn.label!r}')
        for checkpoint in turn.checkpoints:
            print(f'      {checkpoint.checkpoint_id}  {checkpoint.reason}')
    assert [t.turn_id for t in checkpoints.turns()] == ['msg_4', 'msg_3', 'msg_1'], (
        'msg_2 wrote nothing, so it left no trace'
    )

    print('\nuser: undo your last answer!')
    result = checkpoints.restore_turn('msg_4')
    print(f'  rewound to {result.target_id}: wrote {", ".join(result.written)}')
    watchlist = (desk / 'notes/watchlist.md').read_text().split()
    print(f'  watchlist is back: {watchlist}')
    assert watchlist == ['AAPL', 'MSFT', 'NVDA']
    assert (desk / 'Memory.md').read_text().endswith('- risk: 1% per trade\n')
    assert (desk / 'scratch/tmp.txt').exists(), 'untracked files are never touched'

    checkpoints.restore(result.before_id)  # and the rewind itself can be undone
    assert not (desk / 'notes/watchlist.md').exists()
    print(f'  (and `restore {result.before_id}` would redo the cleanup)')


if __name__ == '__main__':
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder))
