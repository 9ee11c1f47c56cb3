//===- rank_launcher.cpp - start and join the processes of a run ----------===//
//
// Part of strata. See rank_launcher.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace strata::runtime {

namespace {

/// "exited with status 3" / "was killed by signal 9".
std::string describeExit(int status) {
  if (WIFEXITED(status))
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("stopped with wait status {}", status);
}

/// In the child: replaces the process by rank `rank` of the run.
[[noreturn]] void execRank(const std::vector<std::string> &args, int rank,
                           const std::string &store) {
  if (rank != 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDOUT_FILENO);
  }
  std::vector<std::string> full = {"strata-rank"};
  full.insert(full.end(), args.begin(), args.end());
  for (const std::string &extra :
       {std::string("--rank"), std::to_string(rank), std::string("--store"),
        store})
    full.push_back(extra);
  std::vector<char *> argv;
  for (std::string &a : full)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  fmt::print(stderr, "rank {}: cannot start /proc/self/exe: {}\n", rank,
             std::strerror(errno));
  _exit(127);
}

} // namespace

StatusOr<std::unique_ptr<Store>> openRankStore(const std::string &spec,
                                               int rank) {
  if (spec.rfind("file:", 0) == 0)
    return createFileStore(spec.substr(5));
  if (spec.rfind("tcp:", 0) == 0) {
    std::string rest = spec.substr(4);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon + 1 == rest.size())
      return invalidArgument("--store '{}': expected tcp:HOST:PORT", spec);
    char *end = nullptr;
    unsigned long port = std::strtoul(rest.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
      return invalidArgument("--store '{}': bad port", spec);
    TcpStoreOptions options;
    options.host = rest.substr(0, colon);
    options.port = static_cast<uint16_t>(port);
    options.serve = rank == 0;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<TcpStore> store,
                            TcpStore::create(options));
    return std::unique_ptr<Store>(std::move(store));
  }
  return invalidArgument("--store '{}': expected file:DIR or tcp:HOST:PORT",
                         spec);
}

namespace {

/// The ranks a launcher waits for, for forwardSignal (set before the
/// handlers are installed, cleared after they are restored).
constexpr int kMaxForwarded = 1024;
pid_t forwarded_pids[kMaxForwarded];
volatile sig_atomic_t forwarded_count = 0;

/// SIGINT / SIGTERM to the launcher go to every rank (which then exit and
/// are reaped as usual).
void forwardSignal(int signal_number) {
  for (sig_atomic_t i = 0; i < forwarded_count; ++i)
    kill(forwarded_pids[i], signal_number);
}

} // namespace

Status launchRanks(const std::vector<std::string> &args, int world_size) {
  std::error_code error;
  std::filesystem::path dir = std::filesystem::temp_directory_path(error);
  std::string pattern = (dir / "strata-ranks-XXXXXX").string();
  if (error || !mkdtemp(pattern.data()))
    return unavailable("cannot create a store folder: {}",
                       std::strerror(errno));
  RankLaunch launch;
  launch.count = launch.world_size = world_size;
  launch.store = "file:" + pattern;
  Status result = launchRanks(args, launch);
  std::filesystem::remove_all(pattern, error);
  return result;
}

Status launchRanks(const std::vector<std::string> &args,
                   const RankLaunch &launch) {
  if (launch.count > kMaxForwarded)
    return invalidArgument("{} ranks: one launcher starts at most {}",
                           launch.count, kMaxForwarded);
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int i = 0; i < launch.count; ++i) {
    int rank = launch.first_rank + i;
    pid_t pid = fork();
    if (pid < 0) {
      for (pid_t started : pids)
        kill(started, SIGTERM);
      return unavailable("fork of rank {}: {}", rank, std::strerror(errno));
    }
    if (pid == 0)
      execRank(args, rank, launch.store);
    pids.push_back(pid);
  }
  for (size_t i = 0; i < pids.size(); ++i)
    forwarded_pids[i] = pids[i];
  forwarded_count = static_cast<sig_atomic_t>(pids.size());
  struct sigaction forward = {}, old_int = {}, old_term = {};
  forward.sa_handler = forwardSignal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  Status result = okStatus();
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0 && errno == EINTR) {
      ++left; // a forwarded signal: keep waiting for the ranks
      continue;
    }
    if (pid < 0)
      break;
    auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end() || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
      continue;
    if (result.ok()) {
      result = aborted("rank {} of {} {}",
                       launch.first_rank + (it - pids.begin()),
                       launch.world_size, describeExit(status));
      for (pid_t other : pids)
        if (other != pid)
          kill(other, SIGTERM);
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  forwarded_count = 0;
  return result;
}

std::vector<std::string> withoutNodeFlags(const std::vector<std::string> &args) {
  static const char *const kNodeFlags[] = {"--nnodes", "--node-rank",
                                           "--master-addr", "--master-port"};
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    bool node_flag = false, inline_value = false;
    for (const char *flag : kNodeFlags) {
      std::string name(flag);
      node_flag |= args[i] == name;
      inline_value |= args[i].rfind(name + "=", 0) == 0;
    }
    if (inline_value)
      continue;
    if (node_flag) {
      ++i; // and its value
      continue;
    }
    kept.push_back(args[i]);
  }
  return kept;
}

} // namespace strata::runtime
