"""The events the pinned harnesses send today are the ones saved in ``hook_events/real/`` (which
``tests/agent/test_real_hook_events.py`` feeds the product's parser): the same events, with
the same fields. After a version bump, ``python3 tests/helpers/harness/capture.py`` saves the
new ones."""

from __future__ import annotations

import json

import pytest
from helpers.harness.capture import SAVED, record
from helpers.harness.driver import Harness

pytestmark = pytest.mark.harness


def shape(event: dict) -> dict:
    """The fields of an event, and of its tool input."""
    return {'fields': sorted(event), 'tool_input': sorted(event.get('tool_input') or {})}


def test_the_harness_sends_the_saved_events(harness: Harness):
    live = {name: shape(event) for name, event in record(harness).items()}
    saved = {
        path.stem: shape(json.loads(path.read_text()))
        for path in SAVED.glob(f'{harness.name}-*.json')
    }
    assert live == saved
