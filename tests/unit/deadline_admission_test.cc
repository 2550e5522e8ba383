// The deadline and queue decisions the gateway's request path and the simulator share
// (admission/deadline_admission.h).
#include "admission/deadline_admission.h"

#include <gtest/gtest.h>

#include <memory>

namespace switchyard::admission {
namespace {

// A model whose replicas were learned to decode 100 tokens/s per stream at the reference
// concurrency with a flat batching curve and to prefill 10,000 tokens/s, limited to 4 in flight.
fleet::ModelEntry model(fleet::QueueMode mode) {
  fleet::ModelEntry m;
  m.runtime = std::make_shared<fleet::ModelRuntime>();
  m.runtime->storeLearnedMeans({100.0 * fleet::kReferenceConcurrency, 10000, 0});
  m.limits.max_inflight_per_replica = 4;
  m.admission.queue = mode;
  m.admission.max_wait = 10 * kNsPerSec;
  return m;
}

TEST(DeadlineAdmissionTest, TheRequestsOwnDeadlineElseTheModelsDefault) {
  fleet::AdmissionParams params;
  EXPECT_EQ(deadlineAt(5, -1, params), -1);
  EXPECT_EQ(deadlineAt(5, 100, params), 105);
  params.default_deadline = 1000;
  EXPECT_EQ(deadlineAt(5, -1, params), 1005);
  EXPECT_EQ(deadlineAt(5, 0, params), 5);  // a deadline of 0 given is not "none"
  EXPECT_FALSE(deadlineAware(params, 1005));
  params.queue = fleet::QueueMode::kDeadline;
  EXPECT_TRUE(deadlineAware(params, 1005));
  EXPECT_FALSE(deadlineAware(params, -1));
}

TEST(DeadlineAdmissionTest, AnUnknownPredictionNeverRefuses) {
  EXPECT_FALSE(cannotFinishIfStartedNow(100, -1, 50));
  EXPECT_TRUE(cannotFinishIfStartedNow(100, 1, 100));
  EXPECT_FALSE(cannotFinishIfStartedNow(100, 0, 100));
}

TEST(DeadlineAdmissionTest, AQueuedRequestIsRefusedWhenTooOldOrWhenItsTurnComesTooLate) {
  const fleet::ModelEntry fifo = model(fleet::QueueMode::kFifo);
  int asked = 0;
  const auto ahead = [&asked] {
    ++asked;
    return size_t{9};
  };
  // FIFO: only its age counts, and the queue position is never asked for.
  EXPECT_EQ(recheckQueued(fifo, 5 * kNsPerSec, 0, 1, 100, 100, ahead).verdict,
            QueuedVerdict::kWaits);
  EXPECT_EQ(recheckQueued(fifo, 10 * kNsPerSec, 0, -1, 100, 100, ahead).verdict,
            QueuedVerdict::kTooOld);
  EXPECT_EQ(asked, 0);

  // Deadline mode: 100 prompt tokens (10 ms) + 100 output tokens at 10 ms = 1.01 s to run; ten
  // requests (nine ahead and itself) at 2 completions/s = 5 s of waiting.
  fleet::ModelEntry deadline = model(fleet::QueueMode::kDeadline);
  deadline.runtime->completion_rate.store(2.0);
  EXPECT_EQ(queuedExecution(deadline, 100, 100), 1010 * kNsPerMs);
  EXPECT_EQ(queuedWait(deadline, 9), 5 * kNsPerSec);
  const QueuedCheck fits = recheckQueued(deadline, 0, 0, 7 * kNsPerSec, 100, 100, ahead);
  EXPECT_EQ(fits.verdict, QueuedVerdict::kWaits);
  EXPECT_EQ(fits.wait, 5 * kNsPerSec);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(recheckQueued(deadline, 1 * kNsPerSec, 0, 7 * kNsPerSec, 100, 100, ahead).verdict,
            QueuedVerdict::kCannotFinish);
  // Without a deadline a request in deadline mode only ages.
  EXPECT_EQ(recheckQueued(deadline, 1 * kNsPerSec, 0, -1, 100, 100, ahead).verdict,
            QueuedVerdict::kWaits);
  // While nothing has completed the wait is unknown (0): only the execution counts.
  deadline.runtime->completion_rate.store(0.0);
  EXPECT_EQ(recheckQueued(deadline, 1 * kNsPerSec, 0, 3 * kNsPerSec, 100, 100, ahead).verdict,
            QueuedVerdict::kWaits);
}

}  // namespace
}  // namespace switchyard::admission
