"""What a hook event names, read in this process: the event object and why an input is none, the
files a write tool writes, the folder a shell command runs in, and the program names kept of a
command line (``agent/hooks/events.py``). The saved real events are read in
``test_real_hook_events.py``; these are the edges around them."""

from __future__ import annotations

import json

import pytest

from trading_checkpoints.agent.hooks.events import (
    MAX_EVENT_BYTES,
    MAX_PROGRAMS,
    HookError,
    parse_event,
    programs,
    shell_folder,
    shell_words,
    simple_commands,
    target_paths,
    text,
)


@pytest.mark.parametrize(
    'raw, message',
    [
        (b'', 'no hook event on stdin (expected one JSON object)'),
        (b' \n\t', 'no hook event on stdin (expected one JSON object)'),
        (b'[1, 2]', 'the hook event must be a JSON object, not list'),
        (b'"PreToolUse"', 'the hook event must be a JSON object, not str'),
        (b'{}', 'the hook event has no "hook_event_name"'),
        (b'{"hook_event_name": ""}', 'the hook event has no "hook_event_name"'),
        (b'{"hook_event_name": 7}', 'the hook event has no "hook_event_name"'),
    ],
)
def test_an_input_that_is_no_event_says_why_and_blocks_when_strict(raw: bytes, message: str):
    with pytest.raises(HookError) as caught:
        parse_event(raw)
    assert (str(caught.value), caught.value.blocks) == (message, True)


def test_invalid_json_and_a_nesting_too_deep_are_no_event():
    for raw in (b'{"hook_event_name": ', b'[' * 100_000):
        with pytest.raises(HookError) as caught:
            parse_event(raw)
        assert str(caught.value).startswith('the hook event on stdin is not valid JSON: ')
        assert caught.value.blocks and caught.value.__cause__ is None


def test_an_event_of_the_largest_size_is_read_and_a_larger_one_is_not():
    event = {'hook_event_name': 'PreToolUse', 'tool_input': {'content': ''}}
    padding = MAX_EVENT_BYTES - len(json.dumps(event).encode())
    event['tool_input']['content'] = 'x' * padding
    raw = json.dumps(event).encode()
    assert len(raw) == MAX_EVENT_BYTES
    assert parse_event(raw)['hook_event_name'] == 'PreToolUse'
    with pytest.raises(HookError) as caught:
        parse_event(raw + b' ')
    assert str(caught.value) == f'the hook event is larger than {MAX_EVENT_BYTES} bytes'
    assert caught.value.blocks


def test_a_hook_error_blocks_only_when_told():
    assert HookError('x').blocks is False


def test_text_is_a_non_empty_string_or_none():
    event = {'a': 'x', 'b': '', 'c': 3, 'd': None}
    assert [text(event, key) for key in 'abcde'] == ['x', None, None, None, None]


@pytest.mark.parametrize(
    'tool, tool_input, expected',
    [
        ('Write', {'file_path': '/w/desks/main/a.md'}, ['/w/desks/main/a.md']),
        ('Edit', {'file_path': '/w/desks/main/x/../a.md'}, ['/w/desks/main/a.md']),
        ('NotebookEdit', {'notebook_path': 'n.ipynb'}, ['/cwd/n.ipynb']),
        ('NotebookEdit', {'file_path': '/w/a.md'}, []),
        ('write_file', {'file_path': '', 'absolute_path': '/w/b.md'}, ['/w/b.md']),
        ('replace', {'path': 'c.md'}, ['/cwd/c.md']),
        ('write_file', {'file_path': 3, 'path': 'c.md'}, ['/cwd/c.md']),
        ('Write', {'file_path': '/w/a\0.md'}, []),
        ('Write', ['/w/a.md'], []),
        ('Read', {'file_path': '/w/a.md'}, []),
    ],
)
def test_the_files_a_write_tool_names(tool: str, tool_input: object, expected: list[str]):
    assert target_paths(tool, tool_input, '/cwd') == expected


def test_a_path_as_the_tool_named_it_keeps_its_dots():
    raw = target_paths('Edit', {'file_path': 'link/../a.md'}, '/cwd', normalize=False)
    assert raw == ['/cwd/link/../a.md']


def test_a_relative_path_without_a_cwd_is_an_error_that_does_not_block():
    with pytest.raises(HookError) as caught:
        target_paths('Write', {'file_path': 'notes/a.md'}, None)
    assert str(caught.value) == "Write names a relative path 'notes/a.md' and the event has no cwd"
    assert not caught.value.blocks


