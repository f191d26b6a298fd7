"""Every sentence of the README and the manual that promises behaviour names the test that checks
it, so a promise the code stops keeping fails a test instead of lying to the reader.

A sentence promises when its prose (inline code and link targets left out) holds one of the
words in ``PROMISE_WORDS``: the absolutes (never, always, exactly, only, guaranteed, cannot,
nothing, nobody, whatever), the universals (every, each), the refusals and stops (refuse,
stop, deny), what is kept or lost (keep, kept, lose, lost, untouched, unchanged, intact), and
the words of the threat model (private, atomic, safe). The list is wide on purpose: a list too
narrow is a test that cannot fail. "any" and "all" are left out: the pages use them mostly to
describe ("all the same", "any checkpoint can be listed"), and a promise made with them nearly
always carries one of the words above too. Such a sentence carries, right after it
in the same paragraph (list item, table cell), a marker naming the tests that check it::

    The lock is never held across a prompt. <!-- tested: tests/core/test_locking.py::test_x -->

(several names separated by commas or spaces; ``Class::test`` and a parametrised
``test_x[id]`` are accepted), or, for a sentence that uses such a word but promises no
behaviour, an exemption with its reason: ``<!-- not a promise: it says what a flag is for -->``.
A marker covers the one sentence it follows; several markers in a row cover the same sentence.

Prose is what is left of a page without its code blocks (fenced or indented), headings and
HTML comments; paragraphs, list items and table cells are the units a marker lives in.

The test fails listing ``file:line: sentence`` for every unmarked promise, and for every marker
naming a file that does not exist or a test that file does not define (read with ``ast``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from helpers import ROOT

PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]

PROMISE_WORDS = (
    'never',
    'always',
    'exactly',
    'only',
    'guarantee',
    'guarantees',
    'guaranteed',
    'cannot',
    "can't",
    'nothing',
    'nobody',
    'whatever',
    'every',
    'each',
    'refuse',
    'refuses',
    'refused',
    'stop',
    'stops',
    'stopped',
    'deny',
    'denies',
    'denied',
    'keep',
    'keeps',
    'kept',
    'lose',
    'loses',
    'lost',
    'untouched',
    'unchanged',
    'intact',
    'private',
    'atomic',
    'atomically',
    'safe',
    'safely',
)
_PROMISE = re.compile(r'(?<![\w-])(' + '|'.join(map(re.escape, PROMISE_WORDS)) + r')(?![\w-])')
_TESTED = re.compile(r'<!--\s*tested:(.*?)-->', re.S)
_EXEMPT = re.compile(r'<!--\s*not a promise:\s*(\S.*?)\s*-->', re.S)
_COMMENT = re.compile(r'<!--.*?-->', re.S)
# A sentence ends at . ! ? followed by a space and what starts one (a bold lead-in such as
# "**Prune asks first.**" stays with the sentence after it, which it names).
_SENTENCE_END = re.compile(r'(?<=[.!?])\s+(?=[A-Z`"(\[*])')
_LIST_ITEM = re.compile(r'\s*([-*+]|\d+\.)\s')
_FENCE = re.compile(r'\s*(```|~~~)')


@dataclass
class Sentence:
    line: int
    text: str
    markers: list[str] = field(default_factory=list)  # the comments right after it

    @property
    def promises(self) -> bool:
        return _PROMISE.search(self.prose.lower()) is not None

    @property
    def prose(self) -> str:
        return _mask(self.text)

    @property
    def tested(self) -> list[str]:
        return [name for m in self.markers for name in names_in(m)]

    @property
    def exempt(self) -> bool:
        return any(_EXEMPT.fullmatch(m.strip()) for m in self.markers)


def names_in(marker: str) -> list[str]:
    """The test names a ``tested:`` marker lists (none for any other comment)."""
    found = _TESTED.fullmatch(marker.strip())
    return [name for name in re.split(r'[\s,]+', found.group(1)) if name] if found else []


def _mask(text: str) -> str:
    """The text with inline code, link targets and comments blanked (same length, so offsets
    hold): a word inside them is not prose."""
    text = re.sub(r'(`+)(.+?)\1', lambda m: m.group(1) + ' ' * len(m.group(2)) + m.group(1), text)
    text = re.sub(r'\]\(([^)]*)\)', lambda m: '](' + ' ' * len(m.group(1)) + ')', text)
    return _COMMENT.sub(lambda m: ' ' * len(m.group(0)), text)


def units(markdown: str) -> list[tuple[int, str]]:
    """The page's prose units (paragraph, list item, table cell), each with its first line,
    without fenced blocks and headings."""
    found: list[tuple[int, str]] = []
    lines: list[str] = []
    start = 0
    fence = ''

    def close() -> None:
        if lines and ''.join(lines).strip():
            found.append((start, '\n'.join(lines)))
        lines.clear()

    listed = False  # inside a list, where an indented paragraph continues an item
    for number, line in enumerate(markdown.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence == '    ':  # an indented code block ends at the first line less indented
            if not line.strip() or line.startswith('    '):
                continue
            fence = ''
        if fence:
            if opened and opened.group(1) == fence:
                fence = ''
            continue
        if opened:
            close()
            fence = opened.group(1)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith('#') or re.fullmatch(r'[|\s:-]+', stripped):
            close()
            continue
        if stripped.startswith('|'):
            close()
            masked = _mask(stripped)
            edges = [i for i, c in enumerate(masked) if c == '|']
            for left, right in zip(edges, edges[1:], strict=False):
                cell = stripped[left + 1 : right]
                if cell.strip():
                    found.append((number, cell))
            continue
        if not lines and line.startswith('    ') and not listed:
            fence = '    '
            continue
        if _LIST_ITEM.match(line) or line.lstrip().startswith('!!!'):
            close()
            listed = True
        elif not lines and not line.startswith(' '):
            listed = False
        if not lines:
            start = number
        lines.append(line)
    close()
    return found


def sentences(markdown: str) -> list[Sentence]:
    """Every sentence of the page's prose, with the comments that follow it."""
    found: list[Sentence] = []
    for first, text in units(markdown):
        masked = _mask(text)
        comments = [m for m in _COMMENT.finditer(text) if masked[m.start()] == ' ']
        ours = len(found)
        cut = 0
        for end in [*(m.start() for m in comments), len(text)]:
            at = cut
            for part in _SENTENCE_END.split(masked[cut:end]):
                offset = masked.index(part, at) if part else at
                at = offset + len(part)
                if part.strip():
                    lead = len(part) - len(part.lstrip())
                    line = first + text.count('\n', 0, offset + lead)
                    found.append(Sentence(line, ' '.join(text[offset:at].split())))
            marker = next((m for m in comments if m.start() == end), None)
            if marker is None:
                break
            if len(found) > ours:
                found[-1].markers.append(marker.group(0))
            cut = marker.end()
    return found


