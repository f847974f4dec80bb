#pragma once
/// @file
/// A minimal JSON writer (ordered objects, NaN/inf written as null) and a reader for the few
/// top-level numbers the benchmarks take from another JSON file (the measured ceilings).

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cellint::bench {

/// Escapes a string for JSON.
inline std::string json_quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          r += b;
        } else {
          r += c;
        }
    }
  }
  return r + "\"";
}

/// A number in JSON (null when not finite), with enough digits to round-trip a double.
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

/// An ordered JSON object built key by key.
class JsonObject {
 public:
  /// Adds a number (null when not finite).
  JsonObject& num(const std::string& k, double v) { return raw(k, json_number(v)); }
  /// Adds an integer.
  JsonObject& integer(const std::string& k, long long v) { return raw(k, std::to_string(v)); }
  /// Adds a string.
  JsonObject& str(const std::string& k, const std::string& v) { return raw(k, json_quote(v)); }
  /// Adds a boolean.
  JsonObject& boolean(const std::string& k, bool v) { return raw(k, v ? "true" : "false"); }
  /// Adds null.
  JsonObject& null(const std::string& k) { return raw(k, "null"); }
  /// Adds already-serialised JSON.
  JsonObject& raw(const std::string& k, const std::string& json) {
    items_.push_back(json_quote(k) + ": " + json);
    return *this;
  }
  /// Serialises on one line.
  std::string dump() const {
    std::string r = "{";
    for (std::size_t i = 0; i < items_.size(); ++i) r += (i ? ", " : "") + items_[i];
    return r + "}";
  }
  /// Serialises with one key per line (top-level documents).
  std::string dump_pretty(const std::string& indent = "  ") const {
    std::string r = "{\n";
    for (std::size_t i = 0; i < items_.size(); ++i) r += indent + items_[i] + (i + 1 < items_.size() ? ",\n" : "\n");
    return r + "}\n";
  }

 private:
  std::vector<std::string> items_;
};

/// A JSON array of already-serialised elements, one per line.
inline std::string json_array(const std::vector<std::string>& items, const std::string& indent = "    ") {
  if (items.empty()) return "[]";
  std::string r = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) r += indent + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return r + "  ]";
}

/// Reads the number stored under `"key"` anywhere in `text` (first occurrence); NaN if absent
/// or null. Enough for the flat ceilings file; not a general JSON parser.
inline double json_find_number(const std::string& text, const std::string& key) {
  const std::string q = json_quote(key);
  std::size_t p = text.find(q);
  if (p == std::string::npos) return NAN;
  p = text.find(':', p + q.size());
  if (p == std::string::npos) return NAN;
  ++p;
  while (p < text.size() && (text[p] == ' ' || text[p] == '\n' || text[p] == '\t' || text[p] == '\r')) ++p;
  const char* s = text.c_str() + p;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  return end == s ? NAN : v;
}

/// The whole content of a file ("" if it cannot be read).
inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `text` to `path` through a temporary file, so that a reader (or a run killed midway)
/// never sees half a document. Returns false on failure.
inline bool write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::trunc);
    if (!o) return false;
    o << text;
    if (!o) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace cellint::bench
