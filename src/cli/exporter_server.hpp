// The exporter's HTTP side, apart from what it computes: libmicrohttpd
// serving /metrics from the text `compute` last returned, which a
// background thread calls every `interval` seconds.  A scrape only copies
// that text: it never waits for slurmctld or slurmdbd, and one address may
// hold only a few connections, so a client that opens many cannot keep
// Prometheus out.  No Slurm: unit-tested with a compute function of the
// test's own (a slow one).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

namespace gpupool::cli {

struct ServerOptions {
    std::string listen;               // ADDR:PORT, [ADDR6]:PORT or :PORT (every address)
    long interval = 5;                // seconds from the end of one recompute to the next
    unsigned connection_limit = 64;   // connections open at once, all clients
    unsigned per_address_limit = 8;   // connections open at once from one address
    unsigned connection_timeout = 10; // seconds an idle connection is kept
};

class MetricsServer {
public:
    // The exposition text of one recompute; may take long (slurmctld,
    // slurmdbd), never throws.
    using Compute = std::function<std::string()>;
    MetricsServer(const ServerOptions &opt, Compute compute, std::ostream &log);
    ~MetricsServer();
    MetricsServer(const MetricsServer &) = delete;
    MetricsServer &operator=(const MetricsServer &) = delete;

    // Computes once, then listens and starts the background recomputes:
    // 0, 1 when it cannot listen (said on the log) or 2 for a bad listen
    // address.
    int start();
    // The port it listens on (useful with port 0).
    uint16_t port() const;
    // Stops listening, then waits for the recompute under way, if any.
    void stop();
    // What a scrape of /metrics gets now.
    std::string scrape();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ADDR:PORT, [ADDR6]:PORT or :PORT -> host ("" for every address) and port.
bool split_listen(const std::string &s, std::string &host, std::string &port);

}  // namespace gpupool::cli
