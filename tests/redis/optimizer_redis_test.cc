// Profiles and request-monitoring intervals in a real Redis: AIBrix's profile key, both load
// layouts, and several gateways' intervals summed.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <thread>

#include "fleet/fleet_registry.h"
#include "gateway/load_monitor.h"
#include "observe/observer.h"
#include "profile/profile_json.h"
#include "state/redis/blocking_redis.h"
#include "state/redis/profile_store.h"
#include "support/redis_server.h"

namespace switchyard {
namespace {

using state::redis::BlockingRedis;
using state::redis::RedisUrl;

profile::GpuProfile smallProfile() {
  profile::GpuProfile p;
  p.gpu = "A10";
  p.deployment = "llama-a10";
  p.model = "llama2-7b";
  p.cost = 1.006;
  p.outputs = {16, 64};
  p.prompts = {128};
  p.tputs = {{9}, {3}};
  p.index();
  return p;
}

template <typename F>
bool waitFor(F&& condition, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST(ProfileStoreRedisTest, StoresUnderAibrixKeyAndLoadsBack) {
  testing::RedisServer server;
  const std::string url_text = "redis://" + server.address() + "/?model=llama2-7b";
  std::string error;
  const auto url = RedisUrl::parse(url_text, &error);
  ASSERT_TRUE(url) << error;
  std::string key;
  ASSERT_TRUE(state::redis::storeProfile(*url, smallProfile(), &error, &key)) << error;
  EXPECT_EQ(key, "aibrix:profile_llama2-7b_llama-a10");

  BlockingRedis redis;
  ASSERT_TRUE(redis.connect(*url));
  auto raw = redis.command({"GET", key});
  ASSERT_TRUE(raw);
  EXPECT_NE(raw->text.find("\"tputs\":[[9],[3]]"), std::string::npos) << raw->text;

  auto loaded = state::redis::loadProfileSource(url_text, "llama-a10");
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_DOUBLE_EQ(loaded.profile->maxRate(128, 16), 9);
  EXPECT_EQ(loaded.profile->model, "llama2-7b");

  // A profile AIBrix's gen_profile wrote (deployment in `gpu`, no Switchyard fields).
  ASSERT_TRUE(redis.command(
      {"SET", "aibrix:profile_llama2-7b_llama-l20",
       R"({"gpu":"llama-l20","cost":2,"tputs":[[4]],)"
       R"("indexes":[[32],[512]],"created":1.5,"slos":{"percentile":99,"tpot":0.05}})"}));
  auto aibrix = state::redis::loadProfileSource(url_text, "llama-l20");
  ASSERT_TRUE(aibrix.profile) << aibrix.error;
  EXPECT_EQ(aibrix.profile->deployment, "llama-l20");
  EXPECT_DOUBLE_EQ(aibrix.profile->slo.tpot, 0.05);

  auto missing = state::redis::loadProfileSource(url_text, "nope");
  EXPECT_FALSE(missing.profile);
  EXPECT_NE(missing.error.find("aibrix:profile_llama2-7b_nope"), std::string::npos)
      << missing.error;
  ASSERT_TRUE(redis.command({"SET", "aibrix:profile_llama2-7b_bad", "{not json"}));
  auto bad = state::redis::loadProfileSource(url_text, "bad");
  EXPECT_FALSE(bad.profile);
  EXPECT_FALSE(bad.error.empty());
}

TEST(ProfileStoreRedisTest, UnreachableRedisIsAnErrorNotAHang) {
  testing::RedisServer server;
  const std::string url_text = "redis://" + server.address() + "/?model=m";
  server.stop();
  auto loaded = state::redis::loadProfileSource(url_text, "d");
  EXPECT_FALSE(loaded.profile);
  EXPECT_NE(loaded.error.find("cannot connect"), std::string::npos) << loaded.error;
  std::string error;
  EXPECT_FALSE(RedisUrl::parse("redis://h:99999/?model=m", &error));
  EXPECT_FALSE(RedisUrl::parse("http://h:1", &error));
  auto parsed = RedisUrl::parse("redis://user:secret@10.0.0.1:6380/2?model=x", &error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_EQ(parsed->host, "10.0.0.1");
  EXPECT_EQ(parsed->port, 6380);
  EXPECT_EQ(parsed->database, 2);
  EXPECT_EQ(parsed->password, "secret");
  EXPECT_EQ(parsed->model, "x");
}

// Two gateways publish the same interval: Switchyard's layout keeps one entry per gateway,
// AIBrix's trace key holds their sum.
TEST(LoadMonitorRedisTest, PublishesBothLayoutsAndSumsGateways) {
  testing::RedisServer server;
  fleet::ModelSpec model;
  model.name = "m";
  model.replicas.push_back({"127.0.0.1:9", {{"gpu", "A10"}}});
  fleet::FleetRegistry registry;
  registry.apply({model}, kNsPerSec, "least-request");

  gateway::LoadMonitorConfig config;
  config.redis = "redis://" + server.address();
  config.aibrix_layout = true;
  config.interval = 10 * kNsPerSec;
  boost::asio::io_context io;
  observe::ObserveConfig observe_config;
  observe::Observability first_obs(observe_config, 1), second_obs(observe_config, 1);
  {
    gateway::GatewayLoadMonitor first(io, first_obs, registry, config, "gw-1");
    gateway::GatewayLoadMonitor second(io, second_obs, registry, config, "gw-2");
    first.start();
    second.start();
    auto* a = first_obs.worker(0).loadRecorder().block(first_obs.metrics().modelSlot("m"));
    auto* b = second_obs.worker(0).loadRecorder().block(second_obs.metrics().modelSlot("m"));
    for (int i = 0; i < 5; ++i) a->completed(100, 50);
    for (int i = 0; i < 3; ++i) b->completed(100, 50);
    b->completed(3000, 20);
    b->rejected.fetch_add(2);
    first.closeInterval(1000);
    second.closeInterval(1000);
    EXPECT_EQ(first.intervalsClosed(), 1u);
    const std::string recent = second.recentJson("m", 0);
    EXPECT_NE(recent.find("\"rejected\":2"), std::string::npos) << recent;
    first.stop();
    second.stop();
  }  // the publishers drain and stop

  BlockingRedis redis;
  ASSERT_TRUE(redis.connect(*RedisUrl::parse(config.redis, nullptr)));
  std::optional<state::redis::RedisValue> hash;
  ASSERT_TRUE(waitFor([&] {
    hash = redis.command({"HGETALL", "sy:{m}:load:990"});
    return hash && hash->elements.size() == 4;
  }));
  observe::LoadInterval sum;
  for (size_t i = 1; i < hash->elements.size(); i += 2) {
    std::string error;
    auto interval = observe::parseLoadIntervalJson(hash->elements[i].text, &error);
    ASSERT_TRUE(interval) << error;
    EXPECT_EQ(interval->start, 990);
    sum.merge(*interval);
  }
  EXPECT_EQ(sum.completed, 9u);
  EXPECT_EQ(sum.rejected, 2u);
  auto ttl = redis.command({"TTL", "sy:{m}:load:990"});
  ASSERT_TRUE(ttl);
  EXPECT_GT(ttl->integer, 500);

  auto trace = redis.command({"GET", "aibrix:m_request_trace_990"});
  ASSERT_TRUE(trace);
  std::string error;
  auto parsed = observe::parseAibrixTrace(trace->text, "m", 990, &error);
  ASSERT_TRUE(parsed) << error << " " << trace->text;
  EXPECT_EQ(parsed->completed, 9u);
  EXPECT_EQ(parsed->demand(), 11u);  // meta_total_reqs includes the rejected ones
  EXPECT_NE(trace->text.find("\"meta_v\":4"), std::string::npos) << trace->text;
}

}  // namespace
}  // namespace switchyard
