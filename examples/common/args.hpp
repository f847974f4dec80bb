#pragma once
// The command-line reader of the example programs: walks argv option by option and reads the
// value after an option as text, an integer, a number, a pair "L,H" or a triple "X,Y,Z". A missing or malformed
// value prints "<program>: <option> ..." and exits with status 2; so does fail().
#include <cstdio>
#include <cstdlib>
#include <string>

namespace cellint::examples {

class Args {
 public:
  Args(const char* program, int argc, char** argv) : program_(program), argc_(argc), argv_(argv) {}

  /// Moves to the next option; false when none is left.
  bool next() {
    if (++i_ >= argc_) return false;
    option_ = argv_[i_];
    return true;
  }
  /// The current option.
  const std::string& option() const { return option_; }
  /// The argument after the current option.
  std::string value() {
    if (i_ + 1 >= argc_) fail(option_ + " needs a value (see --help)");
    return argv_[++i_];
  }
  /// The argument after the current option as an integer.
  int integer() {
    const std::string v = value();
    char* end = nullptr;
    const long r = std::strtol(v.c_str(), &end, 10);
    if (*end || v.empty()) fail(option_ + " expects an integer, got '" + v + "'");
    return static_cast<int>(r);
  }
  /// The argument after the current option as yes/no (also true/false, 1/0).
  bool yes_no() {
    const std::string v = value();
    if (v == "yes" || v == "true" || v == "1") return true;
    if (v == "no" || v == "false" || v == "0") return false;
    fail(option_ + " expects yes or no, got '" + v + "'");
  }
  /// The argument after the current option as a number.
  double real() { return real_of(value()); }
  /// The argument after the current option as two numbers "L,H".
  void pair(double& lo, double& hi) {
    const std::string v = value();
    const auto c = v.find(',');
    if (c == std::string::npos) fail(option_ + " expects two numbers 'L,H', got '" + v + "'");
    lo = real_of(v.substr(0, c));
    hi = real_of(v.substr(c + 1));
  }
  /// The argument after the current option as three integers "X,Y,Z", each in [least, most].
  void triple(int (&v)[3], int least, int most) {
    const std::string t = value();
    const char* p = t.c_str();
    for (int d = 0; d < 3; ++d) {
      char* end = nullptr;
      const long x = std::strtol(p, &end, 10);
      if (end == p || *end != (d < 2 ? ',' : '\0')) fail(option_ + " expects three integers 'X,Y,Z', got '" + t + "'");
      if (x < least || x > most)
        fail(option_ + " expects integers from " + std::to_string(least) + " to " + std::to_string(most) + ", got '" +
             t + "'");
      v[d] = static_cast<int>(x);
      p = end + 1;
    }
  }
  /// Prints "<program>: msg" and exits with status 2.
  [[noreturn]] void fail(const std::string& msg) const {
    std::fprintf(stderr, "%s: %s\n", program_, msg.c_str());
    std::exit(2);
  }

 private:
  double real_of(const std::string& v) const {
    char* end = nullptr;
    const double r = std::strtod(v.c_str(), &end);
    if (*end || v.empty()) fail(option_ + " expects a number, got '" + v + "'");
    return r;
  }

  const char* program_;
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string option_;
};

}  // namespace cellint::examples
