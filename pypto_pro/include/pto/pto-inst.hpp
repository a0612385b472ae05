// PyPTO Pro native backend: the CPU implementation of the pto-isa tile layer and the CCE
// intrinsics that generated kernels call (`#include <pto/pto-inst.hpp>`).
//
// Headers by job: config (qualifiers, pipes, source locations), dtypes (half, bfloat16_t,
// FP8/HiF8 codes), numerics (rounding, element traits, library math), context (per-core
// state and memories, faults), tile (Tile<> and physical layouts), global (GlobalTensor and
// GM bounds), movement (TLOAD / TSTORE / TMOV / fixpipe), vector (V-pipe tile ops), gather_sort
// (gather, scatter, sort, histogram, quant), cube (TMATMUL family), runtime (threads, waves,
// blocking cross-core counters), sync (flags, mutexes, cross-core, SYNCALL), system (system
// registers, atomics, masks, raw copies), debug (printf, TPRINT, trap), simt, vf (Reg API),
// api (the launcher's C entry points).
#pragma once

#include "native/config.hpp"
#include "native/dtypes.hpp"
#include "native/numerics.hpp"
#include "native/context.hpp"
#include "native/tile.hpp"
#include "native/global.hpp"
#include "native/movement.hpp"
#include "native/vector.hpp"
#include "native/gather_sort.hpp"
#include "native/cube.hpp"
#include "native/runtime.hpp"
#include "native/sync.hpp"
#include "native/system.hpp"
#include "native/debug.hpp"
#include "native/simt.hpp"
#include "native/vf.hpp"
#include "native/api.hpp"
