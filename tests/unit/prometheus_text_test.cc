#include "fleet/prometheus_text.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::fleet {
namespace {

struct Parsed {
  bool ok = false;
  bool malformed = false;
  PrometheusSample sample;
};

Parsed parse(std::string_view line) {
  Parsed p;
  p.ok = internal::parsePrometheusLine(line, p.sample, p.malformed);
  return p;
}

TEST(PrometheusLineTest, PlainSample) {
  Parsed p = parse("process_open_fds 17");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.name, "process_open_fds");
  EXPECT_EQ(p.sample.labels, "");
  EXPECT_EQ(p.sample.value, 17);
}

TEST(PrometheusLineTest, CommentsHelpTypeAndBlankAreSkippedNotMalformed) {
  for (std::string_view line : {"# HELP vllm:num_requests_running Number of requests.",
                                "# TYPE vllm:num_requests_running gauge", "#", "", "   ",
                                "\r", "  # indented comment"}) {
    Parsed p = parse(line);
    EXPECT_FALSE(p.ok) << line;
    EXPECT_FALSE(p.malformed) << line;
  }
}

TEST(PrometheusLineTest, ColonNamesAndLabels) {
  Parsed p = parse(R"(vllm:num_requests_running{engine="0",model_name="meta/Llama-3"} 4.0)");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.name, "vllm:num_requests_running");
  EXPECT_EQ(p.sample.labels, R"(engine="0",model_name="meta/Llama-3")");
  EXPECT_EQ(p.sample.value, 4.0);
}

TEST(PrometheusLineTest, QuotedValuesMayHoldBracesCommasAndEscapes) {
  Parsed p = parse(R"(m{a="x}y",b="1,2",c="say \"hi\"",d="back\\slash",e="nl\n"} 1)");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.labels, R"(a="x}y",b="1,2",c="say \"hi\"",d="back\\slash",e="nl\n")");
  EXPECT_EQ(p.sample.value, 1);
}

TEST(PrometheusLineTest, EmptyBlockTrailingCommaAndSpaces) {
  EXPECT_TRUE(parse("m{} 1").ok);
  Parsed p = parse(R"(m{ a = "1" , } 2)");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.value, 2);
  EXPECT_TRUE(parse("m {a=\"1\"} 3").ok);
}

TEST(PrometheusLineTest, SpecialAndScientificValues) {
  EXPECT_TRUE(std::isnan(parse("m NaN").sample.value));
  EXPECT_EQ(parse("m +Inf").sample.value, INFINITY);
  EXPECT_EQ(parse("m -Inf").sample.value, -INFINITY);
  EXPECT_EQ(parse("m Inf").sample.value, INFINITY);
  EXPECT_DOUBLE_EQ(parse("m 1.5e-3").sample.value, 0.0015);
  EXPECT_DOUBLE_EQ(parse("m -2E+2").sample.value, -200);
  EXPECT_DOUBLE_EQ(parse("m +7").sample.value, 7);
  EXPECT_EQ(parse("m 1e999").sample.value, INFINITY);  // saturates like Go's ParseFloat
  EXPECT_EQ(parse("m 1e-999").sample.value, 0.0);
}

// Plain decimals take a fast path; its result must be the general parse's, bit for bit.
TEST(PrometheusLineTest, PlainDecimalsEqualTheGeneralParseExactly) {
  for (std::string_view token :
       {"0", "-0", "1", "1.0", "0.37", "-3.5", "12.", ".5", "0.1", "0.3", "0.7",
        "0.999999999999999", "123456789012345", "1234567890123456", "9007199254740993",
        "3.14159265358979", "0.000001", "0000000000000001", "-0.000000000000001",
        "42.4200000000000000001", "6976"}) {
    double expected = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), expected);
    ASSERT_EQ(ec, std::errc()) << token;
    Parsed p = parse("m " + std::string(token));
    ASSERT_TRUE(p.ok) << token;
    EXPECT_EQ(std::bit_cast<uint64_t>(p.sample.value), std::bit_cast<uint64_t>(expected))
        << token;
  }
  for (std::string_view token : {".", "-", "1.2.3", "1-", "-.", "1..2"}) {
    EXPECT_FALSE(parse("m " + std::string(token)).ok) << token;
  }
}

TEST(PrometheusLineTest, TimestampCrlfAndWhitespace) {
  Parsed p = parse("m{a=\"b\"} 3 1712345678901\r");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.value, 3);
  p = parse("\t m \t 5 \t -12 \t");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.sample.name, "m");
  EXPECT_EQ(p.sample.value, 5);
}

TEST(PrometheusLineTest, MalformedLinesAreFlagged) {
  for (std::string_view line :
       {"m", "m ", "m{a=\"1\"}", "m abc", "m 1 2 3", "m 1 1.5", "m{a=\"1\" 1", "m{a=1} 1",
        "m{a=\"unterminated} 1", "m{=\"x\"} 1", "m{a:b=\"x\"} 1", "m{a=\"x\"b=\"y\"} 1",
        "9m 1", "m- 1", "{a=\"x\"} 1", "m 0x10", "m ++1", "m +-1", "m 1_000",
        "m{a=\"bad \\q escape\"} 1", "m{a=\"x\\", "m{a", "m{a=", "m{a=\"", "m{"}) {
    Parsed p = parse(line);
    EXPECT_FALSE(p.ok) << line;
    EXPECT_TRUE(p.malformed) << line;
  }
}

TEST(PrometheusTextTest, ForEachReportsSamplesInOrderAndCountsMalformed) {
  std::string text =
      "# HELP a help\r\n# TYPE a gauge\r\na 1\r\nbroken line here\r\nb{x=\"}\"} 2\r\n\r\nc 3";
  std::vector<std::string> names;
  std::vector<double> values;
  int malformed = forEachPrometheusSample(text, [&](const PrometheusSample& s) {
    names.emplace_back(s.name);
    values.push_back(s.value);
  });
  EXPECT_EQ(malformed, 1);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(values, (std::vector<double>{1, 2, 3}));
}

}  // namespace
}  // namespace switchyard::fleet
