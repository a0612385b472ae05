// A launch of a generated kernel on pto-isa's CPU simulator (tools/check_real_isa.py). The
// generated call_kernel.cpp launches through `PYPTO_NATIVE_LAUNCH(K, blockDim, l2ctrl,
// stream)(args...)` when that macro is defined; here it runs every core of every block at once,
// one thread each, with the simulator's block / subblock context set: a mix kernel's block is
// its cube and two vector subblocks, an aiv kernel's block one vector core, an aic kernel's
// one cube. The kernel is compiled with both sections (the CPU-simulator default), and each
// thread calls its core's `<K>_impl_cube` / `<K>_impl_vector`.
//
// PYPTO_CHECK_KERNEL_TYPE: 0 aiv, 1 aic, 2 mix.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace pypto_check {

template <typename Cube, typename Vector>
struct Launch {
    uint32_t blocks;
    int kind;
    Cube cube;
    Vector vector;

    template <typename... Args>
    void operator()(Args... args) const
    {
        setenv("PTO_CPU_SIM_NUM_CORES", std::to_string(blocks).c_str(), 1);
        setenv("PTO_CPU_SIM_TRACE_ENABLE", "0", 1);
        pto::cpu_sim::InitializeRuntime();
        pto::NPUMemoryModel::SetDefaultArch(pto::NPUArch::A5);
        const uint32_t subblocks = kind == 2 ? 2 : 1;
        std::vector<std::thread> cores;
        for (uint32_t b = 0; b < blocks; ++b) {
            if (kind != 0) {
                cores.emplace_back([=, this] {
                    pto::cpu_sim::set_execution_context(b, 0, 1);
                    is_cube = true;
                    cube(args...);
                });
            }
            for (uint32_t s = 0; kind != 1 && s < subblocks; ++s) {
                cores.emplace_back([=, this] {
                    pto::cpu_sim::set_execution_context(b, s, subblocks);
                    is_cube = false;
                    vector(args...);
                });
            }
        }
        for (auto& t : cores) t.join();
    }
};

template <typename Cube, typename Vector>
Launch(uint32_t, int, Cube, Vector) -> Launch<Cube, Vector>;

//! a GM buffer read from / written back to a file of the checker
inline std::vector<uint8_t> load(const char* path)
{
    std::vector<uint8_t> bytes;
    if (FILE* f = std::fopen(path, "rb")) {
        std::fseek(f, 0, SEEK_END);
        bytes.resize(static_cast<size_t>(std::ftell(f)) + 64);
        std::fseek(f, 0, SEEK_SET);
        if (std::fread(bytes.data(), 1, bytes.size() - 64, f) != bytes.size() - 64) std::abort();
        std::fclose(f);
    }
    return bytes;
}

inline void save(const char* path, const std::vector<uint8_t>& bytes)
{
    FILE* f = std::fopen(path, "wb");
    if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size() - 64, f) != bytes.size() - 64) {
        std::abort();
    }
    std::fclose(f);
}

}  // namespace pypto_check

#if PYPTO_CHECK_KERNEL_TYPE == 0
#define PYPTO_CHECK_CUBE(call)
#else
#define PYPTO_CHECK_CUBE(call) call
#endif
#if PYPTO_CHECK_KERNEL_TYPE == 1
#define PYPTO_CHECK_VECTOR(call)
#else
#define PYPTO_CHECK_VECTOR(call) call
#endif

#define PYPTO_NATIVE_LAUNCH(K, blockDim, l2ctrl, stream)                                  \
    ::pypto_check::Launch{blockDim, PYPTO_CHECK_KERNEL_TYPE,                               \
                          [](auto... a) { PYPTO_CHECK_CUBE(K##_impl_cube(a...)); },       \
                          [](auto... a) { PYPTO_CHECK_VECTOR(K##_impl_vector(a...)); }}
