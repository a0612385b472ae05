// PyPTO Pro native backend: the debug printing header generated kernels include (spec §4.5).
//
// On the host `cce::printf` always prints (into the block's buffer the launch returns), so
// `__PYPTO_PRINTF` is it whatever `PTOAS_ENABLE_CCE_PRINT` says; `TPRINT` is in
// `pto/native/debug.hpp`. `__pypto_dtype_name` and `__pypto_print_val` (what the code
// generator's window-dump loops call) print as the real header does.
#pragma once

#include <pto/pto-inst.hpp>

#define __PYPTO_PRINTF(...) cce::printf(__VA_ARGS__)

template <typename T>
inline const char* __pypto_dtype_name()
{
    return pypto_native::print_dtype_name<T>();
}

template <typename V>
inline void __pypto_print_val(V val)
{
    pypto_native::ctx().printed += pypto_native::print_val(val);
}
