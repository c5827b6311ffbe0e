# Keys leave the environment, and the process closes its /proc entry, before anything
# slow is imported: the hand-over fd is open for as short a time as can be.
from browserbay.keys import hide_keys

hide_keys()

from browserbay.keeper.daemon import main  # noqa: E402 - after hide_keys, on purpose

main()
