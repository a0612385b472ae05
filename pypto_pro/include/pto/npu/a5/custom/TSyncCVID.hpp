// PyPTO Pro native backend: a5 FFTS cross-core helpers. `getFFTSMsg`, `ffts_cross_core_sync`
// and `wait_flag_dev` live in pto/native/sync.hpp; this header only exists so that kernels
// with INTER_BLOCK / INTER_SUBBLOCK sync find the include they name.
#pragma once

#include <pto/pto-inst.hpp>
