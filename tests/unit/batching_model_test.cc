#include "engine/batching_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/rng.h"
#include "engine/perf_profiles.h"
#include "engine/throughput_table.h"

namespace switchyard::engine {
namespace {

constexpr TimeNs kMs = 1'000'000;

PerfConfig config(std::string_view gpu, std::string_view model = "llama2-7b", int tp = 1) {
  return makePerfConfig(builtinProfiles(), gpu, model, tp);
}

// Runs the model until idle, returning every event (a manual timeline: jump to the next event).
std::vector<TokenEvent> runToIdle(BatchingModel& model, TimeNs limit = 3600'000 * kMs) {
  std::vector<TokenEvent> events;
  for (TimeNs t = model.nextEventTime(); t >= 0 && t < limit; t = model.nextEventTime()) {
    model.advance(t, events);
  }
  return events;
}

std::vector<uint64_t> hashes(uint64_t seed, int blocks) {
  std::vector<uint64_t> out;
  for (int i = 0; i < blocks; ++i) out.push_back(seed * 1000 + static_cast<uint64_t>(i));
  return out;
}

TEST(PerfProfilesTest, BuiltInProfilesHaveTheSpecSheetFigures) {
  const ProfileCatalog& catalog = builtinProfiles();
  for (const char* name : {"A10", "L20", "V100", "A100-80GB", "H100", "B200"}) {
    EXPECT_NE(catalog.findGpu(name), nullptr) << name;
  }
  ASSERT_NE(catalog.findGpu("a100"), nullptr);
  EXPECT_EQ(catalog.findGpu("A100")->name, "A100-80GB");
  EXPECT_EQ(catalog.findGpu("H100")->bandwidth_gbps, 3350);
  const ModelSpec* llama = catalog.findModel("llama2-7b");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->kvBytesPerToken(), 2.0 * 32 * 32 * 128 * 2);  // 512 KiB
  EXPECT_EQ(catalog.findModel("llama2-70b")->kvBytesPerToken(), 2.0 * 80 * 8 * 128 * 2);

