// FinishQueue: a min-queue of (step, item) pairs, the engine model's "which member of the decoding
// group finishes next" (batching_model.h). Entries are 16 bytes in a FourAryHeap, so the four
// children of every node share one cache line: a pop in a model that has been out of cache
// touches about log4(n) lines, where a binary heap of 24-byte entries touched about twice as
// many. Equal steps come out in no particular order. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/four_ary_heap.h"

namespace switchyard::engine {

template <class T>
class FinishQueue {
 public:
  struct Entry {
    int64_t at = 0;
    T* item = nullptr;
  };
  static_assert(sizeof(Entry) == 16, "four children to a cache line");

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // Precondition for top() and pop(): not empty.
  const Entry& top() const { return heap_.top(); }
  void push(int64_t at, T* item) { heap_.push(Entry{at, item}); }
  void pop() { heap_.pop(); }
  void clear() { heap_.clear(); }
  // Starts loading what pop() reads first: the top, its children and the last leaf.
  void prefetchPop() const {
    if (heap_.empty()) return;
    __builtin_prefetch(&heap_.top());
    __builtin_prefetch(&heap_.top() + 1);  // the root's children, on the next line
    __builtin_prefetch(&heap_.last());
  }

 private:
  struct Sooner {
    bool operator()(const Entry& a, const Entry& b) const { return a.at < b.at; }
  };
  FourAryHeap<Entry, Sooner> heap_;
};

}  // namespace switchyard::engine