@pytest.mark.parametrize(
    'tool, tool_input, cwd, expected',
    [
        ('Bash', {'command': 'ls', 'dir_path': '/elsewhere'}, '/p', '/p'),
        ('Bash', {'command': 'ls'}, 'relative', None),
        ('Bash', None, '/p/x/..', '/p/x/..'),
        ('run_shell_command', {'dir_path': 'desks/main/'}, '/p', '/p/desks/main'),
        ('run_shell_command', {'directory': '/w/./desks'}, '/p', '/w/desks'),
        ('run_shell_command', {'dir_path': '', 'directory': 'd'}, '/p', '/p/d'),
        ('run_shell_command', {'dir_path': 7, 'directory': 'd'}, '/p', '/p/d'),
        ('run_shell_command', {'dir_path': 'a\0b'}, '/p', '/p'),
        ('run_shell_command', {'dir_path': 'd'}, None, None),
        ('run_shell_command', {'dir_path': '/abs'}, None, '/abs'),
        ('run_shell_command', ['/abs'], '/p', '/p'),
        ('Write', {'dir_path': '/abs'}, '/p', '/p'),
    ],
)
def test_the_folder_a_shell_command_runs_in(tool, tool_input, cwd, expected):
    assert shell_folder(tool, tool_input, cwd) == expected


def test_a_line_is_split_as_the_shell_splits_it():
    assert shell_words('a "b c" #d e') == ['a', 'b c']
    assert shell_words('x&&y|z;w') == ['x', '&&', 'y', '|', 'z', ';', 'w']
    assert shell_words('echo "open') is None
    assert shell_words('ls X # Y') == ['ls', 'X']
    assert simple_commands(['a', '&;()<>|', 'b']) == [['a'], ['b']]
    assert simple_commands(['cat', '<>', 'f', '<', 'g']) == [['cat', '<>', 'f', '<', 'g']]
    assert simple_commands(['a', '&&', 'b', 'c', '|', 'd', '(', ')', 'e']) == [
        ['a'],
        ['b', 'c'],
        ['d'],
        ['e'],
    ]
    assert simple_commands(['cat', '<', 'in', '>', 'out', '>>', 'x', '<<', 'y']) == [
        ['cat', '<', 'in', '>', 'out', '>>', 'x', '<<', 'y']
    ]
    assert simple_commands(['a', '|&', 'b', '&', 'c', ';;', 'd', '>&', 'e']) == [
        ['a'],
        ['b'],
        ['c'],
        ['d'],
        ['e'],
    ]


@pytest.mark.parametrize(
    'command, shown',
    [
        ('  ls\nrm -rf TOKEN123', 'ls'),
        ('ls\n;cat\n;rm', 'ls'),
        ('echo "open; TOKEN123', 'a command'),
        ('A=1 ls', 'ls'),
        ('> out; ls', 'ls'),
        ('/usr/bin/python3 x', 'python3'),
        ('=x ls', 'a command'),
        ('ls; ls && cat', 'ls, cat'),
        ('! time nohup exec command builtin rm x', 'rm'),
        ('{ ls; }', 'ls'),
        ('while true; do sleep 1; done', 'true, sleep'),
        ('until false; do x; done', 'false, x'),
        ('if a; then b; elif c; then d; else e; fi', 'a, b, c, d, e'),
        ('case $x in a) ls;; esac', 'ls'),
        ('select TOKEN123 in a; do ls; done', 'ls'),
        ('function TOKEN123 { ls; }', 'a command'),
        ('> out ls', 'a command'),
        ('(ls) | wc', 'ls, wc'),
        ('x`y`', 'a command'),
        ('./run.sh', 'run.sh'),
        ('a' * 32, 'a' * 32),
        ('a' * 33, 'a command'),
        ('ab$c', 'a command'),
        ('é', 'a command'),
        (3, 'a command'),
    ],
)
def test_the_program_names_of_a_command(command: object, shown: str):
    assert programs(command) == shown


def test_the_names_kept_stop_before_the_limit():
    names = [f'p{n:02d}' for n in range(40)]  # 3 characters each, 2 between
    shown = programs(' ; '.join(names))
    assert len(shown) <= MAX_PROGRAMS < len(shown) + len(', p99')
    assert shown == ', '.join(names[: (MAX_PROGRAMS + 2) // 5])
    first = f'{"a" * 32}, {"b" * 32}'
    assert programs(f'{"a" * 32}; {"b" * 32}; {"c" * 12}') == f'{first}, {"c" * 12}'
    assert len(f'{first}, {"c" * 12}') == MAX_PROGRAMS
    assert programs(f'{"a" * 32}; {"b" * 32}; {"c" * 13}; d') == first, 'no name after a cut'
