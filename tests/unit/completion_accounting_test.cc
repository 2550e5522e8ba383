#include "fleet/completion_accounting.h"

#include <gtest/gtest.h>

namespace switchyard::fleet {
namespace {

CompletedResponse tokenless(int64_t units, TimeNs latency) {
  CompletedResponse r;
  r.status = 200;
  r.started = 0;
  r.finished = latency;
  r.work_units = units;
  return r;
}

TEST(CompletionAccountingTest, TokenlessWorkCountsItsUnits) {
  ReplicaCounters c;
  accountCompletion(c, tokenless(1, 10 * kNsPerMs));   // an embedding
  accountCompletion(c, tokenless(10, 40 * kNsPerMs));  // a rerank of ten documents
  EXPECT_EQ(c.tokenless_requests_total.load(), 11);
  EXPECT_EQ(c.tokenless_latency_ns_total.load(), 50 * kNsPerMs);
  // A video creation or poll (0 units) teaches nothing; nor does a failure.
  accountCompletion(c, tokenless(0, 5 * kNsPerMs));
  CompletedResponse failed = tokenless(3, kNsPerMs);
  failed.status = 400;
  accountCompletion(c, failed);
  EXPECT_EQ(c.tokenless_requests_total.load(), 11);
  EXPECT_EQ(c.tokenless_latency_ns_total.load(), 50 * kNsPerMs);
  // Work with output tokens is learned from its tokens, whatever its units.
  CompletedResponse chat = tokenless(5, 100 * kNsPerMs);
  chat.output_tokens = 10;
  accountCompletion(c, chat);
  EXPECT_EQ(c.tokenless_requests_total.load(), 11);
  EXPECT_EQ(c.output_tokens_total.load(), 10);
}

}  // namespace
}  // namespace switchyard::fleet
