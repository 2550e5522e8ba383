#include "allocation_count.h"

#include <cstdlib>
#include <new>

// Sanitizers bring their own operator new; replacing it as well makes libraries built without
// this file (simdjson) allocate through theirs and free through ours. Counting is off there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SWITCHYARD_COUNT_ALLOCATIONS 0
#else
#define SWITCHYARD_COUNT_ALLOCATIONS 1
#endif

namespace {
thread_local uint64_t allocations = 0;
}  // namespace

namespace switchyard::testing {
uint64_t threadAllocations() { return allocations; }
bool allocationCounting() { return SWITCHYARD_COUNT_ALLOCATIONS != 0; }
}  // namespace switchyard::testing

#if SWITCHYARD_COUNT_ALLOCATIONS
namespace {
void* allocate(std::size_t size) {
  ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* allocateAligned(std::size_t size, std::align_val_t align) {
  ++allocations;
  const auto a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, ((size == 0 ? 1 : size) + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return allocateAligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return allocateAligned(size, align);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif
