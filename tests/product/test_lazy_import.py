"""Start-up cost: importing the package, `--help`, a cold `list`, and `status` or a snapshot of an
unchanged desk must not load dulwich."""

from __future__ import annotations

from pathlib import Path

from helpers.processes import python


def _modules_after(code: str) -> set[str]:
    out = python(f'{code}\nimport sys\nprint(" ".join(sys.modules))', check=True).stdout
    return set(out.split())


def test_import_package_does_not_load_dulwich() -> None:
    modules = _modules_after('import trading_checkpoints')
    assert 'trading_checkpoints' in modules
    assert not any(name.startswith('dulwich') for name in modules)


def test_cli_help_does_not_load_dulwich() -> None:
    code = (
        'import sys\nfrom trading_checkpoints.cli import cli\n'
        'try:\n    cli(["--help"], prog_name="checkpoints")\nexcept SystemExit:\n    pass'
    )
    modules = _modules_after(code)
    assert 'trading_checkpoints.cli' in modules
    assert not any(name.startswith('dulwich') for name in modules)


def test_lazy_names_resolve_and_unknown_names_fail() -> None:
    import trading_checkpoints

    assert trading_checkpoints.Checkpoints.__name__ == 'Checkpoints'
    assert trading_checkpoints.RestoreResult.__name__ == 'RestoreResult'
    try:
        trading_checkpoints.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert 'NoSuchThing' in str(error)
    else:
        raise AssertionError('an unknown attribute must raise AttributeError')


def test_a_cold_list_loads_no_dulwich(tmp_path: Path) -> None:
    """`checkpoints list` in a new process, on a repository whose commits are packed and
    loose, reads them without dulwich (the commit memo and loose objects)."""
    from trading_checkpoints import Checkpoints

    desk = tmp_path / 'desks' / 'main'
    desk.mkdir(parents=True)
    cps = Checkpoints(tmp_path / '.checkpoints' / 'main.git', desk)
    for i in range(70):
        (desk / f'notes-{i}.md').write_text('untracked')
    (desk / 'notes').mkdir()
    for i in range(70):
        (desk / 'notes' / f'{i}.md').write_text(f'note {i}')
    cps.snapshot('many files: packed')
    (desk / 'Memory.md').write_text('m')
    cps.snapshot('one more: loose')
    code = (
        'import sys\nfrom trading_checkpoints.cli import main\n'
        f'sys.argv = ["checkpoints", "--workspace", {str(tmp_path)!r}, "list"]\n'
        'try:\n    main()\nexcept SystemExit:\n    pass'
    )
    modules = _modules_after(code)
    assert 'trading_checkpoints.ops.listing' in modules
    assert not any(name.startswith('dulwich') for name in modules)


def _cli_in_new_process(workspace: Path, *args: str) -> tuple[set[str], str]:
    code = (
        'import sys\nfrom trading_checkpoints.cli import main\n'
        f'sys.argv = ["checkpoints", "--workspace", {str(workspace)!r}, *{list(args)!r}]\n'
        'try:\n    main()\nexcept SystemExit:\n    pass\n'
        'print("MODULES", " ".join(sys.modules))'
    )
    out = python(code, check=True).stdout
    text, _, modules = out.rpartition('MODULES ')
    return set(modules.split()), text


def test_status_and_a_no_op_snapshot_of_an_unchanged_desk_load_no_dulwich(tmp_path: Path) -> None:
    """What a hook runs before every tool call (a snapshot that finds nothing changed) and a
    `status` of an unchanged desk, in new processes, after a restore left a seal: neither opens
    the packs through dulwich (the seal is found in the pack index, the trees compared by id)."""
    from trading_checkpoints import Checkpoints

    desk = tmp_path / 'desks' / 'main'
    (desk / 'notes').mkdir(parents=True)
    cps = Checkpoints(tmp_path / '.checkpoints' / 'main.git', desk)
    for i in range(70):
        (desk / 'notes' / f'{i}.md').write_text(f'note {i}')
    first = cps.snapshot('many files')
    (desk / 'notes' / '1.md').write_text('changed')
    cps.snapshot('one change')
    assert first is not None
    cps.restore(first)  # leaves a seal on the restored state
    # The first snapshot that finds nothing changed after the restore records an announcement
    # (a write); the ones after it, as before every further tool call, write nothing.
    _cli_in_new_process(tmp_path, 'snapshot', '-m', 'before a write')
    for args, expected in (
        (('status',), 'No changes since checkpoint'),
        (('snapshot', '-m', 'before a write'), 'Nothing changed'),
    ):
        modules, output = _cli_in_new_process(tmp_path, *args)
        assert expected in output, output
        assert 'trading_checkpoints.ops.external' in modules
        assert not any(name.startswith('dulwich') for name in modules), args
    (desk / 'notes' / '2.md').write_text('changed outside')
    modules, output = _cli_in_new_process(tmp_path, 'status')
    assert 'M notes/2.md' in output, output  # a changed desk still reads the trees


def test_the_console_scripts_client_imports_only_what_it_relays_with() -> None:
    """The client runs for every hook event: beside what a bare interpreter loads, it imports
    the package's warm-server client modules and the socket's C core, nothing heavier."""
    bare = _modules_after('pass')
    modules = _modules_after('from trading_checkpoints.warm.client import main') - bare
    heavy = {'typing', 'socket', 'enum', 're', 'json', 'struct', 'click', 'dulwich'}
    assert 'trading_checkpoints.warm.client' in modules
    assert not modules & heavy, sorted(modules & heavy)
