//===- store.cpp - key-value stores for rank rendezvous -------------------===//
//
// Part of strata. See store.h. The TCP protocol, one request and one answer
// at a time per connection (all integers little-endian):
//
//   request:  u8 op, u32 key length, key, u32 value length, value
//   SET (1):  answer u8 0
//   GET (2):  answer u8 found, u32 length, value
//   ADD (3):  value is an i64 delta; answer the new i64
//
// The server is one thread polling the listening socket, its clients and a
// wake-up pipe (for shutdown).
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::runtime {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
constexpr milliseconds kDefaultTimeout{30000};

milliseconds orDefault(milliseconds timeout) {
  return timeout.count() > 0 ? timeout : kDefaultTimeout;
}
} // namespace

StatusOr<std::string> Store::get(const std::string &key, milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  milliseconds pause{1};
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> value, tryGet(key));
    if (value)
      return std::move(*value);
    if (Clock::now() >= deadline)
      return Status(StatusCode::kDeadlineExceeded,
                    fmt::format("timed out after {} ms waiting for key '{}' in "
                                "{}",
                                timeout.count(), key, description()));
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(20));
  }
}

//===----------------------------------------------------------------------===//
// TCP store
//===----------------------------------------------------------------------===//

namespace {

enum : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };

void putU32(std::string &out, uint32_t v) {
  out.append(reinterpret_cast<const char *>(&v), 4);
}

std::string errnoText(int err) { return std::strerror(err); }

/// Writes all of `data` to `fd` (blocking socket).
bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// The server: keys in a map, one thread.
class TcpStoreServer {
public:
  ~TcpStoreServer() {
    if (thread_.joinable()) {
      char byte = 0;
      (void)!::write(wake_[1], &byte, 1);
      thread_.join();
    }
    for (int fd : {listen_, wake_[0], wake_[1]})
      if (fd >= 0)
        ::close(fd);
  }

