//===- store_test.cpp - tests of the TCP and file stores ------------------===//
//
// Part of strata. Both stores in one process: set/get/add, waiting for a key
// set later by another client, the timeout message, atomic counters under
// concurrent clients, and the TCP errors (nothing listening, server gone).
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/store.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

using std::chrono::milliseconds;

std::string tempDir() {
  char pattern[] = "/tmp/strata-store-XXXXXX";
  char *dir = mkdtemp(pattern);
  return dir ? std::string(dir) : std::string("/tmp");
}

/// A port nothing listens on (bound once, then released).
uint16_t unusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Checks set, get, overwrite, a missing key, binary values and add.
void checkBasics(Store &store) {
  ASSERT_TRUE(store.set("a/b", "one").ok());
  auto value = store.tryGet("a/b");
  ASSERT_TRUE(value.ok()) << value.status().toString();
  ASSERT_TRUE(value->has_value());
  EXPECT_EQ(**value, "one");
  ASSERT_TRUE(store.set("a/b", std::string("t\0o", 3)).ok());
  EXPECT_EQ(**store.tryGet("a/b"), std::string("t\0o", 3));
  auto missing = store.tryGet("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_EQ(*store.add("n", 5), 5);
  EXPECT_EQ(*store.add("n", -2), 3);
  EXPECT_EQ(**store.tryGet("n"), "3");
  auto got = store.get("a/b", milliseconds(10));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, std::string("t\0o", 3));
}

// Tests the TCP store's operations through the serving process's client.
TEST(TcpStore, SetGetAdd) {
  TcpStoreOptions options;
  options.serve = true;
  auto store = TcpStore::create(options);
  ASSERT_TRUE(store.ok()) << store.status().toString();
  EXPECT_NE((*store)->port(), 0);
  EXPECT_EQ((*store)->serverRank(), 0);
  EXPECT_EQ((*store)->localAddress(), "127.0.0.1");
  checkBasics(**store);
}

// Tests that a second client sees the first's keys, that get waits for a key
// set later, and that counters are atomic across clients.
TEST(TcpStore, ClientsShareKeysAndCounters) {
  TcpStoreOptions server_options;
  server_options.serve = true;
  auto server = TcpStore::create(server_options);
  ASSERT_TRUE(server.ok()) << server.status().toString();
  TcpStoreOptions client_options;
  client_options.port = (*server)->port();
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < 4; ++i) {
    auto client = TcpStore::create(client_options);
    ASSERT_TRUE(client.ok()) << client.status().toString();
    clients.push_back(std::move(*client));
  }
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(50));
    (void)clients[1]->set("late", "here");
  });
  auto value = clients[0]->get("late", milliseconds(5000));
  later.join();
  ASSERT_TRUE(value.ok()) << value.status().toString();
  EXPECT_EQ(*value, "here");

  std::vector<std::thread> adders;
  for (auto &client : clients)
    adders.emplace_back([&client] {
      for (int i = 0; i < 100; ++i)
        (void)client->add("count", 1);
    });
  for (auto &t : adders)
    t.join();
  EXPECT_EQ(**(*server)->tryGet("count"), "400");
}

// Tests the message of a get that times out.
TEST(TcpStore, GetTimesOutNamingTheKey) {
  TcpStoreOptions options;
  options.serve = true;
  auto store = TcpStore::create(options);
  ASSERT_TRUE(store.ok());
  auto value = (*store)->get("never", milliseconds(30));
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(value.status().message(),
            fmt::format("timed out after 30 ms waiting for key 'never' in TCP "
                        "store 127.0.0.1:{}",
                        (*store)->port()));
}

// Tests that a client gives up on a server that never comes.
TEST(TcpStore, UnreachableServerIsUnavailable) {
  TcpStoreOptions options;
  options.port = unusedPort();
  options.timeout = milliseconds(200);
  auto store = TcpStore::create(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.status().message(),
            fmt::format("cannot reach the TCP store 127.0.0.1:{} within 200 "
                        "ms: Connection refused",
                        options.port));
}

// Tests that a client whose server went away fails its requests at once.
TEST(TcpStore, ServerGoneIsUnavailable) {
  TcpStoreOptions server_options;
  server_options.serve = true;
  auto server = TcpStore::create(server_options);
  ASSERT_TRUE(server.ok());
  TcpStoreOptions client_options;
  client_options.port = (*server)->port();
  auto client = TcpStore::create(client_options);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->set("k", "v").ok());
  server->reset();
  Status status = (*client)->set("k", "w");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            fmt::format("TCP store 127.0.0.1:{}: connection closed by the "
                        "server",
                        client_options.port));
  // Later calls keep failing with the same message.
  EXPECT_EQ((*client)->tryGet("k").status(), status);
}

// Tests the file store's operations, keys with '/' and '%'.
TEST(FileStore, SetGetAdd) {
  std::string dir = tempDir() + "/nested/store";
  auto store = createFileStore(dir);
  ASSERT_TRUE(store.ok()) << store.status().toString();
  checkBasics(**store);
  ASSERT_TRUE((*store)->set("x%/y", "1").ok());
  EXPECT_EQ(access((dir + "/x%25%2Fy").c_str(), F_OK), 0);
  EXPECT_EQ((*store)->description(), "file store " + dir);
  EXPECT_EQ((*store)->serverRank(), -1);
}

// Tests that two stores on one directory share keys and that add is atomic
// across them.
TEST(FileStore, StoresOnOneDirectoryShareCounters) {
  std::string dir = tempDir();
  auto a = createFileStore(dir), b = createFileStore(dir);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->set("k", "v").ok());
  EXPECT_EQ(*(*b)->get("k", milliseconds(100)), "v");
  std::thread ta([&] {
    for (int i = 0; i < 200; ++i)
      (void)(*a)->add("c", 1);
  });
  std::thread tb([&] {
    for (int i = 0; i < 200; ++i)
      (void)(*b)->add("c", 2);
  });
  ta.join();
  tb.join();
  EXPECT_EQ(**(*a)->tryGet("c"), "600");
}

// Tests that a path that is a file cannot be a store.
TEST(FileStore, RejectsAFile) {
  auto store = createFileStore("/etc/hostname");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
}

} // namespace
} // namespace strata::runtime
