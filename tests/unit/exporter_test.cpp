// The exporter's HTTP side: a scrape never waits for a
// recompute, and one client holding many connections does not keep
// another from scraping.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "exporter_server.hpp"

namespace gpupool::cli {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A TCP connection to 127.0.0.1:port from `source` (127.0.0.x), or -1.
int connect_from(const char *source, uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, source, &src.sin_addr);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr *>(&src), sizeof src) != 0 ||
        connect(fd, reinterpret_cast<sockaddr *>(&dst), sizeof dst) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// GET /metrics from `source` within `deadline`: the status line and body,
// or what went wrong ("timeout ...").
std::string scrape_within(const char *source, uint16_t port, milliseconds deadline) {
    const Clock::time_point end = Clock::now() + deadline;
    int fd = connect_from(source, port);
    if (fd < 0) return "connect failed";
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
        close(fd);
        return "send failed";
    }
    std::string got;
    char buf[4096];
    for (;;) {
        auto left = std::chrono::duration_cast<milliseconds>(end - Clock::now()).count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, int(left)) <= 0) {
            close(fd);
            return "timeout after " + std::to_string(deadline.count()) + " ms (got " + std::to_string(got.size()) +
                   " bytes)";
        }
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, size_t(n));
    }
    close(fd);
    return got;
}

bool answered(const std::string &reply, const std::string &body) {
    return reply.rfind("HTTP/1.1 200", 0) == 0 && reply.find("\r\n\r\n" + body) != std::string::npos;
}

TEST(ExporterServer, ScrapeIsAnsweredWhileARecomputeIsSlow) {
    std::atomic<int> computes{0};
    // The first recompute is quick; every later one takes 2 s (slurmctld
    // or slurmdbd slow to answer).
    auto compute = [&computes] {
        int n = computes++;
        if (n > 0) std::this_thread::sleep_for(milliseconds(2000));
        return "gen " + std::to_string(n) + "\n";
    };
    ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.interval = 1;
    std::ostringstream log;
    MetricsServer server(so, compute, log);
    ASSERT_EQ(server.start(), 0) << log.str();
    // Past the interval: a recompute is due or under way.
    std::this_thread::sleep_for(milliseconds(1300));
    const Clock::time_point t0 = Clock::now();
    const std::string reply = scrape_within("127.0.0.1", server.port(), milliseconds(1000));
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_TRUE(answered(reply, "gen ")) << reply;
    EXPECT_LT(took, 0.5) << "a scrape waited for the recompute";
    server.stop();
}

TEST(ExporterServer, OneClientsConnectionsDoNotBlockAnothersScrape) {
    ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.interval = 5;
    std::ostringstream log;
    MetricsServer server(so, [] { return std::string("gpupool_up 1\n"); }, log);
    ASSERT_EQ(server.start(), 0) << log.str();
    // Client 127.0.0.1 opens more connections than the server takes in
    // all and sends nothing on them.
    std::vector<int> held;
    for (unsigned i = 0; i < so.connection_limit + 16; ++i) {
        int fd = connect_from("127.0.0.1", server.port());
        if (fd >= 0) held.push_back(fd);
    }
    EXPECT_EQ(held.size(), so.connection_limit + 16);
    std::this_thread::sleep_for(milliseconds(300));
    // Prometheus, from 127.0.0.2, is still answered.
    const std::string reply = scrape_within("127.0.0.2", server.port(), milliseconds(2000));
    EXPECT_TRUE(answered(reply, "gpupool_up 1")) << reply;
    for (int fd : held) close(fd);
    server.stop();
}

}  // namespace
}  // namespace gpupool::cli