def markers(markdown: str) -> list[tuple[int, str]]:
    """Every comment in the page's prose, with its line."""
    found = []
    for first, text in units(markdown):
        masked = _mask(text)
        for m in _COMMENT.finditer(text):
            if masked[m.start()] == ' ':
                found.append((first + text.count('\n', 0, m.start()), m.group(0)))
    return found


def unmarked(markdown: str) -> list[Sentence]:
    """The sentences that promise with no test named and no exemption."""
    return [s for s in sentences(markdown) if s.promises and not s.tested and not s.exempt]


@cache
def _defined(path: Path) -> frozenset[str]:
    """The tests a file defines: ``test_x`` and ``Class::test_x``."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f'{node.name}::{inner.name}')
    return frozenset(names)


def missing_test(name: str, root: Path = ROOT) -> str | None:
    """Why a marker's name does not name a test (None when it does)."""
    path, sep, test = name.partition('::')
    if not sep or not test:
        return f'{name}: not FILE::TEST'
    if not (root / path).is_file():
        return f'{name}: no file {path}'
    if re.sub(r'\[.*\]$', '', test) not in _defined((root / path).resolve()):
        return f'{name}: {path} defines no {test}'
    return None


def problems(page: str, markdown: str, root: Path = ROOT) -> list[str]:
    """What is wrong with a page's promises: unmarked ones, and markers naming no test."""
    found = [f'{page}:{s.line}: {s.text}' for s in unmarked(markdown)]
    for line, marker in markers(markdown):
        names = names_in(marker)
        if re.match(r'<!--\s*tested', marker) and not names:
            found.append(f'{page}:{line}: a tested marker naming nothing')
        for name in names:
            why = missing_test(name, root)
            if why:
                found.append(f'{page}:{line}: {why}')
    return found


