// PyPTO Pro native backend: the launcher process that runs kernels for the Python process.
//
// `native.Worker` builds a one-line `main` calling `pypto_launcher::serve()` once per machine and
// compiler (into the kernel cache) and starts it once per session: a native kernel that crashes
// kills this process only; the kernel library's crash handler leaves the faulting core, op and
// line in the shared status area first, and the parent reports them. A compiled launcher is
// ready in about a millisecond, where a Python worker needs tens of milliseconds to boot.
//
// Protocol, on stdin / the stdout the launcher had at start (fd 1 then points at stderr, so a
// stray write of a kernel cannot corrupt it): messages are a little-endian u32 byte count then
// the payload; strings are a u32 length then the bytes. First the launcher says hello
// (u8 1, str "pypto-launcher <version>"). A request is u32 op (0 = exit, 1 = launch), then for a
// launch: str library, str arena path, u64 arena size, str status path, u64 status size,
// u32 records, u32 record size, u32 n + n × i64 buffer sizes (pto::TileType order), i32 AIC
// cores, i32 AIV cores, str bridge library (MKL; may be empty) (these first fields change
// rarely: the parent encodes them once), u32 n + n × u64 guard-page offsets (mprotected
// PROT_NONE), u32 n + n × (u64 lo, u64 hi, str name) GM regions (arena offsets), u32 block dim,
// u32 n + n × (u8 kind, u64 word) kernel arguments (kind 0: a null pointer,
// 1: an arena offset, 2: an integer, 3: a double's bits; the library's `pypto_native_call_packed`
// converts each word to its parameter's C type). The answer: u8 ok; if 0, str error; else
// i32 fault kind, i32 fault line, str fault message, u32 n + n × (i32 block, str text) printed.
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace pypto_launcher {

constexpr const char* kHello = "pypto-launcher 1";

//! Reads the fields of one message; a message shorter than its fields is an error.
class Reader {
public:
    explicit Reader(const std::string& data) : p_(data.data()), end_(data.data() + data.size()) {}

    template <typename T>
    T get()
    {
        T v;
        take(&v, sizeof(T));
        return v;
    }
    std::string str()
    {
        const uint32_t n = get<uint32_t>();
        std::string s(n, '\0');
        take(s.data(), n);
        return s;
    }

private:
    void take(void* out, size_t n)
    {
        if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("truncated request");
        std::memcpy(out, p_, n);
        p_ += n;
    }
    const char* p_;
    const char* end_;
};

class Writer {
public:
    template <typename T>
    void put(T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
    void str(const std::string& s)
    {
        put<uint32_t>(static_cast<uint32_t>(s.size()));
        out += s;
    }
    std::string out;
};

inline bool read_exact(int fd, char* buf, size_t n)
{
    while (n > 0) {
        const ssize_t got = ::read(fd, buf, n);
        if (got <= 0) return false;
        buf += got;
        n -= static_cast<size_t>(got);
    }
    return true;
}

inline void write_message(int fd, const std::string& payload)
{
    std::string msg(4, '\0');
    const uint32_t n = static_cast<uint32_t>(payload.size());
    std::memcpy(msg.data(), &n, 4);
    msg += payload;
    const char* p = msg.data();
    size_t left = msg.size();
    while (left > 0) {
        const ssize_t put = ::write(fd, p, left);
        if (put <= 0) _exit(3);  // the parent is gone
        p += put;
        left -= static_cast<size_t>(put);
    }
}

//! A shared file mapped read-write for as long as the parent keeps using it.
struct Mapping {
    std::string path;
    uint64_t size = 0;
    char* base = nullptr;

    void map(const std::string& p, uint64_t n)
    {
        if (base != nullptr && p == path && n == size) return;
        if (base != nullptr) munmap(base, size);
        base = nullptr;
        const int fd = ::open(p.c_str(), O_RDWR);
        if (fd < 0) throw std::runtime_error("cannot open " + p + ": " + std::strerror(errno));
        void* at = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        if (at == MAP_FAILED) throw std::runtime_error("cannot map " + p + ": " + std::strerror(errno));
        base = static_cast<char*>(at);
        path = p;
        size = n;
    }
};

//! The entry points of one kernel library (see pto/native/api.hpp).
struct Library {
    void (*configure)(const int64_t*, int, int);
    void (*set_bridge_library)(const char*);
    void (*set_regions)(int, const uint64_t*, const uint64_t*, const char*);
    void (*set_status)(void*, int, void*);
    void (*install_crash_handler)();
    void (*call_packed)(uint32_t, const uint64_t*);
    int (*fault_kind)();
    int (*fault_line)();
    const char* (*fault_message)();
    int (*printed_count)();
    int (*printed_block)(int);
    const char* (*printed_text)(int);
    std::string setup;  // the configuration it last received

    explicit Library(const std::string& path)
    {
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
        bind(h, configure, "pypto_native_configure");
        bind(h, set_bridge_library, "pypto_native_set_bridge_library");
        bind(h, set_regions, "pypto_native_set_regions");
        bind(h, set_status, "pypto_native_set_status");
        bind(h, install_crash_handler, "pypto_native_install_crash_handler");
        bind(h, call_packed, "pypto_native_call_packed");
        bind(h, fault_kind, "pypto_native_fault_kind");
        bind(h, fault_line, "pypto_native_fault_line");
        bind(h, fault_message, "pypto_native_fault_message");
        bind(h, printed_count, "pypto_native_printed_count");
        bind(h, printed_block, "pypto_native_printed_block");
        bind(h, printed_text, "pypto_native_printed_text");
    }

private:
    template <typename F>
    static void bind(void* h, F& fn, const char* name)
    {
        fn = reinterpret_cast<F>(dlsym(h, name));
        if (fn == nullptr) throw std::runtime_error(std::string("missing entry ") + name);
    }
};

class Launcher {
public:
    std::string launch(Reader& in)
    {
        const std::string lib_path = in.str();
        const std::string arena_path = in.str();
        const uint64_t arena_size = in.get<uint64_t>();
        const std::string status_path = in.str();
        const uint64_t status_size = in.get<uint64_t>();
        const uint32_t records = in.get<uint32_t>();
        const uint32_t record_size = in.get<uint32_t>();
        std::vector<int64_t> sizes(in.get<uint32_t>());
        for (auto& s : sizes) s = in.get<int64_t>();
        const int32_t aic = in.get<int32_t>();
        const int32_t aiv = in.get<int32_t>();
        const std::string bridge = in.str();
        std::vector<uint64_t> guards(in.get<uint32_t>());
        for (auto& g : guards) g = in.get<uint64_t>();
        const uint32_t n_regions = in.get<uint32_t>();
        std::vector<uint64_t> lo(n_regions + 1), hi(n_regions + 1);
        std::string names;
        for (uint32_t i = 0; i < n_regions; ++i) {
            lo[i] = in.get<uint64_t>();
            hi[i] = in.get<uint64_t>();
            names += (i ? "\n" : "") + in.str();
        }
        const uint32_t block_dim = in.get<uint32_t>();
        std::vector<uint8_t> kinds(in.get<uint32_t>());
        std::vector<uint64_t> words(kinds.size() + 1);
        for (size_t i = 0; i < kinds.size(); ++i) {
            kinds[i] = in.get<uint8_t>();
            words[i] = in.get<uint64_t>();
        }

        if (arena_path != arena_.path || arena_size != arena_.size) protected_.clear();
        arena_.map(arena_path, arena_size);
        status_.map(status_path, status_size);
        protect(guards);
        Library& lib = library(lib_path);
        const uintptr_t base = reinterpret_cast<uintptr_t>(arena_.base);
        std::string setup(reinterpret_cast<const char*>(sizes.data()), sizes.size() * 8);
        setup += std::to_string(aic) + "," + std::to_string(aiv) + "," + bridge + "," +
                 std::to_string(reinterpret_cast<uintptr_t>(status_.base)) + "," +
                 std::to_string(records);
        if (lib.setup != setup) {
            lib.configure(sizes.data(), aic, aiv);
            lib.set_bridge_library(bridge.c_str());
            lib.set_status(status_.base, static_cast<int>(records),
                           status_.base + static_cast<uint64_t>(records) * record_size);
            lib.setup = setup;
        }
        if (handler_of_ != &lib) {
            lib.install_crash_handler();
            handler_of_ = &lib;
        }
        for (uint32_t i = 0; i < n_regions; ++i) {
            lo[i] += base;
            hi[i] += base;
        }
        lib.set_regions(static_cast<int>(n_regions), lo.data(), hi.data(), names.c_str());
        for (size_t i = 0; i < kinds.size(); ++i) {
            if (kinds[i] == 0) words[i] = 0;
            else if (kinds[i] == 1) words[i] += base;
        }

        lib.call_packed(block_dim, words.data());

        Writer out;
        out.put<uint8_t>(1);
        out.put<int32_t>(lib.fault_kind());
        out.put<int32_t>(lib.fault_line());
        out.str(lib.fault_kind() ? lib.fault_message() : "");
        const int printed = lib.printed_count();
        out.put<uint32_t>(static_cast<uint32_t>(printed));
        for (int i = 0; i < printed; ++i) {
            out.put<int32_t>(lib.printed_block(i));
            out.str(lib.printed_text(i));
        }
        return out.out;
    }

private:
    Library& library(const std::string& path)
    {
        auto it = libs_.find(path);
        if (it == libs_.end()) it = libs_.emplace(path, Library(path)).first;
        return it->second;
    }

    void protect(const std::vector<uint64_t>& guards)
    {
        if (guards == protected_) return;
        const long page = sysconf(_SC_PAGESIZE);
        for (uint64_t off : protected_) mprotect(arena_.base + off, page, PROT_READ | PROT_WRITE);
        for (uint64_t off : guards) mprotect(arena_.base + off, page, PROT_NONE);
        protected_ = guards;
    }

    std::map<std::string, Library> libs_;
    Mapping arena_, status_;
    std::vector<uint64_t> protected_;
    const Library* handler_of_ = nullptr;
};

//! The launcher's main loop: hello, then one answer per request until exit or end of input.
inline int serve()
{
    const int out = dup(1);
    dup2(2, 1);
    Writer hello;
    hello.put<uint8_t>(1);
    hello.str(kHello);
    write_message(out, hello.out);
    Launcher launcher;
    for (;;) {
        uint32_t n = 0;
        if (!read_exact(0, reinterpret_cast<char*>(&n), 4)) return 0;
        std::string payload(n, '\0');
        if (!read_exact(0, payload.data(), n)) return 0;
        Reader in(payload);
        std::string answer;
        try {
            if (in.get<uint32_t>() != 1) return 0;
            answer = launcher.launch(in);
        } catch (const std::exception& e) {
            Writer err;
            err.put<uint8_t>(0);
            err.str(e.what());
            answer = err.out;
        }
        write_message(out, answer);
    }
}

}  // namespace pypto_launcher
