"""An agent's write tool backed by checkpoints: snapshot before each write, then rewind.

Run it with ``python examples/agent_session.py [WORKSPACE]``; without an argument it works in a
temporary folder and removes it afterwards.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from trading_checkpoints import Checkpoints


class DeskTools:
    """The file tools an agent is given, each one checkpointed before it writes."""

    def __init__(self, checkpoints: Checkpoints) -> None:
        self.checkpoints = checkpoints
        self.desk = checkpoints.desk_directory

    def write_file(self, path: str, content: str) -> None:
        self.checkpoints.snapshot(f'before write_file {path}')
        target = self.desk / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)

    def delete_file(self, path: str) -> None:
        self.checkpoints.snapshot(f'before delete_file {path}')
        (self.desk / path).unlink()


def main(workspace: Path) -> None:
    desk = workspace / 'desks' / 'main'
    desk.mkdir(parents=True, exist_ok=True)
    checkpoints = Checkpoints(workspace / '.checkpoints' / 'main.git', desk)
    tools = DeskTools(checkpoints)

    tools.write_file('Memory.md', '# Memory\n- prefers limit orders\n')
    tools.write_file('notes/ideas.md', '- pairs trade KO/PEP\n')
    tools.write_file('Memory.md', '# Memory\n- prefers limit orders\n- max 5 positions\n')
    tools.delete_file('notes/ideas.md')  # the agent deletes a note by mistake

    print('checkpoints, newest first:')
    history = checkpoints.list()
    for checkpoint in history:
        print(f'  {checkpoint.checkpoint_id}  {checkpoint.reason}')

    mistake = history[0]  # taken just before the deletion
    before = checkpoints.restore(mistake.checkpoint_id)
    print(
        f'restored {mistake.checkpoint_id}: notes/ideas.md is back: '
        f'{(desk / "notes/ideas.md").read_text().strip()!r}'
    )

    checkpoints.restore(before)  # undo the restore
    print(
        f'undid the restore (restored {before}): notes/ideas.md exists again? '
        f'{(desk / "notes/ideas.md").exists()}'
    )


if __name__ == '__main__':
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder))