def test_every_promise_of_the_readme_and_the_manual_names_a_test_that_exists() -> None:
    found = [
        problem
        for page in PAGES
        for problem in problems(str(page.relative_to(ROOT)), page.read_text())
    ]
    assert found == [], f'{len(found)} promises without a test:\n' + '\n'.join(found)


PAGE = """# A heading that is never checked

The lock is held while it writes. A crash never loses a checkpoint.

```console
$ checkpoints never
```

    an indented block that never counts

- Each restore is undoable. <!-- tested: tests/product/test_promises.py::test_x -->
- A restore snapshots first.

| verb | what |
| --- | --- |
| `restore` | refuses a dirty desk |
"""


def test_a_promise_without_a_marker_is_named_with_its_line() -> None:
    assert [(s.line, s.text) for s in unmarked(PAGE)] == [
        (3, 'A crash never loses a checkpoint.'),
        (16, 'refuses a dirty desk'),
    ]
    assert problems('page.md', PAGE)[:2] == [
        'page.md:3: A crash never loses a checkpoint.',
        'page.md:16: refuses a dirty desk',
    ]


def test_a_marker_covers_only_the_sentence_it_follows() -> None:
    page = (
        'A restore is always undoable. Nothing is lost.\n'
        '<!-- tested: tests/product/test_promises.py::test_an_exemption_needs_its_reason -->\n'
        'Every turn is kept. <!-- tested: a.py::t1 --> <!-- tested: a.py::t2 -->\n'
    )
    found = sentences(page)
    assert [s.text for s in unmarked(page)] == ['A restore is always undoable.']
    assert found[2].tested == ['a.py::t1', 'a.py::t2']


def test_a_marker_naming_a_missing_file_or_test_is_a_problem() -> None:
    here = 'tests/product/test_promises.py'
    page = (
        f'It never fails. <!-- tested: {here}::test_no_such_test, tests/no_such_file.py::test_x -->'
        f' It always works. <!-- tested: {here}::test_a_marker_covers_only_the_sentence_it_follows'
        f' {here}::Sentence::promises {here}::test_an_exemption_needs_its_reason[one] -->'
        ' It stops. <!-- tested: -->'
    )
    assert problems('page.md', page) == [
        'page.md:1: It stops.',
        f'page.md:1: {here}::test_no_such_test: {here} defines no test_no_such_test',
        'page.md:1: tests/no_such_file.py::test_x: no file tests/no_such_file.py',
        'page.md:1: a tested marker naming nothing',
    ]


def test_code_link_targets_and_headings_are_not_prose() -> None:
    page = (
        '# Never\n\n'
        'Run `checkpoints --only x` and see [the page](never.md).\n\n'
        '```\nnever\n```\n'
        '<!-- never -->\n'
    )
    assert [s.text for s in sentences(page)] == [
        'Run `checkpoints --only x` and see [the page](never.md).'
    ]
    assert unmarked(page) == []


def test_an_exemption_needs_its_reason() -> None:
    page = 'Each verb has a page. <!-- not a promise: says where the pages are -->\n\n'
    page += 'Each verb has a page too. <!-- not a promise: -->\n'
    assert [s.text for s in unmarked(page)] == ['Each verb has a page too.']


def test_the_checker_fails_on_a_copy_of_a_page_with_a_promise_added(tmp_path: Path) -> None:
    page = (ROOT / 'docs' / 'storage.md').read_text()
    copy = tmp_path / 'storage.md'
    copy.write_text(page + '\nA checkpoint is never lost.\n')
    found = problems('storage.md', copy.read_text())
    lines = page.count('\n') + 2
    assert f'storage.md:{lines}: A checkpoint is never lost.' in found