  Status start(uint16_t port) {
    listen_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listen_ >= 0;
    if (!v6)
      listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_ < 0)
      return unavailable("TCP store: socket: {}", errnoText(errno));
    int one = 1, zero = 0;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc;
    if (v6) {
      ::setsockopt(listen_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      sockaddr_in6 addr{};
      addr.sin6_family = AF_INET6;
      addr.sin6_addr = in6addr_any;
      addr.sin6_port = htons(port);
      rc = ::bind(listen_, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
    } else {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_ANY);
      addr.sin_port = htons(port);
      rc = ::bind(listen_, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
    }
    if (rc != 0)
      return unavailable("TCP store: cannot listen on port {}: {}", port,
                         errnoText(errno));
    if (::listen(listen_, 128) != 0)
      return unavailable("TCP store: listen: {}", errnoText(errno));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    ::getsockname(listen_, reinterpret_cast<sockaddr *>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                      : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    if (::pipe2(wake_, O_CLOEXEC) != 0)
      return unavailable("TCP store: pipe: {}", errnoText(errno));
    thread_ = std::thread([this] { loop(); });
    return okStatus();
  }

  uint16_t port() const { return port_; }

private:
  struct Client {
    int fd;
    std::string input;
  };

  void loop() {
    std::vector<Client> clients;
    while (true) {
      std::vector<pollfd> fds;
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_, POLLIN, 0});
      for (const Client &c : clients)
        fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      if (fds[0].revents)
        break;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          clients.push_back({fd, {}});
        }
      }
      // Clients in fds[2..] are the first fds.size() - 2 of `clients`.
      std::vector<size_t> closed;
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents)
          continue;
        Client &c = clients[i - 2];
        char buf[65536];
        ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          if (n < 0 && errno == EINTR)
            continue;
          closed.push_back(i - 2);
          continue;
        }
        c.input.append(buf, static_cast<size_t>(n));
        if (!serve(c))
          closed.push_back(i - 2);
      }
      for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
        ::close(clients[*it].fd);
        clients.erase(clients.begin() + static_cast<ptrdiff_t>(*it));
      }
    }
    for (const Client &c : clients)
      ::close(c.fd);
  }

  /// Answers every complete request in `c.input`; false on a write error or
  /// a malformed request (the connection is closed).
  bool serve(Client &c) {
    size_t pos = 0;
    while (true) {
      const std::string &in = c.input;
      if (in.size() - pos < 5)
        break;
      uint8_t op = static_cast<uint8_t>(in[pos]);
      uint32_t key_len, value_len;
      std::memcpy(&key_len, in.data() + pos + 1, 4);
      if (in.size() - pos < 9ull + key_len)
        break;
      std::memcpy(&value_len, in.data() + pos + 5 + key_len, 4);
      size_t total = 9ull + key_len + value_len;
      if (in.size() - pos < total)
        break;
      std::string key = in.substr(pos + 5, key_len);
      std::string value = in.substr(pos + 9 + key_len, value_len);
      pos += total;
      std::string answer;
      if (op == kSet) {
        values_[key] = std::move(value);
        answer.push_back(0);
      } else if (op == kGet) {
        auto it = values_.find(key);
        answer.push_back(it != values_.end() ? 1 : 0);
        const std::string empty;
        const std::string &v = it != values_.end() ? it->second : empty;
        putU32(answer, static_cast<uint32_t>(v.size()));
        answer += v;
      } else if (op == kAdd && value.size() == 8) {
        int64_t delta;
        std::memcpy(&delta, value.data(), 8);
        int64_t now = 0;
        auto it = values_.find(key);
        if (it != values_.end())
          now = std::strtoll(it->second.c_str(), nullptr, 10);
        now += delta;
        values_[key] = std::to_string(now);
        answer.append(reinterpret_cast<const char *>(&now), 8);
      } else {
        return false;
      }
      if (!writeAll(c.fd, answer.data(), answer.size()))
        return false;
    }
    c.input.erase(0, pos);
    return true;
  }

  int listen_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::map<std::string, std::string> values_;
};

class TcpStoreImpl final : public TcpStore {
public:
  ~TcpStoreImpl() override {
    if (fd_ >= 0)
      ::close(fd_);
  }

  Status init(const TcpStoreOptions &options) {
    host_ = options.host.empty() ? "127.0.0.1" : options.host;
    timeout_ = orDefault(options.timeout);
    request_timeout_ = options.request_timeout.count() > 0
                           ? options.request_timeout
                           : milliseconds(5000);
    port_ = options.port;
    if (options.serve) {
      server_ = std::make_unique<TcpStoreServer>();
      STRATA_RETURN_IF_ERROR(server_->start(options.port));
      port_ = server_->port();
    }
    if (port_ == 0)
      return invalidArgument("TCP store: a client needs the server's port");
    return connect();
  }

  uint16_t port() const override { return port_; }
  std::string description() const override {
    return fmt::format("TCP store {}:{}", host_, port_);
  }
  int serverRank() const override { return 0; }
  std::string localAddress() const override { return local_address_; }

  Status set(const std::string &key, const std::string &value) override {
    std::string answer;
    STRATA_RETURN_IF_ERROR(request(kSet, key, value, 1, answer));
    return okStatus();
  }

  StatusOr<std::optional<std::string>> tryGet(const std::string &key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    STRATA_RETURN_IF_ERROR(sendRequest(kGet, key, {}));
    std::string head;
    STRATA_RETURN_IF_ERROR(readExactly(5, head));
    uint32_t len;
    std::memcpy(&len, head.data() + 1, 4);
    std::string value;
    STRATA_RETURN_IF_ERROR(readExactly(len, value));
    if (head[0] == 0)
      return std::optional<std::string>();
    return std::optional<std::string>(std::move(value));
  }

  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    std::string value(reinterpret_cast<const char *>(&delta), 8);
    std::string answer;
    STRATA_RETURN_IF_ERROR(request(kAdd, key, value, 8, answer));
    int64_t now;
    std::memcpy(&now, answer.data(), 8);
    return now;
  }

