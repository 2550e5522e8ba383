// FourAryHeap: an implicit 4-ary min-heap laid out for cold reads. The array is 64-byte aligned
// and the root sits at index 3, so that the four children of a node start on a cache-line
// boundary: with 16-byte entries they share one line, with 32-byte entries two. A pop from a
// heap that has been out of cache touches about log4(n) such groups, where a binary heap
// touches about twice as many levels. `Before(a, b)` is a strict weak order; entries it does not
// order come out in no particular order. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include <boost/align/aligned_allocator.hpp>

namespace switchyard {

template <class T, class Before>
class FourAryHeap {
 public:
  bool empty() const { return entries_.size() <= kRoot; }
  size_t size() const { return empty() ? 0 : entries_.size() - kRoot; }
  // Precondition for top() and pop(): not empty.
  const T& top() const { return entries_[kRoot]; }
  void push(const T& entry) {
    if (entries_.size() < kRoot) entries_.resize(kRoot);  // the padding before the root
    entries_.push_back(entry);
    siftUp(entries_.size() - 1);
  }
  void pop() {
    entries_[kRoot] = entries_.back();
    entries_.pop_back();
    if (!empty()) siftDown(kRoot);
  }
  // pop() then push(entry) in one pass down from the root. Precondition: not empty.
  void replaceTop(const T& entry) {
    entries_[kRoot] = entry;
    siftDown(kRoot);
  }
  void clear() { entries_.resize(std::min(entries_.size(), kRoot)); }
  // The least of the root's children: what top() becomes after a pop() with no push between.
  // nullptr: the root has no child.
  const T* afterTop() const {
    const size_t first = 4 * kRoot - 8;
    return first < entries_.size() ? &entries_[leastChild(first)] : nullptr;
  }
  // The last leaf, which a pop() moves to the root. Precondition: not empty.
  const T& last() const { return entries_.back(); }

 private:
  // Positions: the root at 3; node p's children at 4p - 8 .. 4p - 5, its parent at p / 4 + 2.
  static constexpr size_t kRoot = 3;
  // The least of the (up to four) children that start at `first`. Precondition: first < size.
  size_t leastChild(size_t first) const {
    size_t best = first;
    const size_t last = std::min(first + 4, entries_.size());
    for (size_t c = first + 1; c < last; ++c) {
      if (Before{}(entries_[c], entries_[best])) best = c;
    }
    return best;
  }
  void siftUp(size_t p) {
    const T entry = entries_[p];
    while (p > kRoot) {
      const size_t parent = p / 4 + 2;
      if (!Before{}(entry, entries_[parent])) break;
      entries_[p] = entries_[parent];
      p = parent;
    }
    entries_[p] = entry;
  }
  void siftDown(size_t p) {
    const T entry = entries_[p];
    const size_t n = entries_.size();
    for (;;) {
      const size_t first = 4 * p - 8;
      if (first >= n) break;
      const size_t best = leastChild(first);
      if (!Before{}(entries_[best], entry)) break;
      entries_[p] = entries_[best];
      p = best;
    }
    entries_[p] = entry;
  }

  std::vector<T, boost::alignment::aligned_allocator<T, 64>> entries_;
};

}  // namespace switchyard
