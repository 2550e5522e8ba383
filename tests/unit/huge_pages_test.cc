#include "core/huge_pages.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

constexpr const char* kMadvise = "always [madvise] never\n";

TEST(HugePagesTest, AsksForTheTunableWhenNothingIsSet) {
  EXPECT_EQ(hugePageTunables(nullptr, kMadvise), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(hugePageTunables("", "[always] madvise never\n"), "glibc.malloc.hugetlb=1");
}

TEST(HugePagesTest, KeepsTheOtherTunables) {
  EXPECT_EQ(hugePageTunables("glibc.malloc.arena_max=2", kMadvise),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
}

TEST(HugePagesTest, NoReexecutionWhenSetAlreadyOrOptedOut) {
  EXPECT_EQ(hugePageTunables("glibc.malloc.hugetlb=1", kMadvise), "");
  EXPECT_EQ(hugePageTunables("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0", kMadvise), "");
}

TEST(HugePagesTest, NoReexecutionWhenTheKernelOffersNone) {
  EXPECT_EQ(hugePageTunables(nullptr, "always madvise [never]\n"), "");
  EXPECT_EQ(hugePageTunables(nullptr, ""), "");  // no THP file: an old or restricted kernel
}

}  // namespace
}  // namespace switchyard
