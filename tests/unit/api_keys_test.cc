// API keys: generation, hashing, the bearer header, the keys file and the key table.
#include <gtest/gtest.h>

#include <set>

#include "allocation_count.h"
#include "auth/api_key.h"
#include "auth/key_table.h"
#include "auth/keys_file.h"

namespace switchyard::auth {
namespace {

KeysFile fileWith(std::initializer_list<std::pair<std::string, std::string>> name_and_key,
                  HashKey hash_key = generateHashKey()) {
  KeysFile file;
  file.hash_key = hash_key;
  for (const auto& [name, key] : name_and_key) {
    KeyRecord record;
    record.name = name;
    record.digest = digestOf(hash_key, key);
    record.models = {"m1", "m2"};
    record.rpm = 60;
    record.tpm = 1000;
    file.keys.push_back(record);
  }
  return file;
}

TEST(ApiKeyTest, GeneratedKeysAreDistinctAndUrlSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string key = generateKey();
    ASSERT_TRUE(key.starts_with(kKeyPrefix)) << key;
    EXPECT_EQ(key.size(), kKeyPrefix.size() + 43);
    for (char c : key.substr(kKeyPrefix.size())) {
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << key;
    }
    EXPECT_TRUE(seen.insert(key).second);
  }
}

TEST(ApiKeyTest, DigestDependsOnTheKeyAndTheHashKey) {
  const HashKey a = generateHashKey();
  const HashKey b = generateHashKey();
  EXPECT_TRUE(digestsEqual(digestOf(a, "sk-sy-x"), digestOf(a, "sk-sy-x")));
  EXPECT_FALSE(digestsEqual(digestOf(a, "sk-sy-x"), digestOf(a, "sk-sy-y")));
  EXPECT_FALSE(digestsEqual(digestOf(a, "sk-sy-x"), digestOf(b, "sk-sy-x")));
}

TEST(ApiKeyTest, BearerTokenParsing) {
  EXPECT_EQ(bearerToken("Bearer abc"), "abc");
  EXPECT_EQ(bearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(bearerToken("  BEARER\tabc"), "abc");
  EXPECT_EQ(bearerToken("Bearer"), "");
  EXPECT_EQ(bearerToken("Bearer "), "");
  EXPECT_EQ(bearerToken("Bearerabc"), "");
  EXPECT_EQ(bearerToken("Basic YWxhZGRpbjpvcGVuc2VzYW1l"), "");
  EXPECT_EQ(bearerToken("Bearer a b"), "");
  EXPECT_EQ(bearerToken("Bearer " + std::string(kMaxTokenBytes + 1, 'x')), "");
  EXPECT_EQ(bearerToken(""), "");
}

TEST(ApiKeyTest, KeyNames) {
  EXPECT_TRUE(validKeyName("alice"));
  EXPECT_TRUE(validKeyName("team-a.prod_2"));
  EXPECT_FALSE(validKeyName(""));
  EXPECT_FALSE(validKeyName("-lead"));
  EXPECT_FALSE(validKeyName("has space"));
  EXPECT_FALSE(validKeyName("quote\""));
  EXPECT_FALSE(validKeyName("brace{x}"));
  EXPECT_FALSE(validKeyName(std::string(65, 'a')));
}

TEST(KeysFileTest, RenderThenParseKeepsEverything) {
  KeysFile file = fileWith({{"alice", "sk-sy-1"}, {"bob", "sk-sy-2"}});
  file.keys[1].models = {"*"};
  file.keys[1].rpm = 0;
  file.keys[1].created = "2025-01-01T00:00:00Z";
  const KeysFile back = parseKeysFile(renderKeysFile(file));
  EXPECT_EQ(back.hash_key, file.hash_key);
  ASSERT_EQ(back.keys.size(), 2u);
  EXPECT_EQ(back.keys[0].name, "alice");
  EXPECT_EQ(back.keys[0].digest, file.keys[0].digest);
  EXPECT_EQ(back.keys[0].models, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(back.keys[0].rpm, 60);
  EXPECT_EQ(back.keys[0].tpm, 1000);
  EXPECT_TRUE(back.keys[1].allModels());
  EXPECT_EQ(back.keys[1].created, "2025-01-01T00:00:00Z");
}

TEST(KeysFileTest, TheRenderedFileHoldsNoKey) {
  const KeysFile file = fileWith({{"alice", "sk-sy-secretsecret"}});
  EXPECT_EQ(renderKeysFile(file).find("secretsecret"), std::string::npos);
}

TEST(KeysFileTest, ErrorsNameTheField) {
  const std::string hk = "hash_key: " + std::string(64, 'a') + "\n";
  const std::string h = std::string(64, 'b');
  auto error = [](const std::string& text) {
    try {
      parseKeysFile(text);
    } catch (const KeysFileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("keys: []\n").find("hash_key: required"), std::string::npos);
  EXPECT_NE(error("hash_key: zz\n").find("hash_key"), std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + "}\n").find("keys[0].models"),
            std::string::npos);
  EXPECT_NE(
      error(hk + "keys:\n  - {name: 'a b', hash: " + h + ", models: [m]}\n").find("keys[0].name"),
      std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [m], rpm: -1}\n")
                .find("keys[0].rpm"),
            std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: ['*', m]}\n")
                .find("cannot be mixed"),
            std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [m], colour: red}\n")
                .find("keys[0].colour: unknown field"),
            std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [m]}\n  - {name: a, hash: " +
                  std::string(64, 'c') + ", models: [m]}\n")
                .find("duplicate key name a"),
            std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h +
                  ", models: [m]}\n  - {name: b, hash: " + h + ", models: [m]}\n")
                .find("listed twice"),
            std::string::npos);
  // Text that could not be written back unchanged (found by the keys_file fuzz target).
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h +
                  ", models: [\"m\x9b"
                  "x\"]}\n")
                .find("UTF-8"),
            std::string::npos);
  EXPECT_NE(
      error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [\"m\\x9bx\"]}\n").find("UTF-8"),
      std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [\"m\\tx\"]}\n")
                .find("control characters"),
            std::string::npos);
  EXPECT_NE(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [m], created: \"\\x01\"}\n")
                .find("keys[0].created"),
            std::string::npos);
  EXPECT_EQ(error(hk + "keys:\n  - {name: a, hash: " + h + ", models: [\"modèle-7b\"]}\n"),
            "no error");
  EXPECT_NE(error("[1, 2]").find("top level"), std::string::npos);
  EXPECT_NE(error("{").find("invalid YAML"), std::string::npos);
  EXPECT_EQ(error(hk + "keys:\n"), "no error");
}

