// EventQueue: the simulator's one queue of future events, in virtual time (Vidur / SimPy style).
//
// Events are small values: what happens (kind), to whom (target) and one argument. Order is by
// time, then by insertion: two events at the same instant run in the order they were scheduled,
// so a run is deterministic for a seed. A FourAryHeap (core/four_ary_heap.h): push and pop are
// O(log n) with half the depth of a binary heap, a node's four children on two cache lines.
// A pop leaves its event in place until the next call: when that call is a push, as it is when a
// replica schedules its next step, the new event takes the root in one pass down the heap
// instead of the last leaf's pass down and the new event's pass up.
// Not thread-safe; one simulation owns one queue.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/clock.h"
#include "core/four_ary_heap.h"

namespace switchyard::sim {

struct Event {
  TimeNs time = 0;
  uint64_t order = 0;  // insertion sequence: the tie-break
  uint32_t kind = 0;
  uint32_t target = 0;
  uint64_t arg = 0;
};

class EventQueue {
 public:
  void push(TimeNs time, uint32_t kind, uint32_t target = 0, uint64_t arg = 0) {
    const Event event{time, next_order_++, kind, target, arg};
    if (popped_) {
      popped_ = false;
      heap_.replaceTop(event);
    } else {
      heap_.push(event);
    }
  }
  bool empty() {
    settle();
    return heap_.empty();
  }
  size_t size() {
    settle();
    return heap_.size();
  }
  // Precondition for top() and pop(): not empty.
  const Event& top() {
    settle();
    return heap_.top();
  }
  Event pop() {
    settle();
    popped_ = true;
    return heap_.top();
  }
  uint64_t pushed() const { return next_order_; }
  // Right after pop(): the event the next pop() returns unless an earlier one is pushed first
  // (nullptr: none). A guess a driver can prefetch by, one event ahead.
  const Event* peekAfterPop() const { return popped_ ? heap_.afterTop() : nullptr; }

 private:
  struct Before {
    bool operator()(const Event& a, const Event& b) const {
      return a.time < b.time || (a.time == b.time && a.order < b.order);
    }
  };
  // Removes the event the last pop returned, if no push has taken its place.
  void settle() {
    if (popped_) {
      popped_ = false;
      heap_.pop();
    }
  }
  FourAryHeap<Event, Before> heap_;
  uint64_t next_order_ = 0;
  bool popped_ = false;  // the root is the event the last pop returned
};

}  // namespace switchyard::sim