  PerfConfig a100 = config("A100");
  const double kv_bytes = 80e9 * 0.9 - 6.74e9 * 2;
  EXPECT_EQ(a100.kv_blocks, static_cast<int64_t>(kv_bytes / (524288.0 * 16)));
  EXPECT_EQ(a100.kvCapacityTokens(), a100.kv_blocks * 16);
}

TEST(PerfProfilesTest, SeventyBMustFitOrUseTensorParallel) {
  try {
    config("A100", "llama2-70b");
    FAIL() << "expected a start-up error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--tp 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(config("A10", "llama2-70b"), std::invalid_argument);
  EXPECT_GT(config("A100", "llama2-70b", 2).kv_blocks, 0);
  EXPECT_GT(config("B200", "llama2-70b").kv_blocks, 0);
  EXPECT_THROW(config("TPU9"), std::invalid_argument);
  EXPECT_THROW(config("A100", "gpt-17"), std::invalid_argument);
}

TEST(PerfProfilesTest, ParsesAUserFileAndRejectsBadFigures) {
  ProfileCatalog catalog = parseProfiles(R"(
engine: {max_num_seqs: 4, step_overhead_ms: 0}
gpus: [{name: X1, memory_gb: 40, bandwidth_gbps: 1000, tflops: 100}]
models: [{name: m, params: 1e9, layers: 16, hidden_size: 2048, heads: 16, kv_heads: 16}]
)");
  EXPECT_EQ(catalog.tuning.max_num_seqs, 4);
  PerfConfig c = makePerfConfig(catalog, "x1", "m");
  EXPECT_EQ(c.step_overhead_ns, 0);
  // Batch of one decode token: memory bound, weights / (bandwidth * 0.8).
  BatchingModel model(c);
  EXPECT_NEAR(model.stepDurationNs(1, 0), 2e9 / (1000e9 * 0.8) * 1e9, 1);
  // A big prefill is compute bound: 2 * params * tokens / (flops * 0.5).
  EXPECT_NEAR(model.stepDurationNs(2048, 2048), 2 * 1e9 * 2048 / (100e12 * 0.5) * 1e9, 1);
  EXPECT_THROW(parseProfiles("gpus: [{name: X, memory_gb: -1}]\nmodels: []"),
               std::invalid_argument);
  EXPECT_THROW(parseProfiles("{{{"), std::invalid_argument);
}

TEST(BatchingModelTest, ThroughputFollowsTheSpecSheets) {
  std::map<std::string, double> at1;
  std::map<std::string, double> at16;
  for (const char* gpu : {"A10", "L20", "V100", "A100", "H100", "B200"}) {
    at1[gpu] = simulateClosedLoop(config(gpu), 1, 32, 128, 4).output_tokens_per_s;
    at16[gpu] = simulateClosedLoop(config(gpu), 16, 32, 128, 64).output_tokens_per_s;
  }
  for (const auto* tps : {&at1, &at16}) {
    const auto& t = *tps;
    EXPECT_GT(t.at("B200"), t.at("H100"));
    EXPECT_GT(t.at("H100"), t.at("A100"));
    EXPECT_GT(t.at("A100"), t.at("L20"));
    EXPECT_GT(t.at("A100"), t.at("V100"));
    EXPECT_GT(t.at("L20"), t.at("A10"));
    EXPECT_GT(t.at("V100"), t.at("A10"));  // 900 vs 600 GB/s
    // L20 (864 GB/s) and V100 (900 GB/s) are within a few percent of each other.
    EXPECT_NEAR(t.at("L20") / t.at("V100"), 1.0, 0.1);
  }
  // Batching: 16 streams share each weight read, so throughput grows well beyond one stream.
  EXPECT_GT(at16.at("A100"), 8 * at1.at("A100"));
}

TEST(BatchingModelTest, SaturatesAndQueuesBeyondMaxNumSeqs) {
  PerfConfig c = config("A100");
  c.max_num_seqs = 8;
  ClosedLoopResult at8 = simulateClosedLoop(c, 8, 32, 64, 64);
  ClosedLoopResult at32 = simulateClosedLoop(c, 32, 32, 64, 256);
  EXPECT_EQ(at8.max_waiting, 0);
  EXPECT_GT(at32.max_waiting, 0);
  EXPECT_NEAR(at32.output_tokens_per_s / at8.output_tokens_per_s, 1.0, 0.05);  // plateau
  EXPECT_GT(at32.mean_ttft_s, 3 * at8.mean_ttft_s);                            // queueing

  BatchingModel model(c);
  for (RequestId id = 1; id <= 12; ++id) model.submit(ModelRequest{id, 32, 16, {}}, 0);
  std::vector<TokenEvent> events;
  model.advance(model.nextEventTime(), events);
  EXPECT_EQ(model.load().running, 8);
  EXPECT_EQ(model.load().waiting, 4);
}

TEST(BatchingModelTest, KvExhaustionPreemptsTheNewestAndStillCompletesEverything) {
  PerfConfig c = config("A100");
  c.kv_blocks = 64;  // 1024 tokens
  BatchingModel model(c);
  for (RequestId id = 1; id <= 8; ++id) model.submit(ModelRequest{id, 100, 200, {}}, 0);
  std::vector<TokenEvent> events = runToIdle(model);
  EXPECT_GT(model.load().preemptions_total, 0);
  std::map<RequestId, int> tokens;
  for (const TokenEvent& e : events) tokens[e.id] += e.tokens;
  ASSERT_EQ(tokens.size(), 8u);
  for (const auto& [id, count] : tokens) EXPECT_EQ(count, 200) << id;
  EXPECT_EQ(model.load().kv_usage, 0.0);
  EXPECT_EQ(model.load().running, 0);
}

TEST(BatchingModelTest, PrefixCacheHitsShortenTimeToFirstToken) {
  for (bool caching : {true, false}) {
    PerfConfig c = config("A100");
    c.prefix_caching = caching;
    BatchingModel model(c);
    model.submit(ModelRequest{1, 1024, 4, hashes(7, 64)}, 0);
    std::vector<TokenEvent> first = runToIdle(model);
    const TimeNs start = first.back().time + 10 * kMs;
    model.submit(ModelRequest{2, 1024, 4, hashes(7, 64)}, start);
    std::vector<TokenEvent> second = runToIdle(model);
    const TimeNs ttft1 = first.front().time - first.front().arrival;
    const TimeNs ttft2 = second.front().time - second.front().arrival;
    if (caching) {
      EXPECT_LT(ttft2 * 2, ttft1) << ttft1 << " vs " << ttft2;
      EXPECT_EQ(model.load().prefix_cache_hits_total, 63 * 16);  // the last block is recomputed
    } else {
      EXPECT_EQ(ttft2, ttft1);
      EXPECT_EQ(model.load().prefix_cache_hits_total, 0);
    }
    EXPECT_EQ(model.load().kv_usage, 0.0);  // cached blocks count as free
  }
}

// Scheduling alone: without the per-request overhead a submitted request joins the next step.
PerfConfig withoutRequestOverhead(PerfConfig c) {
  c.request_overhead_ns = 0;
  return c;
}

TEST(BatchingModelTest, ChunkedPrefillKeepsDecodesFlowing) {
  BatchingModel model(withoutRequestOverhead(config("H100")));
  model.submit(ModelRequest{1, 16, 100, {}}, 0);
  std::vector<TokenEvent> events;
  model.advance(model.nextEventTime(), events);  // request 1 prefilled, decoding
  ASSERT_EQ(events.size(), 1u);
  const TimeNs t0 = events.back().time;
  // Joins after the step in flight, then needs 3 chunks of at most 2048 tokens.
  model.submit(ModelRequest{2, 5000, 4, {}}, t0);
  events.clear();
  for (int step = 0; step < 4; ++step) model.advance(model.nextEventTime(), events);
  int from1 = 0;
  int from2 = 0;
  for (const TokenEvent& e : events) (e.id == 1 ? from1 : from2) += e.tokens;
  EXPECT_EQ(from1, 4);  // one token per step while 2 prefills
  EXPECT_EQ(from2, 1);  // its first token at the end of the third chunk
}

TEST(BatchingModelTest, SameInputsSameEventsAndCancelReleases) {
  auto run = [] {
    BatchingModel model(config("L20"));
    std::vector<TokenEvent> events;
    for (RequestId id = 1; id <= 20; ++id) {
      TimeNs at = static_cast<TimeNs>(id) * 7 * kMs;
      model.advance(at, events);
      model.submit(ModelRequest{id, 10 + static_cast<int>(id) * 13, 30, hashes(id % 3, 2)}, at);
    }
    model.cancel(5, 150 * kMs);
    std::vector<TokenEvent> rest = runToIdle(model);
    events.insert(events.end(), rest.begin(), rest.end());
    EXPECT_EQ(model.load().kv_usage, 0.0);
    return events;
  };
  std::vector<TokenEvent> a = run();
  std::vector<TokenEvent> b = run();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].time, b[i].time);
    EXPECT_EQ(a[i].finished, b[i].finished);
  }
  int finished = 0;
  for (const TokenEvent& e : a) finished += e.finished;
  EXPECT_EQ(finished, 19);  // request 5 was cancelled
}

