// Stand-in for PyPTO Pro's runtime header `pypto_tprint.h` (the real one ships with the PyPTO
// Pro package, not with pto-isa): in the CPU-simulator mode pto-isa declares TPRINT itself.
#pragma once
