// PyPTO Pro native backend: the a2/a3 FFTS address query call_kernel.cpp includes;
// `rtGetC2cCtrlAddr` is in pto/native/system.hpp (the address is unused on the host).
#pragma once

#include <pto/pto-inst.hpp>
