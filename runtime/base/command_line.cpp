//===- command_line.cpp - the runtime tools' command lines ----------------===//
//
// Part of strata. See command_line.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/command_line.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "runtime/base/version.h"

namespace strata::runtime {

namespace {

/// CLI11's help with the tool's usage lines first: the top-level app prints
/// `usage`, then its description; subcommands keep CLI11's layout.
class UsageFirstFormatter : public CLI::Formatter {
public:
  explicit UsageFirstFormatter(std::string usage) : usage_(std::move(usage)) {}

  std::string make_description(const CLI::App *app) const override {
    if (app->get_parent())
      return CLI::Formatter::make_description(app);
    std::string text = usage_;
    if (!app->get_description().empty())
      text += "\n" + app->get_description() + "\n";
    return text;
  }

  std::string make_usage(const CLI::App *app, std::string name) const override {
    if (app->get_parent())
      return CLI::Formatter::make_usage(app, std::move(name));
    return "";
  }

private:
  std::string usage_;
};

/// Every spelling of every option of `app` and of its selected subcommands
/// ("--max-tokens", "-h"), and the names of its subcommands.
void collectNames(const CLI::App &app, std::vector<std::string> &flags,
                  std::vector<std::string> &commands) {
  for (const CLI::Option *option :
       app.get_options([](const CLI::Option *) { return true; })) {
    for (const std::string &name : option->get_lnames())
      flags.push_back("--" + name);
    for (const std::string &name : option->get_snames())
      flags.push_back("-" + name);
  }
  for (const CLI::App *sub :
       app.get_subcommands([](const CLI::App *) { return true; })) {
    commands.push_back(sub->get_name());
    if (sub->parsed())
      collectNames(*sub, flags, commands);
  }
}

} // namespace

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closestName(std::string_view name,
                        const std::vector<std::string> &candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string &candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  size_t longer = std::max(name.size(), best.size());
  if (best.empty() || best_distance > std::max<size_t>(2, longer / 3))
    return "";
  return best;
}

CommandLine::CommandLine(std::string tool, std::string usage,
                         std::string description)
    : tool_(std::move(tool)), usage_(std::move(usage)),
      app_(std::move(description), tool_) {
  app_.formatter(std::make_shared<UsageFirstFormatter>(usage_));
  app_.set_version_flag("--version", versionText(tool_),
                        "Print the strata version and git commit and exit");
  // Unknown flags are left over instead of thrown, so that parse() can name
  // them and suggest a spelling.
  app_.allow_extras();
  // As the hand-written parsers did: a flag given twice keeps its last value.
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

CLI::Option *CommandLine::addRepeated(const std::string &name,
                                      std::vector<std::string> &values,
                                      const std::string &description) {
  return app_.add_option(name, values, description)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

std::optional<int> CommandLine::parse(const std::vector<std::string> &args,
                                      std::ostream &out, std::ostream &err) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp &) {
    out << app_.help();
    return 0;
  } catch (const CLI::CallForAllHelp &) {
    out << app_.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion &version) {
    out << version.what();
    return 0;
  } catch (const CLI::ParseError &error) {
    return usageError(err, error.what());
  }
  std::vector<std::string> extras = app_.remaining(/*recurse=*/true);
  if (extras.empty())
    return std::nullopt;
  std::vector<std::string> flags, commands;
  collectNames(app_, flags, commands);
  const std::string &extra = extras.front();
  bool is_flag = extra.size() > 1 && extra[0] == '-';
  bool is_command =
      !is_flag && !commands.empty() && app_.get_subcommands().empty();
  std::string name = is_flag ? extra.substr(0, extra.find('=')) : extra;
  std::string suggestion = is_flag || is_command
                               ? closestName(name, is_flag ? flags : commands)
                               : "";
  std::string message = fmt::format("{} '{}'",
                                    is_flag      ? "unknown flag"
                                    : is_command ? "unknown command"
                                                 : "unexpected argument",
                                    name);
  if (!suggestion.empty())
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  return usageError(err, message);
}

std::optional<int> CommandLine::parse(int argc, char **argv, std::ostream &out,
                                      std::ostream &err) {
  return parse(std::vector<std::string>(argv + std::min(argc, 1), argv + argc),
               out, err);
}

std::vector<std::pair<std::string, std::string>>
CommandLine::valuesInOrder(const std::vector<std::string> &names) const {
  std::vector<std::pair<std::string, std::string>> values;
  std::map<const CLI::Option *, size_t> seen;
  for (const CLI::Option *option : app_.parse_order()) {
    std::string name = option->get_name();
    if (std::find(names.begin(), names.end(), name) == names.end())
      continue;
    size_t index = seen[option]++;
    const std::vector<std::string> &results = option->results();
    if (index < results.size())
      values.emplace_back(name, results[index]);
  }
  return values;
}

int CommandLine::usageError(std::ostream &err, std::string_view message) const {
  err << fmt::format("{}: {}\n{}run '{} --help' for every flag\n", tool_,
                     message, usage_, tool_);
  return 2;
}

} // namespace strata::runtime
