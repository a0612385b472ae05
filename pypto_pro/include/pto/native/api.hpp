// PyPTO Pro native backend: the C entry points the launcher (native_worker.py) calls.
//
// Before a launch: `pypto_native_configure` (SoC buffer sizes and core counts),
// `pypto_native_set_bridge_library` (where MKL's entry points for bit-exact library math
// are, optional),
// `pypto_native_set_regions` (the GM buffers, for bounds checks), `pypto_native_set_status`
// (shared-memory op records for crash reports). Then `call_kernel(blockDim, stream, ...)`;
// afterwards `pypto_native_fault_*` and `pypto_native_printed_*` give the outcome.
#pragma once

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>

#include <csignal>
#include <cstring>
#include <string>

#include "global.hpp"
#include "numerics.hpp"
#include "runtime.hpp"

//! exported even though inline (one definition per library, any number of includes)
#define PYPTO_NATIVE_API inline __attribute__((used, visibility("default")))

extern "C" {

PYPTO_NATIVE_API void pypto_native_configure(const int64_t* sizes, int aic_cores, int aiv_cores)
{
    for (int i = 0; i < pypto_native::kSpaces; ++i) pypto_native::soc().sizes[i] = sizes[i];
    pypto_native::soc().aic_cores = aic_cores;
    pypto_native::soc().aiv_cores = aiv_cores;
}

//! the library with MKL's vmsExp / vmsLn / vmsSqrt / sgemm_ (loaded on first use)
PYPTO_NATIVE_API void pypto_native_set_bridge_library(const char* path)
{
    pypto_native::bridge_library() = path ? path : "";
}

//! `names`: one name per region, separated by '\n'
PYPTO_NATIVE_API void pypto_native_set_regions(int n, const uint64_t* lo, const uint64_t* hi,
                                     const char* names)
{
    auto& r = pypto_native::gm_regions();
    r.clear();
    std::string all = names ? names : "";
    size_t start = 0;
    for (int i = 0; i < n; ++i) {
        const size_t end = all.find('\n', start);
        r.push_back({lo[i], hi[i], all.substr(start, end == std::string::npos ? std::string::npos
                                                                                : end - start)});
        start = end == std::string::npos ? all.size() : end + 1;
    }
}

PYPTO_NATIVE_API void pypto_native_set_status(void* records, int capacity, void* crashed)
{
    auto& s = pypto_native::status_area();
    s.records = static_cast<pypto_native::OpRecord*>(records);
    s.capacity = capacity;
    s.crashed = static_cast<volatile int32_t*>(crashed);
}

PYPTO_NATIVE_API int pypto_native_record_size() { return static_cast<int>(sizeof(pypto_native::OpRecord)); }

//! On a crash: which core (record index), the signal, the faulting instruction as an offset
//! into this library (for addr2line: the kernel.cpp line) and the faulting address; then die.
PYPTO_NATIVE_API void pypto_native_crash_handler(int sig, siginfo_t* info, void* uctx)
{
    auto& s = pypto_native::status_area();
    if (s.crashed != nullptr) {
        s.crashed[0] = pypto_native::tl_core ? pypto_native::tl_core->record_index : -1;
        s.crashed[1] = sig;
        uint64_t pc = 0;
#if defined(__x86_64__)
        pc = static_cast<uint64_t>(static_cast<ucontext_t*>(uctx)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
        pc = static_cast<uint64_t>(static_cast<ucontext_t*>(uctx)->uc_mcontext.pc);
#endif
        Dl_info self{}, at{};
        uint64_t offset = 0;
        if (pc != 0 && dladdr(reinterpret_cast<void*>(&pypto_native_crash_handler), &self) &&
            dladdr(reinterpret_cast<void*>(pc), &at) && at.dli_fbase == self.dli_fbase) {
            offset = pc - reinterpret_cast<uint64_t>(at.dli_fbase);
        }
        const uint64_t addr = info ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
        std::memcpy(const_cast<int32_t*>(s.crashed) + 2, &offset, 8);
        std::memcpy(const_cast<int32_t*>(s.crashed) + 4, &addr, 8);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

PYPTO_NATIVE_API void pypto_native_install_crash_handler()
{
    struct sigaction sa {};
    sa.sa_sigaction = pypto_native_crash_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

//! 0: the launch finished; else the FaultKind of the first fault
PYPTO_NATIVE_API int pypto_native_fault_kind()
{
    return pypto_native::last_failed() ? static_cast<int>(pypto_native::last_fault().kind) : 0;
}
PYPTO_NATIVE_API int pypto_native_fault_line() { return pypto_native::last_fault().line; }
PYPTO_NATIVE_API const char* pypto_native_fault_message() { return pypto_native::last_fault().message.c_str(); }

PYPTO_NATIVE_API int pypto_native_printed_count() { return static_cast<int>(pypto_native::printed_blocks().size()); }
PYPTO_NATIVE_API int pypto_native_printed_block(int i)
{
    auto it = pypto_native::printed_blocks().begin();
    std::advance(it, i);
    return it->first;
}
PYPTO_NATIVE_API const char* pypto_native_printed_text(int i)
{
    auto it = pypto_native::printed_blocks().begin();
    std::advance(it, i);
    return it->second.c_str();
}

}  // extern "C"
