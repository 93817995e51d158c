// Non-throwing JSON reads (JsonRead.h): every accessor checks the type first.
#include "report/JsonRead.h"

#include <cmath>
#include <limits>

namespace ptxforge::report::read {

using nlohmann::json;

const json *member(const json *object, std::string_view key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

std::optional<double> numberOf(const json *value) {
  if (value == nullptr || !value->is_number()) return std::nullopt;
  double number = value->get<double>();
  if (!std::isfinite(number)) return std::nullopt;
  return number;
}

std::optional<int64_t> integerOf(const json *value) {
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  // Unsigned values above INT64_MAX are not ids or counts we wrote.
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return value->get<int64_t>();
}

std::optional<int> countOf(const json *value) {
  std::optional<double> number = numberOf(value);
  if (!number || *number < 0 || *number > std::numeric_limits<int>::max() || *number != std::floor(*number))
    return std::nullopt;
  return static_cast<int>(*number);
}

std::optional<std::string> stringOf(const json *value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

bool isTrue(const json *value) { return value != nullptr && value->is_boolean() && value->get<bool>(); }

std::string dumpCompact(const json &value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

} // namespace ptxforge::report::read
