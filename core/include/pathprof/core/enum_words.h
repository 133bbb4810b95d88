// One table per enumeration, written once and read by everyone who parses or prints it: each
// value with the word that flags, config files, JSON-free printouts and the TUI use for it
// (EnumWord), and, in api/, each value with its pathprof.v1 twin (EnumPair). A switch with a
// default, or a cast between two enums, silently says something wrong once either enum grows;
// a table misses a row instead, which the table's round-trip test finds (every value to a word
// and back, every word unique, every v1 value to a row).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pathprof {

template <typename E>
struct EnumWord {
  E value;
  std::string_view word;
};

template <typename E, size_t N>
using EnumWords = std::array<EnumWord<E>, N>;

// The word of `value`, or `missing` where the table has no row for it.
template <typename E, size_t N>
constexpr std::string_view WordOf(const EnumWords<E, N>& table, E value,
                                  std::string_view missing = "?") {
  for (const EnumWord<E>& row : table)
    if (row.value == value) return row.word;
  return missing;
}

// The value whose word is `word` (exactly, case included); nullopt for any other text.
template <typename E, size_t N>
constexpr std::optional<E> ValueOfWord(const EnumWords<E, N>& table, std::string_view word) {
  for (const EnumWord<E>& row : table)
    if (row.word == word) return row.value;
  return std::nullopt;
}

// ValueOfWord for the `bool Parse...(text, &out)` functions: `out` is left alone on false.
template <typename E, size_t N>
constexpr bool ParseWord(const EnumWords<E, N>& table, std::string_view word, E* out) {
  const std::optional<E> value = ValueOfWord(table, word);
  if (value) *out = *value;
  return value.has_value();
}

// "a, b, c or d": the words in the table's order, as usage messages list them.
template <typename E, size_t N>
std::string WordList(const EnumWords<E, N>& table) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].word;
  }
  return out;
}

// One row of a translation between two enumerations of one concept (a C++ enum and its v1 twin).
template <typename A, typename B>
struct EnumPair {
  A first;
  B second;
};

template <typename A, typename B, size_t N>
using EnumPairs = std::array<EnumPair<A, B>, N>;

template <typename A, typename B, size_t N>
constexpr std::optional<B> SecondOf(const EnumPairs<A, B, N>& table, A value) {
  for (const EnumPair<A, B>& row : table)
    if (row.first == value) return row.second;
  return std::nullopt;
}

template <typename A, typename B, size_t N>
constexpr std::optional<A> FirstOf(const EnumPairs<A, B, N>& table, B value) {
  for (const EnumPair<A, B>& row : table)
    if (row.second == value) return row.first;
  return std::nullopt;
}

}  // namespace pathprof
