# The cyclic garbage collector is paused while the keeper starts (resumed, with everything
# the start made frozen out of its reach, once it listens: browserbay.keeper.daemon
# .resume_gc): the start allocates the objects of ~500 modules and keeps nearly all of them,
# and the collections that would walk them again and again cost a cold open ~15% of the
# keeper's import CPU, on a path that is CPU-bound.
import gc

gc.disable()

# Keys leave the environment, and the process closes its /proc entry, before anything
# slow is imported: the hand-over fd is open for as short a time as can be. Then Playwright's
# Node.js driver is spawned (browserbay.keeper.early: it boots on the other core while the
# keeper imports Playwright and itself), with the keys out of the environment already.
from browserbay.keys import hide_keys  # noqa: E402 - the collector paused first

hide_keys()

from browserbay.keeper.early import start_driver  # noqa: E402 - after hide_keys, on purpose
from browserbay.paths import bay_paths  # noqa: E402

early = start_driver(bay_paths())

from browserbay.keeper.daemon import main  # noqa: E402 - after the driver's spawn, on purpose

main(early, gc_paused=True)
