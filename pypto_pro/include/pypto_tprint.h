// PyPTO Pro native backend: the debug printing header generated kernels include (spec §4.5).
//
// On the host `cce::printf` always prints (into the block's buffer the launch returns), so
// `__PYPTO_PRINTF` is it whatever `PTOAS_ENABLE_CCE_PRINT` says; `TPRINT` is in
// `pto/native/debug.hpp`.
#pragma once

#include <pto/pto-inst.hpp>

#define __PYPTO_PRINTF(...) cce::printf(__VA_ARGS__)

template <typename T>
inline const char* __pypto_dtype_name()
{
    return pypto_native::dtype_name<T>();
}
