// The second pass of tools/check_real_isa.py: stand-ins for the constructs only bisheng
// understands (`__VEC_SCOPE__`, `__simt_vf__` functions, `cce::async_invoke`), so that the code
// inside them is checked against the real headers too. The first pass leaves them undefined;
// there they must be the only errors.
#pragma once

#include <cstdint>

#define __VEC_SCOPE__
#define __simt_vf__
#define __simt_callee__
#define __launch_bounds__(n)

namespace cce {
struct dim3 {
    uint32_t x = 1, y = 1, z = 1;
};
template <auto F, typename... Args>
inline void async_invoke(dim3, Args...)
{
}
}  // namespace cce