TEST(KeysFileTest, ModelLists) {
  EXPECT_EQ(parseModelList("a, b ,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(parseModelList("*"), (std::vector<std::string>{"*"}));
  EXPECT_THROW(parseModelList(" , "), KeysFileError);
  EXPECT_THROW(parseModelList("*,a"), KeysFileError);
}

TEST(KeyTableTest, FindsEveryKeyAndNothingElse) {
  KeyStates states;
  std::vector<std::pair<std::string, std::string>> keys;
  KeysFile file;
  file.hash_key = generateHashKey();
  for (int i = 0; i < 200; ++i) {
    const std::string key = generateKey();
    KeyRecord record;
    record.name = "k" + std::to_string(i);
    record.digest = digestOf(file.hash_key, key);
    record.models = {"*"};
    file.keys.push_back(record);
    keys.emplace_back(record.name, key);
  }
  const KeyTable table(file, states);
  for (const auto& [name, key] : keys) {
    const KeyEntry* entry = table.find(key);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->state->name, name);
    EXPECT_TRUE(entry->mayUse("anything"));
  }
  EXPECT_EQ(table.find(generateKey()), nullptr);
  EXPECT_EQ(table.find(""), nullptr);
  EXPECT_EQ(table.find(keys[0].second + "x"), nullptr);
}

TEST(KeyTableTest, ModelsAndStateSurviveAReload) {
  KeyStates states;
  const HashKey hk = generateHashKey();
  const KeyTable first(fileWith({{"alice", "sk-sy-a"}}, hk), states);
  const KeyEntry* a = first.find("sk-sy-a");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->mayUse("m1"));
  EXPECT_FALSE(a->mayUse("m3"));
  a->state->counters.allowed.fetch_add(3);
  // The same name with a new key: the new key works, the old does not, the state carries over.
  const KeyTable second(fileWith({{"alice", "sk-sy-new"}}, hk), states);
  EXPECT_EQ(second.find("sk-sy-a"), nullptr);
  ASSERT_NE(second.find("sk-sy-new"), nullptr);
  EXPECT_EQ(second.find("sk-sy-new")->state, a->state);
  EXPECT_EQ(second.find("sk-sy-new")->state->counters.allowed.load(), 3u);
}

TEST(KeyTableTest, LookupDoesNotAllocate) {
  KeyStates states;
  const KeyTable table(fileWith({{"alice", "sk-sy-a"}, {"bob", "sk-sy-b"}}), states);
  if (!switchyard::testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  switchyard::testing::AllocationScope counter;
  const KeyEntry* hit = table.find("sk-sy-b");
  const KeyEntry* miss = table.find("sk-sy-c");
  const bool may = hit != nullptr && hit->mayUse("m2");
  EXPECT_EQ(counter.count(), 0u);
  EXPECT_NE(hit, nullptr);
  EXPECT_EQ(miss, nullptr);
  EXPECT_TRUE(may);
}

}  // namespace
}  // namespace switchyard::auth
