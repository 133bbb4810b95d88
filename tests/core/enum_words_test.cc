// The lookups every word table and v1 table goes through (core/enum_words.h).
#include "pathprof/core/enum_words.h"

#include <gtest/gtest.h>

namespace pathprof {
namespace {

enum class Colour { kRed, kGreen, kBlue, kUnlisted };
enum class Shade { kDark, kLight, kPale };

constexpr EnumWords<Colour, 3> kColours{{
    {Colour::kRed, "red"},
    {Colour::kGreen, "green"},
    {Colour::kBlue, "blue"},
}};

constexpr EnumPairs<Colour, Shade, 2> kShades{{
    {Colour::kRed, Shade::kDark},
    {Colour::kBlue, Shade::kLight},
}};

TEST(EnumWords, WordsAndValuesBothWays) {
  EXPECT_EQ(WordOf(kColours, Colour::kGreen), "green");
  EXPECT_EQ(WordOf(kColours, Colour::kUnlisted), "?");
  EXPECT_EQ(WordOf(kColours, Colour::kUnlisted, "none"), "none");
  EXPECT_EQ(ValueOfWord(kColours, "blue"), Colour::kBlue);
  EXPECT_EQ(ValueOfWord(kColours, "Blue"), std::nullopt);  // exact, case included
  EXPECT_EQ(ValueOfWord(kColours, "?"), std::nullopt);
  static_assert(ValueOfWord(kColours, "red") == Colour::kRed, "usable at compile time");
}

TEST(EnumWords, ParseLeavesTheOutputAloneOnAnUnknownWord) {
  Colour c = Colour::kUnlisted;
  EXPECT_FALSE(ParseWord(kColours, "purple", &c));
  EXPECT_EQ(c, Colour::kUnlisted);
  EXPECT_TRUE(ParseWord(kColours, "green", &c));
  EXPECT_EQ(c, Colour::kGreen);
}

TEST(EnumWords, WordListReadsAsAUsageMessage) {
  EXPECT_EQ(WordList(kColours), "red, green or blue");
  EXPECT_EQ(WordList(EnumWords<Colour, 2>{{{Colour::kRed, "a"}, {Colour::kBlue, "b"}}}), "a or b");
  EXPECT_EQ(WordList(EnumWords<Colour, 1>{{{Colour::kRed, "only"}}}), "only");
}

TEST(EnumPairs, EachColumnFindsTheOther) {
  EXPECT_EQ(SecondOf(kShades, Colour::kBlue), Shade::kLight);
  EXPECT_EQ(SecondOf(kShades, Colour::kGreen), std::nullopt);
  EXPECT_EQ(FirstOf(kShades, Shade::kDark), Colour::kRed);
  EXPECT_EQ(FirstOf(kShades, Shade::kPale), std::nullopt);
}

}  // namespace
}  // namespace pathprof
