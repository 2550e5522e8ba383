// RecyclingAllocator: a stateless allocator whose small blocks go back to a per-thread free list
// of their size class, not to malloc, and are handed out again from there.
//
// Why: Beast's header fields are one node per field, allocated by every parser. With hundreds of
// responses in flight on one worker, glibc's per-thread cache (7 blocks a size) overflows and
// the nodes go through malloc's bins, coalescing and consolidation (docs/benchmarks.md, "Idle
// upstream connections"). A worker reuses the same few hundred nodes instead.
//
// Blocks up to 512 bytes are recycled in four classes (64, 128, 256, 512 bytes); larger ones go
// straight to operator new. A list keeps at most kMaxFreeBytesPerClass of blocks (4,096 of 64
// bytes, 512 of 512), so a thread holds at most 1 MiB of them after a peak. The bound is in
// bytes, not blocks, because the small classes are the busy ones: at 256 connections a worker
// parses a burst of answers at once, five or six 64-byte field nodes each, and a list capped at
// 512 blocks sent most of each burst's nodes back through malloc (docs/benchmarks.md). A block
// freed on another thread joins that thread's lists. Sanitizer builds pass every block through
// to operator new and delete, so a use after free is still caught. Thread-safe (nothing is
// shared between threads).
#pragma once

#include <array>
#include <cstddef>
#include <new>

namespace switchyard::http {

namespace detail {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kRecycleBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kRecycleBlocks = false;
#else
inline constexpr bool kRecycleBlocks = true;
#endif
#else
inline constexpr bool kRecycleBlocks = true;
#endif

class BlockLists {
 public:
  static constexpr std::array<size_t, 4> kClassBytes = {64, 128, 256, 512};
  static constexpr size_t kMaxFreeBytesPerClass = 256 * 1024;

  BlockLists() = default;
  BlockLists(const BlockLists&) = delete;
  BlockLists& operator=(const BlockLists&) = delete;
  ~BlockLists() {
    for (Free*& head : heads_) {
      while (head != nullptr) {
        Free* next = head->next;
        ::operator delete(head);
        head = next;
      }
    }
  }

  void* take(size_t bytes) {
    const size_t c = classOf(bytes);
    if (c == kNoClass) return ::operator new(bytes);
    if (Free* block = heads_[c]) {
      heads_[c] = block->next;
      --counts_[c];
      return block;
    }
    return ::operator new(kClassBytes[c]);
  }
  void give(void* block, size_t bytes) noexcept {
    const size_t c = classOf(bytes);
    if (c == kNoClass || counts_[c] * kClassBytes[c] >= kMaxFreeBytesPerClass) {
      ::operator delete(block);
      return;
    }
    heads_[c] = new (block) Free{heads_[c]};
    ++counts_[c];
  }
  size_t freeBlocks() const { return counts_[0] + counts_[1] + counts_[2] + counts_[3]; }

 private:
  struct Free {
    Free* next;
  };
  static constexpr size_t kNoClass = kClassBytes.size();
  static size_t classOf(size_t bytes) {
    if (!kRecycleBlocks) return kNoClass;
    for (size_t c = 0; c < kClassBytes.size(); ++c) {
      if (bytes <= kClassBytes[c]) return c;
    }
    return kNoClass;
  }

  std::array<Free*, kClassBytes.size()> heads_{};
  std::array<size_t, kClassBytes.size()> counts_{};
};

inline BlockLists& threadBlockLists() {
  thread_local BlockLists lists;
  return lists;
}

}  // namespace detail

template <class T>
class RecyclingAllocator {
 public:
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "blocks have new's alignment");

  RecyclingAllocator() noexcept = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}  // NOLINT: rebinding converts

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::threadBlockLists().take(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { detail::threadBlockLists().give(p, n * sizeof(T)); }

  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace switchyard::http
