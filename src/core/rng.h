// A small, fast, seedable random source (xoshiro256**-style splitmix seeding is overkill here:
// routing only needs uniform picks). Not thread-safe: each worker owns one.
#pragma once

#include <cstdint>

namespace switchyard {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x9E3779B97F4A7C15ull) : state_(seed ? seed : 1) {}

  // splitmix64: passes BigCrush, one multiply-xorshift chain per call.
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound); bound > 0. Lemire's multiply-shift, bias negligible for our bounds.
  uint32_t below(uint32_t bound) {
    return static_cast<uint32_t>((static_cast<__uint128_t>(next() >> 32) * bound) >> 32);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace switchyard