private:
  Status connect() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    std::string port = std::to_string(port_);
    int rc = ::getaddrinfo(host_.c_str(), port.c_str(), &hints, &found);
    if (rc != 0)
      return unavailable("{}: cannot resolve '{}': {}", description(), host_,
                         gai_strerror(rc));
    Clock::time_point deadline = Clock::now() + timeout_;
    std::string last_error;
    while (true) {
      for (addrinfo *ai = found; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                          ai->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          fd_ = fd;
          rememberLocalAddress();
          ::freeaddrinfo(found);
          return okStatus();
        }
        last_error = errnoText(errno);
        ::close(fd);
      }
      if (Clock::now() >= deadline)
        break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    ::freeaddrinfo(found);
    return unavailable("cannot reach the {} within {} ms: {}", description(),
                       timeout_.count(), last_error);
  }

  void rememberLocalAddress() {
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd_, reinterpret_cast<sockaddr *>(&local), &len) != 0)
      return;
    char text[INET6_ADDRSTRLEN] = {};
    if (local.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(&local)->sin_addr,
                  text, sizeof(text));
    } else if (local.ss_family == AF_INET6) {
      auto *a6 = reinterpret_cast<sockaddr_in6 *>(&local);
      if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
        ::inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], text, sizeof(text));
      else
        ::inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof(text));
    }
    local_address_ = text;
  }

  Status request(uint8_t op, const std::string &key, const std::string &value,
                 size_t answer_size, std::string &answer) {
    std::lock_guard<std::mutex> lock(mutex_);
    STRATA_RETURN_IF_ERROR(sendRequest(op, key, value));
    return readExactly(answer_size, answer);
  }

  Status broken(const std::string &what) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    broken_ = fmt::format("{}: {}", description(), what);
    return unavailable("{}", broken_);
  }

  Status sendRequest(uint8_t op, const std::string &key,
                     const std::string &value) {
    if (fd_ < 0)
      return unavailable("{}", broken_);
    std::string message(1, static_cast<char>(op));
    putU32(message, static_cast<uint32_t>(key.size()));
    message += key;
    putU32(message, static_cast<uint32_t>(value.size()));
    message += value;
    if (!writeAll(fd_, message.data(), message.size()))
      return broken(fmt::format("send failed: {}", errnoText(errno)));
    return okStatus();
  }

  /// Reads `size` bytes of an answer, waiting at most the timeout.
  Status readExactly(size_t size, std::string &out) {
    out.resize(size);
    size_t done = 0;
    Clock::time_point deadline = Clock::now() + request_timeout_;
    while (done < size) {
      auto left =
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        return broken(
            fmt::format("no answer within {} ms", request_timeout_.count()));
      pollfd p{fd_, POLLIN, 0};
      int rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR)
        continue;
      if (rc == 0)
        continue;
      ssize_t n = ::recv(fd_, out.data() + done, size - done, 0);
      if (n < 0 && errno == EINTR)
        continue;
      if (n == 0)
        return broken("connection closed by the server");
      if (n < 0)
        return broken(fmt::format("receive failed: {}", errnoText(errno)));
      done += static_cast<size_t>(n);
    }
    return okStatus();
  }

  std::string host_;
  uint16_t port_ = 0;
  milliseconds timeout_{};
  milliseconds request_timeout_{};
  std::unique_ptr<TcpStoreServer> server_;
  std::mutex mutex_;
  int fd_ = -1;
  std::string broken_;
  std::string local_address_;
};

} // namespace

StatusOr<std::unique_ptr<TcpStore>>
TcpStore::create(const TcpStoreOptions &options) {
  auto store = std::make_unique<TcpStoreImpl>();
  STRATA_RETURN_IF_ERROR(store->init(options));
  return std::unique_ptr<TcpStore>(std::move(store));
}