TEST(BatchingModelTest, SlowdownStretchesStepsAndBusyTimeCountsThem) {
  BatchingModel model(withoutRequestOverhead(config("A100")));
  const TimeNs normal = model.stepDurationNs(1, 100);
  model.setSlowdown(2);
  EXPECT_EQ(model.stepDurationNs(1, 100), 2 * normal);
  model.submit(ModelRequest{1, 16, 10, {}}, 0);
  std::vector<TokenEvent> events = runToIdle(model);
  ASSERT_EQ(events.size(), 10u);
  EXPECT_NEAR(model.load().busy_seconds_total, events.back().time / 1e9, 1e-9);
  EXPECT_EQ(model.nextEventTime(), -1);
}

TEST(BatchingModelTest, RequestOverheadDelaysSchedulingNotTheSteps) {
  PerfConfig plain = withoutRequestOverhead(config("A100"));
  PerfConfig slow = plain;
  slow.request_overhead_ns = 7 * kMs;
  BatchingModel a(plain);
  BatchingModel b(slow);
  a.submit(ModelRequest{1, 100, 3, {}}, 0);
  b.submit(ModelRequest{1, 100, 3, {}}, 0);
  EXPECT_EQ(b.nextEventTime(), 7 * kMs);  // idle until the request is schedulable
  EXPECT_EQ(b.load().waiting, 0);         // not in the engine's queue yet
  const std::vector<TokenEvent> ea = runToIdle(a);
  const std::vector<TokenEvent> eb = runToIdle(b);
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) EXPECT_EQ(eb[i].time, ea[i].time + 7 * kMs);
  EXPECT_EQ(eb.front().arrival, 0);  // TTFT counts from the submit
}

