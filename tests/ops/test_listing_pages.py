"""Listing a history a page at a time (``ops.listing.page``), as the browser does: the pages
join up to the whole list, from the commit memo or through the repository alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.builders import session_turns, write

from trading_checkpoints import Checkpoints
from trading_checkpoints.errors import InvalidArgumentError
from trading_checkpoints.ops import listing
from trading_checkpoints.store import commitmemo


def every_page(repository: Path, size: int) -> list[listing.Page]:
    pages = [listing.page(repository, size)]
    while pages[-1].next is not None:
        pages.append(listing.page(repository, size, pages[-1].next))
    return pages


@pytest.fixture
def history(cps: Checkpoints, desk: Path) -> list[str]:
    """23 checkpoints, newest first."""
    return session_turns(cps, desk, 23)[::-1]


def test_pages_join_up_to_the_whole_history(cps: Checkpoints, history: list[str]) -> None:
    pages = every_page(cps.repository_directory, 10)
    assert [len(page.checkpoints) for page in pages] == [10, 10, 3]
    listed = [c for page in pages for c in page.checkpoints]
    assert listed == cps.list(None)
    assert [c.checkpoint_id for c in listed] == history
    for page in pages:
        assert [full[:7] for full in page.ids] == [c.checkpoint_id for c in page.checkpoints]
        assert all(len(full) == 40 for full in page.ids)
    assert pages[0].next == pages[1].ids[0] and pages[-1].next is None


def test_a_page_that_ends_at_the_root_says_so(cps: Checkpoints, history: list[str]) -> None:
    whole = listing.page(cps.repository_directory, 23)
    assert len(whole.checkpoints) == 23 and whole.next is None
    assert listing.page(cps.repository_directory, 0).checkpoints == ()


def test_pages_through_the_repository_when_the_memo_lacks_the_commits(
    cps: Checkpoints, history: list[str]
) -> None:
    cps.prune()  # compacts: every commit packed
    (cps.repository_directory / 'checkpoints' / commitmemo.NAME).unlink()
    pages = every_page(cps.repository_directory, 7)
    assert [c.checkpoint_id for page in pages for c in page.checkpoints] == history


def test_pages_stop_at_the_oldest_kept_after_a_prune(cps: Checkpoints, history: list[str]) -> None:
    cps.prune(keep=12)
    pages = every_page(cps.repository_directory, 5)
    assert [c.checkpoint_id for page in pages for c in page.checkpoints] == history[:12]


def test_a_page_of_a_desk_without_checkpoints_is_empty(cps: Checkpoints) -> None:
    assert listing.page(cps.repository_directory, 10) == listing.Page((), (), None)


@pytest.mark.parametrize('start', ['abc1234', 'X' * 40, 42])
def test_a_page_starts_at_a_full_id_only(cps: Checkpoints, history: list[str], start) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        listing.page(cps.repository_directory, 5, start)
    assert caught.value.name == 'start'


def test_the_library_pages_the_same_way(cps: Checkpoints, history: list[str]) -> None:
    first = cps.page(10)
    assert first == listing.page(cps.repository_directory, 10)
    assert cps.page(10, first.next).checkpoints == tuple(cps.list(20)[10:])


def test_what_a_checkpoint_introduced_is_its_diff_from_the_one_before(
    cps: Checkpoints, desk: Path
) -> None:
    write(desk, 'Memory.md', 'one\n')
    write(desk, 'notes/a.md', 'a\n')
    oldest = cps.snapshot('first')
    write(desk, 'Memory.md', 'two\n')
    newest = cps.snapshot('second')
    assert oldest is not None and newest is not None
    changed = cps.introduced(newest)
    assert (changed.from_id, changed.to_id) == (oldest, newest)
    assert [(c.path, c.kind) for c in changed.changes] == [('Memory.md', 'modified')]
    assert '-one\n+two\n' in (changed.changes[0].patch or '')
    root = cps.introduced(oldest, patches=False)
    assert root.from_id is None and root.to_id == oldest
    assert [(c.path, c.kind, c.patch) for c in root.changes] == [
        ('Memory.md', 'added', None),
        ('notes/a.md', 'added', None),
    ]
    assert cps.introduced(newest) == cps.diff(oldest, newest)
