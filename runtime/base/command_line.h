//===- command_line.h - the runtime tools' command lines --------*- C++ -*-===//
//
// Part of strata. Every runtime tool declares its flags on a CLI11 app
// (Debian libcli11-dev, header-only) held by a CommandLine, which adds what
// all of them share: -h/--help (the tool's usage lines first, then the
// flags), --version (runtime/base/version.h), one error format, and for an
// unknown flag the closest known spelling:
//
//   strata-run: unknown flag '--max-token' (did you mean '--max-tokens'?)
//
// CLI11 reports parse errors as exceptions; they are caught in parse() and
// nowhere else, so no exception leaves a CommandLine.
//
// Thread-safety: none; one CommandLine per tool invocation.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_COMMAND_LINE_H
#define STRATA_RUNTIME_BASE_COMMAND_LINE_H

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace strata::runtime {

/// Edit distance (insertions, deletions, substitutions) between `a` and `b`.
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `name` by edit distance, or "" when none is close
/// enough to be a plausible typo (distance at most a third of the longer
/// name, at least 2). Ties go to the first candidate.
std::string closestName(std::string_view name,
                        const std::vector<std::string> &candidates);

/// A tool's command line: a CLI11 app plus strata's conventions.
class CommandLine {
public:
  /// `usage` is the synopsis printed first by --help (lines starting with
  /// "usage: <tool>"), `description` the paragraph after it.
  CommandLine(std::string tool, std::string usage, std::string description);

  /// The app to declare flags on. Options given twice keep the last value
  /// unless declared with addRepeated.
  CLI::App &app() { return app_; }

  /// A flag that may be given several times; every value is kept in order
  /// (`--prompt-ids 1,2 --prompt-ids 3`). Each occurrence takes one value.
  CLI::Option *addRepeated(const std::string &name,
                           std::vector<std::string> &values,
                           const std::string &description);

  /// Parses `args` (the command line without argv[0]). Returns std::nullopt
  /// when the tool should run; otherwise the exit code after printing: 0
  /// for --help (to `out`) and --version (to `out`), 2 for a usage error
  /// (to `err`: "<tool>: <message>", the usage lines, a hint to run
  /// --help).
  std::optional<int> parse(const std::vector<std::string> &args,
                           std::ostream &out, std::ostream &err);
  std::optional<int> parse(int argc, char **argv, std::ostream &out,
                           std::ostream &err);

  /// The values of every occurrence of the options in `names`, in command
  /// line order (for flags that feed one list, like --prompt-ids and
  /// --prompt-ids-file). Each entry is {option name, value}.
  std::vector<std::pair<std::string, std::string>>
  valuesInOrder(const std::vector<std::string> &names) const;

  /// The usage error "<tool>: <message>", the usage lines and the --help
  /// hint, to `err`;
  /// returns 2 (for tools whose checks after parse() fail).
  int usageError(std::ostream &err, std::string_view message) const;

  const std::string &tool() const { return tool_; }

private:
  std::string tool_;
  std::string usage_;
  CLI::App app_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_COMMAND_LINE_H