TEST(BatchingModelTest, SequenceOverheadGrowsTheStepWithTheBatch) {
  PerfConfig c = config("A100");
  c.seq_overhead_ns = 50'000;  // not the calibrated 30 us: the test must not depend on it
  BatchingModel model(c);
  EXPECT_EQ(model.stepDurationNs(64, 6400, 64) - model.stepDurationNs(64, 6400, 0), 64 * 50'000);
}

TEST(BatchingModelTest, MultiStepDeliversDecodeTokensInBursts) {
  PerfConfig c = config("A100");
  c.num_scheduler_steps = 4;
  BatchingModel model(c);
  model.submit(ModelRequest{1, 100, 10, {}}, 0);
  const std::vector<TokenEvent> events = runToIdle(model);
  // The prefill step gives the first token alone, then bursts of 4, 4 and the last 1 (the slot
  // is held for the whole last burst).
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].tokens, 1);
  EXPECT_EQ(events[1].tokens, 4);
  EXPECT_EQ(events[2].tokens, 4);
  EXPECT_EQ(events[3].tokens, 1);
  EXPECT_TRUE(events[3].finished);
  int total = 0;
  for (const TokenEvent& e : events) total += e.tokens;
  EXPECT_EQ(total, 10);
  // A burst takes four decode steps.
  const TimeNs burst = events[2].time - events[1].time;
  EXPECT_GT(burst, 4 * model.stepDurationNs(1, 100, 1) - 1);
  EXPECT_EQ(model.load().kv_usage, 0.0);
}

TEST(BatchingModelTest, WithoutChunkedPrefillPrefillStepsPauseTheDecodes) {
  PerfConfig c = withoutRequestOverhead(config("H100"));
  c.chunked_prefill = false;
  BatchingModel model(c);
  model.submit(ModelRequest{1, 16, 100, {}}, 0);
  std::vector<TokenEvent> events;
  model.advance(model.nextEventTime(), events);
  ASSERT_EQ(events.size(), 1u);
  const TimeNs t0 = events.back().time;
  // A long prompt is prefilled whole, in a step of its own: request 1 gets no token in it.
  model.submit(ModelRequest{2, 3000, 4, {}}, t0);
  events.clear();
  model.advance(model.nextEventTime(), events);  // request 1's decode step (2 waits)
  model.advance(model.nextEventTime(), events);  // 2's prefill: only 2 gets a token
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, 1u);
  EXPECT_EQ(events[1].id, 2u);
  EXPECT_EQ(events[1].previous_token, -1);
  EXPECT_GT(events[1].time - events[0].time, model.stepDurationNs(3000, 3000) - 1);
}

// A request cancelled while it decodes in the lazy group: the tokens computed for it (prompt and
// output so far) are counted as given up, as the step-by-step path counts them.
TEST(BatchingModelTest, ACancelledGroupMemberCountsTheTokensComputedForIt) {
  const PerfConfig c = config("A100");
  auto abortedTokens = [&](bool lazy) {
    BatchingModel model(c);
    model.setDetail(BatchingModel::Detail::kMilestones, lazy);
    model.submit(ModelRequest{1, 32, 500, {}}, 0);
    model.submit(ModelRequest{2, 32, 500, {}}, 0);
    std::vector<TokenEvent> events;
    model.advance(500 * kMs, events);
    model.cancel(1, 500 * kMs);
    EXPECT_EQ(model.load().aborted_requests_total, 1);
    return model.load().aborted_computed_tokens_total;
  };
  const int64_t eager = abortedTokens(false);
  EXPECT_GT(eager, 32 + 10);  // the prompt and a good many decoded tokens
  EXPECT_EQ(abortedTokens(true), eager);
}

