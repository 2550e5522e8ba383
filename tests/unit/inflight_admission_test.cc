#include "admission/inflight_admission.h"

#include <gtest/gtest.h>

namespace switchyard::admission {
namespace {

TEST(InflightAdmissionTest, AdmitLocallyCountsAndRefusesAtTheLimitWithOthersIncluded) {
  fleet::ReplicaState replica("r1", "127.0.0.1", 1);
  EXPECT_TRUE(admitLocally(replica, 3));
  EXPECT_TRUE(admitLocally(replica, 3));
  replica.storeRemoteRunning(1);
  EXPECT_FALSE(admitLocally(replica, 3));  // 2 here + 1 elsewhere: full
  EXPECT_EQ(replica.counters().running.load(), 2);  // the refused request was undone
  releaseLocally(replica);
  EXPECT_TRUE(admitLocally(replica, 3));
  EXPECT_TRUE(admitLocally(replica, 0));  // 0: unlimited
}

TEST(InflightAdmissionTest, SharesOfEveryReplicaAddUpToTheLimit) {
  for (int64_t limit : {1, 2, 3, 4, 7, 10, 64}) {
    for (int gateways : {1, 2, 3, 5}) {
      for (uint64_t key : {0ull, 1ull, 2ull, 12345ull, 0xFFFFFFFFFFFFull}) {
        int64_t sum = 0;
        for (int rank = 0; rank < gateways; ++rank) {
          const int64_t share = inflightShare(limit, gateways, rank, key);
          EXPECT_GE(share, limit / gateways);
          EXPECT_LE(share, limit / gateways + 1);
          sum += share;
        }
        EXPECT_EQ(sum, limit) << limit << " over " << gateways;
      }
    }
  }
  EXPECT_EQ(inflightShare(0, 3, 0, 7), 0);
  EXPECT_EQ(inflightShare(5, 1, 0, 7), 5);
}

TEST(InflightAdmissionTest, TheRemainderGoesToDifferentGatewaysOnDifferentReplicas) {
  // Limit 1 over 3 gateways: each replica belongs to exactly one gateway, and over many replicas
  // every gateway gets some.
  int owned[3] = {0, 0, 0};
  for (uint64_t key = 0; key < 300; ++key) {
    int owners = 0;
    for (int rank = 0; rank < 3; ++rank) {
      if (inflightShare(1, 3, rank, key) == 1) {
        ++owners;
        ++owned[rank];
      }
    }
    EXPECT_EQ(owners, 1);
  }
  for (int n : owned) EXPECT_EQ(n, 100);
}

TEST(InflightAdmissionTest, WithinShareCountsTheAdmittedRequest) {
  fleet::ReplicaState replica("r1", "127.0.0.1", 1);
  // Limit 4 over 2 gateways: a share of 2 each.
  ASSERT_TRUE(admitLocally(replica, 4));
  EXPECT_TRUE(withinShare(replica, 4, 2, 0));
  ASSERT_TRUE(admitLocally(replica, 4));
  EXPECT_TRUE(withinShare(replica, 4, 2, 0));
  ASSERT_TRUE(admitLocally(replica, 4));
  EXPECT_FALSE(withinShare(replica, 4, 2, 0));
  EXPECT_TRUE(withinShare(replica, 0, 2, 0));  // unlimited
}

}  // namespace
}  // namespace switchyard::admission
