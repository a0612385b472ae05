"""The fixed text at the top of kernel.cpp: header comment, includes, scalar helpers.

The header comment names the kernel, arch and kernel type and gives the preprocessing recipe of
spec §1.4. The helpers give scalar code integer powers, typed min / max / abs and the fixpipe
deq word of a run-time FP32 scale (`//` and `%` are C++'s own operators, as in the real
generated code). They are defined once, outside the target guards, so both targets (and the
native CPU build) share them. getval / setval go through `PYPTO_TILE_ELEM` / `PYPTO_GM_ELEM`
and every GM window is announced by `PYPTO_GM_CHECK`, an integer `/` or `%` by the constant 0
(left to run time, as the real parser leaves it) divides by `PYPTO_ZERO_DIVISOR`, and
SuperScalar-buffer words are reached
through `PYPTO_SSBUF`: plain element access, nothing and a `__ssbuf__` pointer unless the build
defines them (the native headers check the bounds and map the buffer).
"""
from __future__ import annotations

ARCH_TARGET = {"a5": "dav-c310", "a3": "dav-c220", "a2": "dav-c220"}
MEMORY_MACRO = {"a5": "-DREGISTER_BASE", "a3": "-DMEMORY_BASE", "a2": "-DMEMORY_BASE"}


def header(kernel: str, arch: str, kernel_type: str, source: str) -> list[str]:
    target = ARCH_TARGET.get(arch, "dav-c310")
    macro = MEMORY_MACRO.get(arch, "-DREGISTER_BASE")
    return [
        f"// kernel.cpp: PyPTO Pro kernel '{kernel}' (arch {arch}, kernel type {kernel_type})",
        f"// generated from {source} by the PyPTO Pro Workbench CCE code generator; do not edit.",
        "//",
        "// Debug: preprocess with",
        (f"//   bisheng -xcce {macro} -E -I$ASCEND_TOOLKIT_HOME/include -I$ASCEND_HOME_PATH "
         f"--cce-aicore-arch={target} kernel.cpp > kernel.cce.i"),
        "#include <cstdint>",
        "#include <pto/pto-inst.hpp>",
        "using namespace pto;",
        "",
    ]


HELPERS = """\
// ---- scalar helpers: **, min, max, abs ----
#ifndef PYPTO_SCALAR_HELPERS
#define PYPTO_SCALAR_HELPERS
template <typename T>
__aicore__ inline T pypto_pow(T base, int64_t exp)
{
    bool invert = exp < 0;
    T result = static_cast<T>(1);
    for (int64_t e = invert ? -exp : exp; e > 0; --e) {
        result = result * base;
    }
    return invert ? static_cast<T>(1) / result : result;
}
template <typename T>
__aicore__ inline T pypto_min(T a, T b)
{
    return b < a ? b : a;
}
template <typename T>
__aicore__ inline T pypto_max(T a, T b)
{
    return a < b ? b : a;
}
template <typename T>
__aicore__ inline T pypto_abs(T a)
{
    return a < static_cast<T>(0) ? -a : a;
}
__aicore__ inline uint64_t pypto_deq_word(float scale, bool signed_out)
{
    union {
        float f;
        uint32_t u;
    } bits;
    bits.f = scale;
    return static_cast<uint64_t>(bits.u) | (signed_out ? (1ULL << 46) : 0ULL);
}
#endif  // PYPTO_SCALAR_HELPERS
// ---- getval / setval element access (a host build defines bounds-checked versions) ----
#ifndef PYPTO_TILE_ELEM
#define PYPTO_TILE_ELEM(tile, k) ((tile).data()[k])
#endif
#ifndef PYPTO_GM_ELEM
#define PYPTO_GM_ELEM(ptr, k) ((ptr)[k])
#endif
// ---- GM window bounds: (offset, extent, size) per tensor axis; checked by a host build ----
#ifndef PYPTO_GM_CHECK
#define PYPTO_GM_CHECK(tensor, ...)
#endif
// ---- the constant 0 as the divisor of an integer / or % (a host build faults at its line) ----
#ifndef PYPTO_ZERO_DIVISOR
#define PYPTO_ZERO_DIVISOR(T) static_cast<T>(0)
#endif
// ---- the SuperScalar buffer at a byte offset, as 32-bit words (a host build maps it) ----
#ifndef PYPTO_SSBUF
#define PYPTO_SSBUF(offset, bytes) reinterpret_cast<__ssbuf__ uint32_t*>((uint64_t)(offset))
#endif
"""

#: helper function names (reserved: never used for variables)
HELPER_NAMES = ("pypto_pow", "pypto_min", "pypto_max", "pypto_abs", "pypto_deq_word",
                "PYPTO_TILE_ELEM", "PYPTO_GM_ELEM", "PYPTO_GM_CHECK", "PYPTO_SSBUF",
                "PYPTO_ZERO_DIVISOR")
