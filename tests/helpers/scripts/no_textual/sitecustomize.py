"""Put first on PYTHONPATH, this makes ``import textual`` fail in the process as it fails where
Textual is not installed (ModuleNotFoundError naming it): the browser's missing-extra path."""

import sys


class _NoTextual:
    def find_spec(self, name, path=None, target=None):
        if name == 'textual' or name.startswith('textual.'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
        return None


sys.meta_path.insert(0, _NoTextual())