//===----------------------------------------------------------------------===//
// File store
//===----------------------------------------------------------------------===//

namespace {

/// Key -> file name: bytes outside [A-Za-z0-9._-] become %XX.
std::string fileNameOf(const std::string &key) {
  std::string out;
  for (unsigned char ch : key) {
    if (std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-')
      out.push_back(static_cast<char>(ch));
    else
      out += fmt::format("%{:02X}", ch);
  }
  return out;
}

class FileStore final : public Store {
public:
  FileStore(std::string directory, milliseconds timeout)
      : directory_(std::move(directory)), timeout_(timeout) {}

  std::string description() const override {
    return fmt::format("file store {}", directory_);
  }

  Status set(const std::string &key, const std::string &value) override {
    return writeAtomically(pathOf(key), value);
  }

  StatusOr<std::optional<std::string>> tryGet(const std::string &key) override {
    std::string path = pathOf(key);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT)
        return std::optional<std::string>();
      return unavailable("{}: cannot read {}: {}", description(), path,
                         errnoText(errno));
    }
    std::string value;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0)
      value.append(buf, static_cast<size_t>(n));
    int err = errno;
    ::close(fd);
    if (n < 0)
      return unavailable("{}: cannot read {}: {}", description(), path,
                         errnoText(err));
    return std::optional<std::string>(std::move(value));
  }

  StatusOr<int64_t> add(const std::string &key, int64_t delta) override {
    std::string lock_path = directory_ + "/.lock";
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return unavailable("{}: cannot open {}: {}", description(), lock_path,
                         errnoText(errno));
    Clock::time_point deadline = Clock::now() + timeout_;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (Clock::now() >= deadline) {
        ::close(fd);
        return Status(StatusCode::kDeadlineExceeded,
                      fmt::format("{}: lock {} not acquired within {} ms",
                                  description(), lock_path, timeout_.count()));
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    StatusOr<std::optional<std::string>> old = tryGet(key);
    Status status = old.status();
    int64_t now = 0;
    if (status.ok()) {
      if (*old)
        now = std::strtoll((*old)->c_str(), nullptr, 10);
      now += delta;
      status = set(key, std::to_string(now));
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    STRATA_RETURN_IF_ERROR(status);
    return now;
  }

private:
  std::string pathOf(const std::string &key) const {
    return directory_ + "/" + fileNameOf(key);
  }

  Status writeAtomically(const std::string &path, const std::string &value) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    std::string tmp =
        fmt::format("{}.tmp.{}.{}.{}", path, host, ::getpid(), counter_++);
    int fd =
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return unavailable("{}: cannot write {}: {}", description(), tmp,
                         errnoText(errno));
    const char *data = value.data();
    size_t left = value.size();
    while (left > 0) {
      ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return unavailable("{}: cannot write {}: {}", description(), tmp,
                           errnoText(err));
      }
      data += n;
      left -= static_cast<size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return unavailable("{}: cannot rename {} to {}: {}", description(), tmp,
                         path, errnoText(err));
    }
    return okStatus();
  }

  std::string directory_;
  milliseconds timeout_;
  std::atomic<uint64_t> counter_{0};
};

} // namespace

StatusOr<std::unique_ptr<Store>> createFileStore(const std::string &directory,
                                                 milliseconds timeout) {
  if (directory.empty())
    return invalidArgument("file store: empty directory name");
  // mkdir -p.
  for (size_t pos = 1; pos <= directory.size(); ++pos) {
    if (pos != directory.size() && directory[pos] != '/')
      continue;
    std::string prefix = directory.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return unavailable("file store: cannot create {}: {}", prefix,
                         errnoText(errno));
  }
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return unavailable("file store: {} is not a directory", directory);
  return std::unique_ptr<Store>(
      std::make_unique<FileStore>(directory, orDefault(timeout)));
}

} // namespace strata::runtime
