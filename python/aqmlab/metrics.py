"""The former name of `aqmlab.measures`, kept so that scripts importing it still run."""

from .measures import *  # noqa: F401,F403
from .measures import _ns, duration_ns  # noqa: F401
