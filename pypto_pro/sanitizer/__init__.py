"""The PyPTO Pro sanitizer on the simulator (spec §5.3, ascend_950_model.md §6.1).

`@pl.jit(sanitizer=True)`, `with pypto_pro.sanitizer.sanitize():` or env `PYPTOPRO_SANITIZER=1`
run launches under the `Sanitizer` observer: memory faults, races found by happens-before
analysis, sync pairing bugs and uninitialised reads become `Finding`s in
`LaunchResult.sanitizer` (a `SanitizerReport`), printed after the launch in the real tool's
format. A launch that fails anyway (deadlock, double set_flag) carries its report in the
exception's `sanitizer` attribute.
"""
from ..trace.findings import KINDS, Finding, SanitizerReport, Site
from .observer import Sanitizer
from .switch import ENV_SANITIZER, sanitize, sanitizer_enabled

__all__ = [
           "ENV_SANITIZER",
           "KINDS",
           "Finding",
           "Sanitizer",
           "SanitizerReport",
           "Site",
           "sanitize",
           "sanitizer_enabled",
]
