// Counts heap allocations made through global operator new in the unit-test binary, so tests can
// assert that a request-path routine allocates nothing in steady state. The replacement
// operators live in allocation_count.cc; the counter is per thread, so tests running other
// threads (or gtest itself between assertions) do not disturb a measurement.
#pragma once

#include <cstdint>

namespace switchyard::testing {

uint64_t threadAllocations();
// False in sanitizer builds, which keep their own operator new: tests needing counts skip.
bool allocationCounting();

// Allocations on this thread between construction and count().
class AllocationScope {
 public:
  AllocationScope() : start_(threadAllocations()) {}
  uint64_t count() const { return threadAllocations() - start_; }

 private:
  uint64_t start_;
};

}  // namespace switchyard::testing
