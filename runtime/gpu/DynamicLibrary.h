//===- DynamicLibrary.h - a library opened at run time ----------*- C++ -*-===//
//
// The GPU runtime reaches CUDA's libraries (the driver, NVRTC) with dlopen,
// so no binary needs them to start; this is the one place that opens them
// and binds their entry points.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_DYNAMICLIBRARY_H
#define WEFT_RUNTIME_GPU_DYNAMICLIBRARY_H

#include <dlfcn.h>
#include <initializer_list>
#include <type_traits>

namespace weft::runtime {

class DynamicLibrary {
public:
  DynamicLibrary() = default;
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;
  ~DynamicLibrary() {
    if (handle)
      dlclose(handle);
  }

  /// Opens the first of `names` the dynamic loader finds.
  bool open(std::initializer_list<const char *> names) {
    for (const char *name : names)
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        return true;
    return false;
  }

  /// Points `fn` at `symbol`; false (and every later call too) if missing.
  template <typename Fn> bool bind(Fn &fn, const char *symbol) {
    fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
    complete &= fn != nullptr;
    return fn != nullptr;
  }
  /// Whether every bind so far found its symbol.
  bool allBound() const { return complete; }

private:
  void *handle = nullptr;
  bool complete = true;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_DYNAMICLIBRARY_H
