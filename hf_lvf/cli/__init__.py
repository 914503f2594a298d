"""The ``hf-lvf`` command line: :mod:`.commands` runs each command (the only place that
prints or configures logging), :mod:`.args` defines the parsers, :mod:`.demo` is the demo's
run. The top layer: it may import everything below it, and nothing imports it.
"""

from .commands import main

__all__ = ["main"]
