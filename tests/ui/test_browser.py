"""The browser driven through Textual's pilot on real repositories: the timeline, the diff,
the keys (j/k, Enter, /, d, r, u, q), refreshing when checkpoints are added, and paging."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import write
from helpers.pilot import Noted, cursor, diff_text, drive, text_of, visible
from textual.pilot import Pilot
from textual.widgets import OptionList

from trading_checkpoints import Checkpoints
from trading_checkpoints.ui.app import MORE, Browser
from trading_checkpoints.ui.timeline import Row, Run


def test_the_timeline_is_newest_first_with_a_turn_s_checkpoints_under_it(
    cps: Checkpoints, history: list[str]
) -> None:
    async def script(app: Browser, pilot: Pilot) -> None:
        first, written, edited, newest = history
        rows = visible(app)
        assert [line.split()[0] for line in rows] == [newest, 'turn', edited, written, first]
        assert rows[0].startswith(f'{newest}  2025-03-14 14:33:00  1 file +1 -1  remember the fill')
        assert rows[1].startswith('turn turn-7  2 checkpoints  2025-03-14 14:31:00')
        assert rows[2].strip().startswith(f'{edited}  2025-03-14 14:32:00')
        assert rows[2].endswith('edit_file notes/plan.md  [edit]')
        # The newest is selected: its fields, its file and its diff against the one before.
        assert text_of(app, '#summary').startswith(f'checkpoint {newest}  2025-03-14T14:33:00')
        files = app.query_one('#files', OptionList)
        assert [str(files.get_option_at_index(0).prompt)] == ['M Memory.md  +1 -1']
        assert '-- MSFT: watch' in diff_text(app) and '+- MSFT: bought at 398' in diff_text(app)
        await pilot.press('q')

    drive(Browser(cps, poll=0, storage=False), script)


def test_keys_move_open_the_diff_and_fold_a_turn(cps: Checkpoints, history: list[str]) -> None:
    first, written, edited, newest = history

    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press('j')
        assert isinstance(cursor(app), Run)
        await pilot.press('j')
        assert cursor(app).checkpoint.checkpoint_id == edited  # type: ignore[union-attr]
        assert '+Stop-loss 380.' in diff_text(app)
        await pilot.press('down', 'down')
        assert cursor(app).checkpoint.checkpoint_id == first  # type: ignore[union-attr]
        assert 'the oldest checkpoint kept, every file added' in diff_text(app)
        await pilot.press('k', 'up', 'up')
        assert isinstance(cursor(app), Run)
        await pilot.press('enter')  # a turn: Enter folds it
        assert len(visible(app)) == 3
        await pilot.press('j')
        assert cursor(app).checkpoint.checkpoint_id == first  # type: ignore[union-attr]
        await pilot.press('k', 'space')  # and unfolds
        assert len(visible(app)) == 5
        await pilot.press('j', 'enter')  # a checkpoint: Enter opens its diff
        assert app.focused is app.query_one('#diff-pane')
        await pilot.press('escape')
        assert app.focused is app.query_one('#timeline')
        await pilot.press('q')

    app = Browser(cps, poll=0, storage=False)
    drive(app, script)
    assert app.return_code == 0


def test_slash_searches_reasons_and_paths_and_n_finds_the_next(
    cps: Checkpoints, history: list[str]
) -> None:
    first, written, edited, newest = history

    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press('slash', *'FILL', 'enter')
        assert cursor(app).checkpoint.checkpoint_id == newest  # type: ignore[union-attr]
        await pilot.press('slash', *'plan.md', 'enter')  # a path: in the reason and declared
        assert cursor(app).checkpoint.checkpoint_id == edited  # type: ignore[union-attr]
        await pilot.press('n')
        assert cursor(app).checkpoint.checkpoint_id == written  # type: ignore[union-attr]
        await pilot.press('n')  # no older one: the cursor stays, a note says so
        assert cursor(app).checkpoint.checkpoint_id == written  # type: ignore[union-attr]
        await pilot.pause()
        assert any('no older checkpoint matches' in note for note in app.notes)
        await pilot.press('slash', *'memory.md', 'enter')  # a changed file's path only
        assert cursor(app).checkpoint.checkpoint_id == first  # type: ignore[union-attr]
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_d_compares_the_selected_checkpoint_with_the_desk_now(
    cps: Checkpoints, desk: Path, history: list[str]
) -> None:
    write(desk, 'notes/plan.md', 'SELL EVERYTHING\n')

    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press('j', 'j', 'd')
        shown = diff_text(app)
        assert f'{history[2]} -> the desk now' in shown
        assert '-Stop-loss 380.' in shown and '+SELL EVERYTHING' in shown
        await pilot.press('q')

    drive(Browser(cps, poll=0, storage=False), script)


def test_h_shows_the_history_of_the_file_highlighted_in_the_file_list(
    cps: Checkpoints, history: list[str]
) -> None:
    first, written, edited, newest = history

    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press('h')  # the newest checkpoint's first file
        lines = [line for line in diff_text(app).splitlines() if line.strip()]
        assert lines[0] == 'History of Memory.md, newest first'
        assert [line.split()[0] for line in lines[1:]] == [newest, first]
        await pilot.press('j', 'h')  # a turn: no files, a note says what to do
        assert any('select a checkpoint first' in note for note in app.notes)
        await pilot.press('j', 'tab')  # edit_file notes/plan.md; Tab: the file list
        assert app.focused is app.query_one('#files')
        await pilot.press('h')
        lines = [line for line in diff_text(app).splitlines() if line.strip()]
        assert lines[0] == 'History of notes/plan.md, newest first'
        assert [line.split()[0] for line in lines[1:]] == [edited, written]
        assert lines[1].endswith('  M  edit_file notes/plan.md')
        assert lines[2].endswith('  A  write_file notes/plan.md')
        await pilot.press('q')

    drive(Noted(cps, poll=0, storage=False), script)


def test_r_shows_the_plan_and_restores_only_on_yes_and_u_undoes(
    cps: Checkpoints, desk: Path, history: list[str]
) -> None:
    first = history[0]

    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press('end', 'r')
        plan = text_of(app.screen, '#plan')  # type: ignore[arg-type]
        assert plan.startswith(f'Restore the desk to checkpoint {first}?')
        assert 'write  Memory.md' in plan and 'delete notes/plan.md' in plan
        await pilot.press('n')
        assert (desk / 'notes' / 'plan.md').exists(), 'n changes nothing'
        await pilot.press('r', 'y')
        await pilot.pause()
        assert not (desk / 'notes' / 'plan.md').exists()
        assert (desk / 'Memory.md').read_text() == '# Memory\n- MSFT: watch\n'
        assert cursor(app) is not None  # the timeline reloaded with the restore's checkpoints
        assert visible(app)[0].split('  ')[-1].startswith('restored')
        await pilot.press('u')
        assert text_of(app.screen, '#plan').startswith('Undo the last step?')  # type: ignore[arg-type]
        await pilot.press('y')
        await pilot.pause()
        assert (desk / 'notes' / 'plan.md').read_text() == 'Buy MSFT below 400.\nStop-loss 380.\n'
        await pilot.press('q')

    drive(Browser(cps, poll=0, storage=False), script)


def test_new_checkpoints_appear_while_it_runs(
    cps: Checkpoints, desk: Path, history: list[str]
) -> None:
    async def script(app: Browser, pilot: Pilot) -> None:
        write(desk, 'Memory.md', 'written by another process\n')
        taken = Checkpoints(cps.repository_directory, desk).snapshot('meanwhile')
        # The reload shows the new row first and puts the cursor back after the next refresh:
        # wait for both (up to 5 s), then check them.
        for _ in range(100):
            await pilot.pause(0.05)
            selected = cursor(app)
            if visible(app)[0].startswith(str(taken)) and isinstance(selected, Row):
                if selected.checkpoint.checkpoint_id == history[-1]:
                    break
        assert visible(app)[0].startswith(f'{taken}  ')
        assert cursor(app).checkpoint.checkpoint_id == history[-1]  # type: ignore[union-attr]
        await pilot.press('q')

    drive(Browser(cps, poll=0.1, storage=False), script)


def test_the_storage_line_says_what_the_repository_takes(
    cps: Checkpoints, history: list[str]
) -> None:
    async def script(app: Browser, pilot: Pilot) -> None:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert text_of(app, '#storage').startswith('Storage: ')
        assert text_of(app, '#storage').endswith('no retention limits (prune --save sets them)')
        assert ' on disk; ' in text_of(app, '#storage')
        await pilot.press('q')

    drive(Browser(cps, poll=0), script)


def test_a_desk_without_checkpoints_says_so(cps: Checkpoints, desk: Path) -> None:
    async def script(app: Browser, pilot: Pilot) -> None:
        assert text_of(app, '#summary') == 'No checkpoints yet.'
        await pilot.press('j', 'r', 'd', 'q')

    app = Browser(cps, poll=0, storage=False)
    drive(app, script)
    assert app.return_code == 0


def test_a_long_history_is_read_a_page_at_a_time(cps: Checkpoints, desk: Path) -> None:
    for number in range(25):
        write(desk, 'Memory.md', f'v{number}\n')
        cps.snapshot(f'version {number}')

    async def script(app: Browser, pilot: Pilot) -> None:
        assert len(app.timeline.rows) == 10 and cursor(app) is not MORE
        assert visible(app)[-1].startswith('... older checkpoints')
        await pilot.press('end')  # the "older" line: the next page is read, no more
        assert len(app.timeline.rows) == 20
        await pilot.press('end')
        assert len(app.timeline.rows) == 25 and app.timeline.complete
        assert visible(app)[-1].startswith(cps.list(None)[-1].checkpoint_id)
        assert [line.split()[0] for line in visible(app)] == [
            c.checkpoint_id for c in cps.list(None)
        ]
        await pilot.press('q')

    drive(Browser(cps, poll=0, storage=False, page_size=10), script)


@pytest.mark.parametrize('key', ['q'])
def test_q_quits_with_status_0(cps: Checkpoints, history: list[str], key: str) -> None:
    async def script(app: Browser, pilot: Pilot) -> None:
        await pilot.press(key)

    app = Browser(cps, poll=0, storage=False)
    drive(app, script)
    assert app.return_code == 0 and not app.is_running
