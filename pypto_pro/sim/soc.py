"""The SoC tables under their former name: `pypto_pro.soc` holds them (the passes read them too)."""
from ..soc import *  # noqa: F403
from ..soc import __all__  # noqa: F401
