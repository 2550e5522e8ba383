#include "fleet/signal_batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace switchyard::fleet {
namespace {

TEST(SignalBatchTest, RoundTrip) {
  std::string payload;
  EngineSignals s;
  s.running = 3;
  s.waiting = 0;
  s.kv_usage = 0.42;
  appendSignalRecord(payload, "10.0.0.1:8000", true, s, 17);
  appendSignalRecord(payload, "10.0.0.2:8000", false, {}, 5);
  std::vector<SignalRecord> records;
  std::vector<std::string> names;
  EXPECT_EQ(forEachSignalRecord(payload,
                                [&](const SignalRecord& r) {
                                  records.push_back(r);
                                  names.emplace_back(r.replica);
                                }),
            0);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(names[0], "10.0.0.1:8000");
  EXPECT_TRUE(records[0].ok);
  EXPECT_EQ(records[0].signals.running, 3);
  EXPECT_EQ(records[0].signals.waiting, 0);
  EXPECT_DOUBLE_EQ(records[0].signals.kv_usage, 0.42);
  EXPECT_TRUE(std::isnan(records[0].signals.cpu_kv_usage));  // unknown stays unknown
  EXPECT_EQ(records[0].age_ms, 17);
  EXPECT_EQ(names[1], "10.0.0.2:8000");
  EXPECT_FALSE(records[1].ok);
  EXPECT_EQ(records[1].age_ms, 5);
}

TEST(SignalBatchTest, MalformedLinesAreSkippedAndCounted) {
  const std::string payload =
      "a:1 1 2 0.5 - 3\n"
      "b:1 1 2\n"           // too few fields
      "c:1 x 2 0.5 - 3\n"   // not a number
      "d:1 1 2 0.5 - -4\n"  // negative age
      "e:1 ! 3 extra\n"     // trailing field
      "\n"
      "f:1 -1 2 7 - 3\n";   // out of domain: unknown, not an error
  std::vector<std::string> names;
  SignalRecord last;
  const int malformed = forEachSignalRecord(payload, [&](const SignalRecord& r) {
    names.emplace_back(r.replica);
    last = r;
  });
  EXPECT_EQ(malformed, 4);
  EXPECT_EQ(names, (std::vector<std::string>{"a:1", "f:1"}));
  EXPECT_TRUE(std::isnan(last.signals.running));
  EXPECT_TRUE(std::isnan(last.signals.kv_usage));
  EXPECT_EQ(last.signals.waiting, 2);
}

TEST(SignalBatchTest, ACapacityLineCarriesOnlyTheKvCacheSize) {
  std::string payload;
  appendCapacityRecord(payload, "10.0.0.1:8000", 28672);
  EngineSignals s;
  s.running = 1;
  appendSignalRecord(payload, "10.0.0.1:8000", true, s, 4);
  EXPECT_EQ(payload.substr(0, payload.find('\n')), "10.0.0.1:8000 # 28672");
  std::vector<SignalRecord> records;
  EXPECT_EQ(forEachSignalRecord(payload, [&](const SignalRecord& r) { records.push_back(r); }),
            0);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].capacity_only);
  EXPECT_FALSE(records[0].ok);
  EXPECT_EQ(records[0].signals.kv_capacity_tokens, 28672);
  EXPECT_FALSE(records[0].signals.hasRunning());
  EXPECT_FALSE(records[1].capacity_only);
  EXPECT_TRUE(records[1].ok);
  EXPECT_FALSE(records[1].signals.hasKvCapacity());  // a scrape's line never carries it
}

TEST(SignalBatchTest, MalformedCapacityLinesAreSkippedAndCounted) {
  const std::string payload =
      "a:1 #\n"          // no value
      "b:1 # -\n"        // unknown is no capacity
      "c:1 # 0\n"        // not a size
      "d:1 # -5\n"
      "e:1 # 12 3\n"     // trailing field
      "f:1 # inf\n"
      "g:1 # 1e400\n"    // out of range
      "h:1 # 4096\n";
  std::vector<std::string> names;
  const int malformed = forEachSignalRecord(
      payload, [&](const SignalRecord& r) { names.emplace_back(r.replica); });
  EXPECT_EQ(malformed, 7);
  EXPECT_EQ(names, (std::vector<std::string>{"h:1"}));
}

}  // namespace
}  // namespace switchyard::fleet