// The event hint names each event's request as the event is produced, in both detail modes.
TEST(BatchingModelTest, TheEventHintNamesEveryEventsRequestInOrder) {
  for (const auto detail : {BatchingModel::Detail::kEveryToken,
                            BatchingModel::Detail::kMilestones}) {
    BatchingModel model(config("A100"));
    model.setDetail(detail);
    std::vector<RequestId> hinted;
    model.setEventHint(
        [](void* context, RequestId id) {
          static_cast<std::vector<RequestId>*>(context)->push_back(id);
        },
        &hinted);
    for (RequestId id = 1; id <= 3; ++id) model.submit(ModelRequest{id, 64, 8 * static_cast<int>(id), {}}, 0);
    const std::vector<TokenEvent> events = runToIdle(model);
    ASSERT_EQ(hinted.size(), events.size());
    for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(hinted[i], events[i].id);
    EXPECT_EQ(std::count_if(events.begin(), events.end(), [](auto& e) { return e.finished; }),
              3);
  }
}

// Random arrivals, cancels and a small KV cache (preemptions), with and without prefix caching:
// the milestone path with lazy plain steps reports exactly what the step-by-step path does, and
// every-token mode's first and last tokens are the milestones.
TEST(BatchingModelTest, LazyPlainStepsMatchTheStepByStepPath) {
  // The last case has prompts longer than a step's token budget: chunked prefills that do not
  // all fit, where the group must fall back to request-by-request scheduling.
  const std::tuple<bool, int64_t, int> cases[] = {
      {false, 40, 200}, {false, 400, 200}, {true, 40, 200}, {true, 400, 200}, {true, 3000, 3000}};
  for (const auto& [prefix, blocks, max_prompt] : cases) {
    {
      PerfConfig c = config("A100");
      c.kv_blocks = blocks;
      c.prefix_caching = prefix;
      c.max_num_seqs = 24;
      struct Observed {
        std::vector<TokenEvent> events;
        std::vector<EngineLoad> loads;
      };
      auto run = [&](BatchingModel::Detail detail, bool lazy) {
        BatchingModel model(c);
        model.setDetail(detail, lazy);
        Observed out;
        // Every load read also checks that gauges() is exportedGauges(load()).
        const auto record = [&model, &out] {
          out.loads.push_back(model.load());
          const ExportedGauges expected = exportedGauges(out.loads.back());
          const ExportedGauges read = model.gauges();
          EXPECT_EQ(read.running, expected.running);
          EXPECT_EQ(read.waiting, expected.waiting);
          EXPECT_EQ(read.kv_usage, expected.kv_usage);
        };
        Rng rng(42 + blocks + (prefix ? 1 : 0));
        TimeNs now = 0;
        RequestId next = 1;
        for (int i = 0; i < 600; ++i) {
          now += static_cast<TimeNs>(rng.below(40)) * kMs / 4;
          std::vector<TokenEvent> events;
          const TimeNs due = model.nextEventTime();
          model.advance(now, events);
          // Nothing is reported before the time nextEventTime() said.
          if (!events.empty()) {
            EXPECT_TRUE(due >= 0 && due <= now) << due << " " << now;
          }
          out.events.insert(out.events.end(), events.begin(), events.end());
          record();
          if (rng.below(10) == 0 && next > 3) {
            model.cancel(next - 1 - rng.below(3), now);
          } else {
            const int prompt = 20 + static_cast<int>(rng.below(max_prompt));
            model.submit(ModelRequest{next, prompt, 1 + static_cast<int>(rng.below(120)),
                                      hashes(next % 5, prompt / 16)},
                         now);
            ++next;
          }
          record();
        }
        std::vector<TokenEvent> rest = runToIdle(model);
        out.events.insert(out.events.end(), rest.begin(), rest.end());
        record();
        return out;
      };
      const Observed eager = run(BatchingModel::Detail::kMilestones, false);
      const Observed lazy = run(BatchingModel::Detail::kMilestones, true);
      const Observed every = run(BatchingModel::Detail::kEveryToken, false);
      ASSERT_EQ(eager.events.size(), lazy.events.size()) << prefix << " " << blocks;
      for (size_t i = 0; i < eager.events.size(); ++i) {
        const TokenEvent& a = eager.events[i];
        const TokenEvent& b = lazy.events[i];
        EXPECT_EQ(a.id, b.id) << i;
        EXPECT_EQ(a.time, b.time) << i;
        EXPECT_EQ(a.tokens, b.tokens) << i;
        EXPECT_EQ(a.finished, b.finished) << i;
        EXPECT_EQ(a.previous_token < 0, b.previous_token < 0) << i;
      }
      ASSERT_EQ(eager.loads.size(), lazy.loads.size());
      for (size_t i = 0; i < eager.loads.size(); ++i) {
        EXPECT_EQ(eager.loads[i].running, lazy.loads[i].running) << i;
        EXPECT_EQ(eager.loads[i].waiting, lazy.loads[i].waiting) << i;
        EXPECT_EQ(eager.loads[i].kv_usage, lazy.loads[i].kv_usage) << i;
        EXPECT_EQ(eager.loads[i].preemptions_total, lazy.loads[i].preemptions_total) << i;
        EXPECT_EQ(eager.loads[i].generated_tokens_total, lazy.loads[i].generated_tokens_total);
        EXPECT_DOUBLE_EQ(eager.loads[i].busy_seconds_total, lazy.loads[i].busy_seconds_total);
        // A cancelled member of the decoding group counts the tokens computed for it.
        EXPECT_EQ(eager.loads[i].aborted_requests_total, lazy.loads[i].aborted_requests_total);
        EXPECT_EQ(eager.loads[i].aborted_computed_tokens_total,
                  lazy.loads[i].aborted_computed_tokens_total) << i;
        EXPECT_DOUBLE_EQ(eager.loads[i].aborted_running_seconds_total,
                         lazy.loads[i].aborted_running_seconds_total);
      }
      // Every-token mode: the same first tokens and finishes at the same times.
      std::vector<TokenEvent> milestones;
      for (const TokenEvent& e : every.events) {
        if (e.previous_token < 0 || e.finished) milestones.push_back(e);
      }
      ASSERT_EQ(milestones.size(), eager.events.size());
      for (size_t i = 0; i < milestones.size(); ++i) {
        EXPECT_EQ(milestones[i].id, eager.events[i].id);
        EXPECT_EQ(milestones[i].time, eager.events[i].time);
      }
      if (blocks == 40) {
        EXPECT_GT(eager.loads.back().preemptions_total, 0);
      }
    }
  }
}

