"""The browser's steps back and forth and its answers to "who wrote this?", through Textual's
pilot on real repositories: u and U (Ctrl-R) as the command line's undo and redo (a round
trip, the note naming the key that takes each step back, a refusal shown as the run would meet
it), b for who wrote each line, the turn's prompt beside it, unknown line counts shown as
unknown, and a start on the checkpoint of a time (--at)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from helpers.authors import four_writers, hook_write
from helpers.builders import write
from helpers.pilot import Noted, cursor, diff_text, drive, text_of, visible
from textual.pilot import Pilot

from trading_checkpoints import Checkpoints
from trading_checkpoints.ui.app import Browser
from trading_checkpoints.ui.timeline import Row


def versions(cps: Checkpoints, desk: Path) -> None:
    """Memory.md at v1, v2, v3, one checkpoint each; the desk holds v3."""
    for number in (1, 2, 3):
        write(desk, 'Memory.md', f'v{number}\n')
        cps.snapshot(f'v{number}')


def memory(desk: Path) -> str:
    return (desk / 'Memory.md').read_text()


def test_u_and_shift_u_undo_and_redo_as_the_command_line_does(cps: Checkpoints, desk: Path) -> None:
    versions(cps, desk)
    write(desk, 'Memory.md', 'v4, not checkpointed\n')

    async def script(app: Any, pilot: Pilot) -> None:
        seen = []
        for key in ('u', 'u', 'U', 'U', 'u'):
            await pilot.press(key)
            plan = text_of(app.screen, '#plan')
            question = 'Undo the last step?' if key == 'u' else 'Redo the last undo?'
            assert plan.startswith(question)
            back = 'U' if key == 'u' else 'u'
            assert f'so this can be taken back ({back}).' in plan
            await pilot.press('y')
            await pilot.pause()
            seen.append(memory(desk))
            taken_back = 'U redoes it' if key == 'u' else 'u undoes it'
            assert app.notes[-1].endswith(f'({taken_back})'), app.notes[-1]
        # As the command line's: back to v3, to v2, forward to v3, to v4, back to v3.
        assert seen == ['v3\n', 'v2\n', 'v3\n', 'v4, not checkpointed\n', 'v3\n']
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_ctrl_r_redoes_and_a_step_the_run_would_refuse_is_refused_before_asking(
    cps: Checkpoints, desk: Path
) -> None:
    versions(cps, desk)

    async def script(app: Any, pilot: Pilot) -> None:
        await pilot.press('U')  # nothing undone yet: the run's refusal, nothing asked
        assert not app.screen.query('#plan')
        assert 'nothing to redo' in app.notes[-1]
        await pilot.press('u', 'y')
        await pilot.pause()
        assert memory(desk) == 'v2\n'
        cps.snapshot('before write_file Memory.md', paths=['Memory.md'])  # announced...
        write(desk, 'Memory.md', 'the agent wrote this\n')  # ...and written since the undo
        await pilot.press('ctrl+r')
        assert not app.screen.query('#plan'), 'a refused redo asks nothing'
        assert app.notes[-1].startswith('would refuse to redo'), app.notes[-1]
        assert memory(desk) == 'the agent wrote this\n'
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_b_shows_who_wrote_each_line_of_the_file_and_the_turn_s_prompt(
    cps: Checkpoints, desk: Path, utc: None
) -> None:
    ids = four_writers(cps, desk)

    async def script(app: Any, pilot: Pilot) -> None:
        await pilot.press('b')  # the newest checkpoint's file: Memory.md
        lines = [line for line in diff_text(app).splitlines() if line.strip()]
        assert lines[0] == f'Who wrote Memory.md, as checkpoint {ids["watch"]} holds it'
        assert lines[1].split() == [
            ids['start'],
            '2025-03-14',
            '14:30:00',
            'unknown',
            '1',
            '#',
            'Memory',
        ]
        assert lines[2].startswith(f'{ids["t-1"]}  2025-03-14 14:32:00  turn t-1 (claude:Write)')
        assert lines[4].split()[3:6] == ['outside', 'the', 'agent']
        assert lines[5].split()[3:6] == ['seen', 'by', 'watch']
        assert lines[-2:] == [
            'turn t-1: add AAPL to the watchlist',
            'turn t-2: set the risk limit',
        ]
        await pilot.press('end', 'd', 'b')  # after d: the file as the desk holds it now
        assert diff_text(app).splitlines()[0] == 'Who wrote Memory.md, as the desk now holds it'
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_a_turn_s_prompt_is_beside_its_id_and_unknown_counts_are_not_zeros(
    cps: Checkpoints, desk: Path, utc: None
) -> None:
    write(desk, 'Memory.md', '# Memory\n')
    first = cps.snapshot('start')
    hook_write(cps, 't-1', 'add AAPL to the watchlist', 'S1', '- Watchlist: AAPL')
    write(desk, 'Memory.md', 'rewritten\n')
    time.sleep(0.2)  # hashed well after it was written: the stat cache trusts it from now on
    cps.snapshot('after t-1')
    cps.restore(first)  # the desk's side was not read back: the counts are not recorded

    async def script(app: Any, pilot: Pilot) -> None:
        rows = visible(app)
        restored = next(row for row in rows if 'restored' in row)
        assert '1 file +? -?' in restored and '+0 -0' not in restored
        turn = next(index for index, row in enumerate(rows) if row.startswith('turn t-1'))
        assert rows[turn].startswith('turn t-1 "add AAPL to the watchlist"  1 checkpoint')
        await pilot.press(*['j'] * (turn + 1))  # the turn's checkpoint
        assert isinstance(cursor(app), Row) and cursor(app).checkpoint.turn == 't-1'  # type: ignore[union-attr]
        assert text_of(app, '#summary').endswith('prompt: add AAPL to the watchlist')
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_a_start_checkpoint_puts_the_cursor_on_it_reading_older_pages(
    cps: Checkpoints, desk: Path
) -> None:
    for number in range(25):
        write(desk, 'Memory.md', f'v{number}\n')
        cps.snapshot(f'version {number}')
    wanted = cps.list(None)[22].checkpoint_id  # on the third page of ten

    async def script(app: Any, pilot: Pilot) -> None:
        await pilot.pause()
        assert cursor(app).checkpoint.checkpoint_id == wanted  # type: ignore[union-attr]
        assert text_of(app, '#summary').startswith(f'checkpoint {wanted}')
        await pilot.press('q')

    drive(Browser(cps, poll=0, storage=False, page_size=10, start=wanted), script)
