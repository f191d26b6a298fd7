"""``agent/hooks/jsonc``: a settings file's text edited in place. Whatever the text, an edit
either gives text that parses to exactly the settings intended, with every comment kept, or is
refused; it never drops a comment or says other than it meant."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trading_checkpoints.agent.hooks import jsonc

KEYS = st.sampled_from(['hooks', 'theme', 'model', 'env', 'a', 'é'])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.text(max_size=5))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def commented(draw: st.DrawFn) -> tuple[str, dict, list[str]]:
    """A JSON object's text with comments after some of its lines and before it."""
    data = draw(st.dictionaries(KEYS, VALUES, max_size=5))
    indent = draw(st.sampled_from([2, 4, '\t']))
    lines = json.dumps(data, indent=indent, ensure_ascii=False).split('\n')
    comments = []
    for at in range(len(lines)):
        kind = draw(st.sampled_from(['', '', 'line', 'block']))
        if kind:
            comment = f'// note {at}' if kind == 'line' else f'/* note {at} */'
            comments.append(comment)
            lines[at] += ' ' + comment
    head = draw(st.sampled_from(['', '// settings\n', '/* a\n   b */\n']))
    comments += [head.strip()] if head else []
    return head + '\n'.join(lines) + '\n', data, comments


@settings(max_examples=300, deadline=None)
@given(commented(), KEYS, VALUES, st.booleans())
def test_an_edit_is_exact_and_keeps_every_comment_or_is_refused(
    case: tuple[str, dict, list[str]], key: str, value: object, remove: bool
) -> None:
    text, data, comments = case
    assert jsonc.parse(text) == data
    try:
        edited = jsonc.set_member(text, [], key, value, remove=remove)
    except jsonc.CommentInTheWay:
        return
    expected = dict(data)
    if remove:
        expected.pop(key, None)
    else:
        expected[key] = value
    assert jsonc.parse(edited) == expected
    for comment in comments:
        assert comment in edited


def test_setting_then_removing_a_new_member_gives_the_very_text_back() -> None:
    text = '// mine\n{\n  "theme": "GitHub", // dark is too dark\n  "tools": {}\n}\n'
    added = jsonc.set_member(text, [], 'hooks', {'AfterTool': []})
    assert added == (
        '// mine\n{\n  "theme": "GitHub", // dark is too dark\n  "tools": {},\n'
        '  "hooks": {\n    "AfterTool": []\n  }\n}\n'
    )
    assert jsonc.set_member(added, [], 'hooks', None, remove=True) == text


def test_a_member_of_a_nested_object_is_edited_in_place() -> None:
    text = '{\n    "hooks": {\n        // theirs\n        "Stop": [1]\n    }\n}'
    edited = jsonc.set_member(text, ['hooks'], 'BeforeAgent', [2])
    assert edited == (
        '{\n    "hooks": {\n        // theirs\n        "Stop": [1],\n'
        '        "BeforeAgent": [\n            2\n        ]\n    }\n}'
    )


@pytest.mark.parametrize(
    'text, problem',
    [
        ('{"a": 1} /* open', 'a /* comment at offset 9 is never closed'),
        ('{"a": 1e999}', 'the number 1e999 is too large to be finite'),
        ('{"a": -Infinity}', '-Infinity is not a JSON value'),
        ('{"a": "\\udc80"}', 'a string holds the lone surrogate \\udc80, which is no text'),
        ('{"a": 1,}', 'Expecting property name enclosed in double quotes'),
    ],
)
def test_what_is_not_json_is_refused(text: str, problem: str) -> None:
    with pytest.raises(jsonc.NotJSON, match=re.escape(problem)):
        jsonc.parse(text)


def test_a_comment_marker_inside_a_string_is_text() -> None:
    text = '{"url": "http://example.com/*x*/", "b": "//"} // end'
    assert jsonc.parse(text) == {'url': 'http://example.com/*x*/', 'b': '//'}
    assert not jsonc.has_comments('{"url": "http://x//y"}')


def test_removing_a_member_keeps_the_comment_written_above_the_next() -> None:
    text = '{\n  "hooks": {"Stop": []},\n  // the model we pay for\n  "model": "opus"\n}\n'
    assert jsonc.set_member(text, [], 'hooks', None, remove=True) == (
        '{\n  // the model we pay for\n  "model": "opus"\n}\n'
    )