// Models sharing one SeqPool (as a fleet simulation's do) report exactly what models with their
// own report, with cancels leaving stale finish-heap entries behind and a model destroyed with
// requests in it (its state goes back to the pool, reused by the others).
TEST(BatchingModelTest, ModelsSharingASeqPoolReportWhatModelsAloneDo) {
  PerfConfig c = config("A100");
  c.kv_blocks = 400;
  c.max_num_seqs = 24;
  constexpr int kModels = 3;
  const auto run = [&](bool shared) {
    const auto pool = BatchingModel::makeSeqPool();
    std::vector<std::unique_ptr<BatchingModel>> models;
    for (int m = 0; m < kModels + 1; ++m) {
      models.push_back(std::make_unique<BatchingModel>(c));
      models.back()->setDetail(BatchingModel::Detail::kMilestones);
      if (shared) models.back()->shareSeqPool(pool);
    }
    std::vector<std::vector<TokenEvent>> events(kModels + 1);
    Rng rng(7);
    TimeNs now = 0;
    RequestId next = 1;
    for (int i = 0; i < 900; ++i) {
      now += static_cast<TimeNs>(rng.below(40)) * kMs / 8;
      const auto m = static_cast<size_t>(rng.below(kModels + 1));
      if (i == 450) models[kModels].reset();  // the spare goes, its requests unfinished
      for (size_t k = 0; k < models.size(); ++k) {
        if (models[k]) models[k]->advance(now, events[k]);
      }
      if (!models[m]) continue;
      if (rng.below(8) == 0 && next > 3) {
        models[m]->cancel(next - 1 - rng.below(3), now);
      } else {
        models[m]->submit(ModelRequest{next++, 20 + static_cast<int>(rng.below(200)),
                                       1 + static_cast<int>(rng.below(150)), {}},
                          now);
      }
    }
    for (int m = 0; m < kModels; ++m) {
      std::vector<TokenEvent> rest = runToIdle(*models[static_cast<size_t>(m)]);
      events[static_cast<size_t>(m)].insert(events[static_cast<size_t>(m)].end(), rest.begin(),
                                            rest.end());
    }
    return events;
  };
  const auto alone = run(false);
  const auto shared = run(true);
  for (int m = 0; m < kModels + 1; ++m) {
    const auto& a = alone[static_cast<size_t>(m)];
    const auto& b = shared[static_cast<size_t>(m)];
    ASSERT_EQ(a.size(), b.size()) << m;
    EXPECT_GT(a.size(), 10u) << m;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id) << m << " " << i;
      EXPECT_EQ(a[i].time, b[i].time) << m << " " << i;
      EXPECT_EQ(a[i].tokens, b[i].tokens) << m << " " << i;
      EXPECT_EQ(a[i].finished, b[i].finished) << m << " " << i;
    }
  }
  BatchingModel busy(c);
  busy.submit(ModelRequest{1, 10, 10, {}}, 0);
  EXPECT_THROW(busy.shareSeqPool(BatchingModel::makeSeqPool()), std::logic_error);
}

