"""The hook's record of each session's open turn is one small file per session in
``<workspace>/.checkpoints/hooks/``, and a session silent for 30 days is forgotten the next
time a prompt opens a turn; the records of what the last events did stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from helpers.builders import write
from helpers.hookrun import event, hook, ok

DAY = 86400


def test_a_session_silent_for_30_days_is_forgotten_and_the_last_events_stay(
    workspace: Path, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0')
    ok(hook(event('claude_user_prompt_submit.json', workspace)))
    ok(hook(event('claude_pre_tool_use_write.json', workspace)))
    folder = workspace / '.checkpoints' / 'hooks'
    [ours] = [p for p in folder.glob('*.json') if p.name != 'last-event.json']
    kept = sorted(p.name for p in folder.iterdir())
    assert 'last-handled.claude' in kept
    old, recent = folder / 'old-session.json', folder / 'recent-session.json'
    old.write_text('{"turn": "old-20250101T000000", "label": "", "session": "old"}')
    recent.write_text('{"turn": "recent-20250101T000000", "label": "", "session": "recent"}')
    now = time.time()
    os.utime(old, (now - 31 * DAY, now - 31 * DAY))
    os.utime(recent, (now - 29 * DAY, now - 29 * DAY))
    for name in kept:  # the last events' records, however old, are not a session's
        os.utime(folder / name, (now - 400 * DAY, now - 400 * DAY))

    ok(hook(event('claude_user_prompt_submit.json', workspace, session_id='another-session')))

    left = sorted(p.name for p in folder.iterdir())
    assert old.name not in left, 'a session silent for 31 days is forgotten'
    assert recent.name in left, 'one silent for 29 days is not'
    assert set(kept) - {ours.name} <= set(left), 'what the last events did stays'
    assert len([p for p in folder.glob('*.json') if 'another' in p.read_text()]) == 1
