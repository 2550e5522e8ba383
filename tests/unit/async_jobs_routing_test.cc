// src/gateway: which requests create or follow up an async job, the id in a creation answer,
// and the per-worker session-pin cache.
#include <gtest/gtest.h>

#include "gateway/async_jobs.h"
#include "gateway/session_cache.h"

namespace switchyard::gateway {
namespace {

TEST(JobPaths, CreationsFollowUpsAndListsAreTold) {
  EXPECT_EQ(classifyJobPath("/v1/responses", true).kind, JobRequest::kCreate);
  EXPECT_EQ(classifyJobPath("/v1/batches", true).kind, JobRequest::kCreate);
  EXPECT_EQ(classifyJobPath("/v1/files", false).kind, JobRequest::kList);
  const JobPath content = classifyJobPath("/v1/files/file-abc/content", false);
  EXPECT_EQ(content.kind, JobRequest::kFollowUp);
  EXPECT_EQ(content.collection, "files");
  EXPECT_EQ(content.id, "file-abc");
  const JobPath cancel = classifyJobPath("/v1/batches/batch_7/cancel", true);
  EXPECT_EQ(cancel.kind, JobRequest::kFollowUp);
  EXPECT_EQ(cancel.id, "batch_7");
  EXPECT_EQ(classifyJobPath("/v1/responses/resp_1", false).id, "resp_1");
}

TEST(JobPaths, OtherPathsAndHostileIdsAreNotJobs) {
  EXPECT_EQ(classifyJobPath("/v1/chat/completions", true).kind, JobRequest::kNone);
  EXPECT_EQ(classifyJobPath("/v1/responsesX", true).kind, JobRequest::kNone);
  EXPECT_EQ(classifyJobPath("/v2/files", true).kind, JobRequest::kNone);
  EXPECT_EQ(classifyJobPath("/v1/files//content", false).kind, JobRequest::kNone);
  EXPECT_EQ(classifyJobPath("/v1/files/a{b}", false).kind, JobRequest::kNone);
  EXPECT_EQ(classifyJobPath("/v1/files/" + std::string(300, 'a'), false).kind,
            JobRequest::kNone);
}

TEST(ResourceId, FoundInAnObjectOrTheFirstEventOfAStream) {
  EXPECT_EQ(findResourceId(R"({"id":"resp_12","object":"response"})"), "resp_12");
  EXPECT_EQ(findResourceId(R"({ "object":"file", "id" : "file-9" })"), "file-9");
  EXPECT_EQ(findResourceId("event: response.created\ndata: {\"type\":\"response.created\","
                           "\"response\":{\"id\":\"resp_x\",\"status\":\"queued\"}}\n\n"),
            "resp_x");
  EXPECT_EQ(findResourceId(R"({"object":"batch"})"), "");
  EXPECT_EQ(findResourceId(R"({"id":42})"), "");
  EXPECT_EQ(findResourceId(R"({"id":"a b"})"), "");  // not a plain id
  EXPECT_EQ(findResourceId(R"({"id":"unterminated)"), "");
  // "id" as a value or another key's suffix is not the member.
  EXPECT_EQ(findResourceId(R"({"kind":"id","file_id":"f","id":"real"})"), "real");
}

TEST(SessionCache, FreshPinsAreServedStaleOnesAndOldestAreDropped) {
  SessionCache cache(2, 100);
  cache.store("m", "s1", "10.0.0.1:8000", 0);
  EXPECT_EQ(cache.find("m", "s1", 50), "10.0.0.1:8000");
  EXPECT_EQ(cache.find("other", "s1", 50), "");  // per model
  EXPECT_EQ(cache.find("m", "s1", 101), "");     // no longer fresh
  EXPECT_EQ(cache.size(), 0u);
  cache.store("m", "a", "r1", 200);
  cache.store("m", "b", "r2", 201);
  cache.store("m", "a", "r3", 202);  // update: "a" becomes the newest
  cache.store("m", "c", "r4", 203);  // full: the oldest ("b") goes
  EXPECT_EQ(cache.find("m", "a", 210), "r3");
  EXPECT_EQ(cache.find("m", "b", 210), "");
  EXPECT_EQ(cache.find("m", "c", 210), "r4");
  cache.erase("m", "a");
  EXPECT_EQ(cache.find("m", "a", 210), "");
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace switchyard::gateway
