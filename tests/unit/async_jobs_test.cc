// The engine emulator's replica-owned resources: background responses, batches and files.
#include "engine/async_jobs.h"

#include <gtest/gtest.h>

namespace switchyard::engine {
namespace {

class AsyncJobsTest : public ::testing::Test {
 protected:
  JobReply call(std::string_view method, std::string_view path, std::string_view body = "") {
    return jobs_.handle(method, path, body, now_, 1'700'000'000);
  }
  // The value of a string field in a flat JSON reply (enough for these bodies).
  static std::string field(const std::string& json, std::string_view name) {
    const std::string key = "\"" + std::string(name) + "\":\"";
    const size_t at = json.find(key);
    if (at == std::string::npos) return {};
    const size_t start = at + key.size();
    return json.substr(start, json.find('"', start) - start);
  }

  AsyncJobs jobs_{
      AsyncJobOptions{.model = "m", .replica_identity = "127.0.0.1:9001", .max_items = 3}};
  TimeNs now_ = 1000 * kNsPerSec;
};

TEST_F(AsyncJobsTest, BackgroundResponseCompletesAfterItsGenerationTime) {
  const JobReply created = call("POST", "/v1/responses",
                                R"({"model":"m","input":"hello there","background":true,)"
                                R"("max_output_tokens":50})");
  ASSERT_EQ(created.status, 200u) << created.body;
  const std::string id = field(created.body, "id");
  EXPECT_TRUE(id.starts_with("resp_")) << id;
  EXPECT_EQ(field(created.body, "status"), "queued");
  // 50 tokens at 20 ms: still running after 0.9 s, done after 1.1 s.
  now_ += 900 * kNsPerMs;
  EXPECT_EQ(field(call("GET", "/v1/responses/" + id).body, "status"), "queued");
  now_ += 200 * kNsPerMs;
  const JobReply done = call("GET", "/v1/responses/" + id);
  EXPECT_EQ(field(done.body, "status"), "completed");
  EXPECT_FALSE(field(done.body, "text").empty());
  EXPECT_NE(done.body.find(R"("output_tokens":50)"), std::string::npos) << done.body;
}

TEST_F(AsyncJobsTest, ForegroundResponseIsCompletedAtOnce) {
  const JobReply r = call("POST", "/v1/responses", R"({"input":[{"role":"user","content":"x"}]})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(field(r.body, "status"), "completed");
  EXPECT_EQ(call("POST", "/v1/responses", R"({"background":true})").status, 400u);
  EXPECT_EQ(call("POST", "/v1/responses", R"({"model":"other","input":"x"})").status, 404u);
}

TEST_F(AsyncJobsTest, UnknownIdsAre404WithTheErrorEnvelope) {
  for (const char* path : {"/v1/responses/resp_nope", "/v1/batches/batch_nope",
                           "/v1/files/file-nope", "/v1/files/file-nope/content"}) {
    const JobReply r = call("GET", path);
    EXPECT_EQ(r.status, 404u) << path;
    EXPECT_NE(r.body.find(R"({"error":{)"), std::string::npos) << r.body;
  }
  EXPECT_EQ(call("DELETE", "/v1/files").status, 405u);
}

TEST_F(AsyncJobsTest, IdsAreUniqueAndCarryTheReplica) {
  AsyncJobs other{AsyncJobOptions{.model = "m", .replica_identity = "127.0.0.1:9002"}};
  const std::string a1 = field(call("POST", "/v1/files", "x").body, "id");
  const std::string a2 = field(call("POST", "/v1/files", "y").body, "id");
  const std::string b1 = field(other.handle("POST", "/v1/files", "x", now_, 0).body, "id");
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, b1);
  EXPECT_EQ(a1.substr(0, 13), a2.substr(0, 13));  // "file-" + the replica's tag
  EXPECT_NE(a1.substr(0, 13), b1.substr(0, 13));
  EXPECT_EQ(other.handle("GET", "/v1/files/" + a1, "", now_, 0).status, 404u);  // not its file
}

TEST_F(AsyncJobsTest, FilesKeepTheirBytesAndTheOldestIsDroppedAtTheCap) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--b\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n{}\r\n--b--";
  const JobReply created = call("POST", "/v1/files", body);
  const std::string id = field(created.body, "id");
  EXPECT_EQ(field(created.body, "filename"), "in.jsonl");
  EXPECT_EQ(field(created.body, "purpose"), "batch");
  EXPECT_EQ(call("GET", "/v1/files/" + id + "/content").body, body);
  EXPECT_EQ(field(call("GET", "/v1/files/" + id).body, "object"), "file");
  for (int i = 0; i < 3; ++i) call("POST", "/v1/files", "more");  // cap 3: the first goes
  EXPECT_EQ(call("GET", "/v1/files/" + id).status, 404u);
}

TEST_F(AsyncJobsTest, BatchProgressesToCompletedAndCanBeCancelledBefore) {
  const std::string file = field(call("POST", "/v1/files", "{}").body, "id");
  const std::string request = R"({"input_file_id":")" + file +
                              R"(","endpoint":"/v1/chat/completions","completion_window":"24h"})";
  const JobReply created = call("POST", "/v1/batches", request);
  ASSERT_EQ(created.status, 200u) << created.body;
  const std::string id = field(created.body, "id");
  EXPECT_TRUE(id.starts_with("batch_"));
  EXPECT_EQ(field(created.body, "status"), "validating");
  now_ += 1 * kNsPerSec;
  EXPECT_EQ(field(call("GET", "/v1/batches/" + id).body, "status"), "in_progress");
  now_ += 2 * kNsPerSec;
  EXPECT_EQ(field(call("GET", "/v1/batches/" + id).body, "status"), "completed");
  EXPECT_EQ(call("POST", "/v1/batches/" + id + "/cancel").status, 409u);

  const std::string second = field(call("POST", "/v1/batches", request).body, "id");
  EXPECT_EQ(field(call("POST", "/v1/batches/" + second + "/cancel").body, "status"), "cancelled");
  now_ += 10 * kNsPerSec;
  EXPECT_EQ(field(call("GET", "/v1/batches/" + second).body, "status"), "cancelled");
  // A batch needs its input file on this replica, and all three fields.
  EXPECT_EQ(call("POST", "/v1/batches",
                 R"({"input_file_id":"file-x","endpoint":"e",)"
                 R"("completion_window":"24h"})")
                .status,
            404u);
  EXPECT_EQ(call("POST", "/v1/batches", R"({"endpoint":"e"})").status, 400u);
}

TEST(AsyncJobsRoutes, OnlyTheJobPathsAreClaimed) {
  EXPECT_TRUE(AsyncJobs::handles("/v1/responses"));
  EXPECT_TRUE(AsyncJobs::handles("/v1/files/file-1/content"));
  EXPECT_FALSE(AsyncJobs::handles("/v1/responsesX"));
  EXPECT_FALSE(AsyncJobs::handles("/v1/chat/completions"));
}

}  // namespace
}  // namespace switchyard::engine
