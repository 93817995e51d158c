// Non-throwing reads of JSON documents that have no typed codec: the run
// summary the solve loop writes, the SASS counts stored beside a result, and
// eval documents. A missing key, null, an odd type or a non-finite number all
// read as absent. (A result's own document goes through
// verify::checkResultFromJson instead; see report::decodeResult.)
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptxforge::report::read {

/// `object[key]` when `object` is an object that has the key; nullptr otherwise.
const nlohmann::json *member(const nlohmann::json *object, std::string_view key);
inline const nlohmann::json *member(const nlohmann::json &object, std::string_view key) {
  return member(&object, key);
}

/// A finite number.
std::optional<double> numberOf(const nlohmann::json *value);
/// An integer that fits int64 (no fraction).
std::optional<int64_t> integerOf(const nlohmann::json *value);
/// A count (registers, bytes, instructions): integral, non-negative, fits an int.
std::optional<int> countOf(const nlohmann::json *value);
std::optional<std::string> stringOf(const nlohmann::json *value);
bool isTrue(const nlohmann::json *value);

/// Compact JSON; invalid UTF-8 in stored strings is replaced instead of throwing.
std::string dumpCompact(const nlohmann::json &value);

} // namespace ptxforge::report::read
