"""Blame of writes the tool calls on record explain (``ops/credits.py``): a person's edit after
a call's sealed write, a line two turns may have written, and a line a turn's command wrote."""

from __future__ import annotations

from pathlib import Path

from helpers.builders import write

from trading_checkpoints import Checkpoints
from trading_checkpoints.ops import toolcalls
from trading_checkpoints.store.metadata import Writer


def who(cps: Checkpoints) -> list[tuple[str, str, str | None, str | None, str | None, str]]:
    return [
        (line.origin.state, line.origin.author.kind, line.origin.author.turn,
         line.origin.author.session, line.origin.author.tool, line.text)
        for line in cps.blame('Memory.md').lines
    ]  # fmt: skip


def test_a_persons_line_after_a_calls_sealed_write_is_uncertain(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    call = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    toolcalls.before_write(cps, call, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'v0\nby A\n')
    toolcalls.after_write(cps.desk_config, call, ['Memory.md'])
    write(desk, 'Memory.md', 'v0\nby A\nby a person\n')
    assert who(cps)[1:] == [
        ('seal', 'agent', 'a-1', 'A', 'claude:Write', 'by A'),
        ('desk', 'uncertain', 'a-1', 'A', 'claude:Write', 'by a person'),
    ]


def test_a_line_two_turns_may_have_written_names_both_in_order(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    for first, second in (('c', 'b'), ('e', 'd')):  # the later turn's call first, each time
        shell = toolcalls.ToolCall(f'toolu_{first}', 'claude:Bash', Writer(f'{first}-1', first))
        other = toolcalls.ToolCall(f'toolu_{second}', 'claude:Write', Writer(f'{second}-1', second))
        toolcalls.before_shell(cps.desk_config, shell, 'before Bash')
        toolcalls.before_write(cps, other, 'before Write Memory.md', ['Memory.md'])
        text = (desk / 'Memory.md').read_text()
        write(desk, 'Memory.md', f'{text}by {second} or {first}\n')
        toolcalls.after_shell(cps.desk_config, shell, 'after Bash')
        toolcalls.unfinished(cps.desk_config, None, second)
    lines = who(cps)
    assert lines[1][1:4] == ('uncertain', 'b-1 or c-1', 'b or c')
    assert lines[2][1:4] == ('uncertain', 'd-1 or e-1', 'd or e')


def test_a_line_a_turns_command_wrote_names_the_command(cps: Checkpoints, desk: Path) -> None:
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    shell = toolcalls.ToolCall('toolu_1', 'claude:Bash', Writer('a-1', 'A'))
    toolcalls.before_shell(cps.desk_config, shell, 'before Bash: echo')
    write(desk, 'Memory.md', 'v0\nby the command\n')
    toolcalls.after_shell(cps.desk_config, shell, 'after Bash: echo')
    assert who(cps)[1] == ('checkpoint', 'agent', 'a-1', 'A', 'claude:Bash', 'by the command')


def test_a_sealed_write_superseded_by_the_turns_next_write_keeps_its_own_tool(
    cps: Checkpoints, desk: Path
) -> None:
    """The turn's next write (another tool) checkpoints the desk holding the first write: the
    first write's line names the tool that made it."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    first = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    toolcalls.before_write(cps, first, 'before Write Memory.md', ['Memory.md'])
    write(desk, 'Memory.md', 'v0\nby Write\n')
    toolcalls.after_write(cps.desk_config, first, ['Memory.md'])
    second = toolcalls.ToolCall('toolu_2', 'claude:Edit', Writer('a-1', 'A'))
    toolcalls.before_write(cps, second, 'before Edit notes/a.md', ['notes/a.md'])
    assert who(cps)[1] == ('checkpoint', 'agent', 'a-1', 'A', 'claude:Write', 'by Write')


def test_a_write_recorded_after_another_turns_declaration_never_takes_its_tool(
    cps: Checkpoints, desk: Path
) -> None:
    """B declared an Edit after A's Write began; A's write lands and is recorded by the next
    checkpoint, whose previous one is B's: B's tool is not A's."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    a = toolcalls.ToolCall('toolu_a', 'claude:Write', Writer('a-1', 'A'))
    b = toolcalls.ToolCall('toolu_b', 'claude:Edit', Writer('b-1', 'B'))
    toolcalls.before_write(cps, a, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, b, 'before Edit notes/b.md', ['notes/b.md'])
    write(desk, 'Memory.md', 'v0\nby A\n')
    toolcalls.after_write(cps.desk_config, a, ['Memory.md'])
    cps.snapshot('later')
    [line] = [entry for entry in who(cps) if entry[-1] == 'by A']
    assert line[2] == 'a-1' and line[4] != 'claude:Edit'


def test_a_sealed_line_is_the_calls_that_wrote_it_not_the_newest_checkpoints_turn(
    cps: Checkpoints, desk: Path
) -> None:
    """Session A's write is at work when session B's turn takes the newest checkpoint (B's
    write of another file); A's write lands and is sealed: the seal's line is A's, as the call
    record says, not B's, whose turn the seal follows."""
    write(desk, 'Memory.md', 'v0\n')
    cps.snapshot('start')
    a_call = toolcalls.ToolCall('toolu_1', 'claude:Write', Writer('a-1', 'A'))
    b_call = toolcalls.ToolCall('toolu_2', 'claude:Write', Writer('b-1', 'B'))
    toolcalls.before_write(cps, a_call, 'before Write Memory.md', ['Memory.md'])
    toolcalls.before_write(cps, b_call, 'before Write notes/x.md', ['notes/x.md'])
    write(desk, 'Memory.md', 'v0\nby A\n')
    toolcalls.after_write(cps.desk_config, a_call, ['Memory.md'])
    assert who(cps)[1] == ('seal', 'agent', 'a-1', 'A', 'claude:Write', 'by A')