// A's cancelled group member leaves a stale finish-heap entry; its Seq goes to B, where it joins
// B's group. When A's decoding reaches the stale entry's step, A must skip it: tags are unique
// across the pool, not per model.
TEST(BatchingModelTest, AStaleFinishEntryNeverMatchesASeqReusedByAnotherModel) {
  const PerfConfig c = config("A100");
  const auto pool = BatchingModel::makeSeqPool();
  BatchingModel a(c);
  BatchingModel b(c);
  for (BatchingModel* m : {&a, &b}) {
    m->setDetail(BatchingModel::Detail::kMilestones);
    m->shareSeqPool(pool);
  }
  std::vector<TokenEvent> a_events;
  std::vector<TokenEvent> b_events;
  a.submit(ModelRequest{1, 20, 50, {}}, 0);
  a.submit(ModelRequest{3, 20, 400, {}}, 0);  // keeps A decoding past request 1's last step
  // Until both have their first token: in A's decoding group.
  const auto first_tokens = [](const std::vector<TokenEvent>& events) {
    return std::count_if(events.begin(), events.end(),
                         [](const TokenEvent& e) { return e.previous_token < 0; });
  };
  while (first_tokens(a_events) < 2) a.advance(a.nextEventTime(), a_events);
  const TimeNs now = a_events.back().time + 50 * kMs;  // a few steps of the group later
  a.advance(now, a_events);
  ASSERT_EQ(a.load().running, 2);
  a.cancel(1, now);
  b.submit(ModelRequest{2, 20, 100, {}}, now);  // request 1's Seq, reused
  while (first_tokens(b_events) < 1) b.advance(b.nextEventTime(), b_events);  // in B's group
  ASSERT_TRUE(b_events.back().id == 2 && !b_events.back().finished);
  for (TimeNs t = std::min(a.nextEventTime(), b.nextEventTime()); t >= 0;) {
    a.advance(t, a_events);
    b.advance(t, b_events);
    const TimeNs ta = a.nextEventTime();
    const TimeNs tb = b.nextEventTime();
    t = ta < 0 ? tb : (tb < 0 ? ta : std::min(ta, tb));
  }
  int b_tokens = 0;
  for (const TokenEvent& e : b_events) {
    if (e.id == 2) b_tokens += e.tokens;
  }
  EXPECT_EQ(b_tokens, 100);
  for (const TokenEvent& e : a_events) EXPECT_NE(e.id, 2u);
}

TEST(ThroughputTableTest, PrintsEveryGpu) {
  std::string table = formatThroughputTable(builtinProfiles(), "llama2-7b", 32, 128);
  for (const char* gpu : {"A10", "L20", "V100", "A100-80GB", "H100", "B200"}) {
    EXPECT_NE(table.find(std::string("| ") + gpu + " |"), std::string::npos) << table;
  }
  std::printf("%s", table.c_str());
}

}  // namespace
}  // namespace switchyard::engine
