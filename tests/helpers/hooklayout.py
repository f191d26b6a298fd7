"""Where each harness keeps a project's settings, for the hook setup verbs' tests."""

SETTINGS = {'claude': '.claude/settings.local.json', 'gemini': '.gemini/settings.json'}
