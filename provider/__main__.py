"""The kai-gpu-fractions provider plugin: `python provider <engine address>` serves the package's
resources (components/plugin.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from components.plugin import serve  # noqa: E402

serve(sys.argv[1:])
