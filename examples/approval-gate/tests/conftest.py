import sys
from pathlib import Path

# The example is not a workspace member: its tests import it from its source tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
