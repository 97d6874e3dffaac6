#include "exporter_server.hpp"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <ostream>
#include <thread>

namespace gpupool::cli {

namespace {

MHD_Result reply(MHD_Connection *c, unsigned int status, const std::string &body, const char *type) {
    MHD_Response *r = MHD_create_response_from_buffer(body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

}  // namespace

struct MetricsServer::Impl {
    ServerOptions opt;
    Compute compute;
    std::ostream &log;
    MHD_Daemon *daemon = nullptr;
    uint16_t port = 0;

    // body: the last recompute's text, swapped in whole; a scrape only
    // copies it, so it never waits for slurmctld or slurmdbd.
    std::mutex mu;
    std::string body;
    std::condition_variable wake;
    bool stopping = false;
    std::thread worker;

    Impl(const ServerOptions &o, Compute c, std::ostream &l) : opt(o), compute(std::move(c)), log(l) {}

    std::string scrape() {
        std::lock_guard<std::mutex> lock(mu);
        return body;
    }

    // The background thread: a recompute every interval (from the end of
    // the previous one), the lock held only to swap the text.
    void run() {
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
            if (wake.wait_for(lock, std::chrono::seconds(opt.interval), [this] { return stopping; })) return;
            lock.unlock();
            std::string b = compute();
            lock.lock();
            body = std::move(b);
        }
    }

    static MHD_Result handle(void *cls, MHD_Connection *c, const char *url, const char *method, const char * /*version*/,
                             const char * /*upload*/, size_t *upload_size, void ** /*con_cls*/) {
        auto *self = static_cast<Impl *>(cls);
        const char *text = "text/plain; charset=utf-8";
        if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
            *upload_size = 0;
            return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", text);
        }
        if (std::strcmp(url, "/metrics") == 0)
            return reply(c, MHD_HTTP_OK, self->scrape(), "text/plain; version=0.0.4; charset=utf-8");
        if (std::strcmp(url, "/") == 0) return reply(c, MHD_HTTP_OK, "gpupool exporter: metrics at /metrics\n", text);
        return reply(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n", text);
    }
};

MetricsServer::MetricsServer(const ServerOptions &opt, Compute compute, std::ostream &log)
    : impl_(new Impl(opt, std::move(compute), log)) {}

MetricsServer::~MetricsServer() { stop(); }

uint16_t MetricsServer::port() const { return impl_->port; }

std::string MetricsServer::scrape() { return impl_->scrape(); }

int MetricsServer::start() {
    Impl &m = *impl_;
    std::string host, port;
    if (!split_listen(m.opt.listen, host, port)) {
        m.log << "gpupool: --listen " << m.opt.listen << ": expected ADDR:PORT, [ADDR6]:PORT or :PORT\n";
        return 2;
    }
    addrinfo hints{}, *ai = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host.empty() ? "0.0.0.0" : host.c_str(), port.c_str(), &hints, &ai);
    if (gai != 0 || !ai) {
        m.log << "gpupool: --listen " << m.opt.listen << ": " << gai_strerror(gai) << "\n";
        return 1;
    }
    m.body = m.compute();  // the first read: says at once what is wrong, starts the wait histogram
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    m.daemon = MHD_start_daemon(flags, static_cast<uint16_t>(std::stoul(port)), nullptr, nullptr, &Impl::handle, &m,
                                MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, m.opt.connection_limit,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, m.opt.per_address_limit,
                                MHD_OPTION_CONNECTION_TIMEOUT, m.opt.connection_timeout, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!m.daemon) {
        m.log << "gpupool: cannot listen on " << m.opt.listen << " (in use, or not an address of this host?)\n";
        return 1;
    }
    const MHD_DaemonInfo *info = MHD_get_daemon_info(m.daemon, MHD_DAEMON_INFO_BIND_PORT);
    m.port = info ? info->port : 0;
    m.stopping = false;
    m.worker = std::thread([&m] { m.run(); });
    m.log << "gpupool exporter: listening on "
          << (host.empty() ? "*" : host.find(':') != std::string::npos ? "[" + host + "]" : host) << ":" << m.port
          << ", metrics at /metrics, recomputed every " << m.opt.interval << " s, at most "
          << m.opt.per_address_limit << " connections per address" << std::endl;
    return 0;
}

void MetricsServer::stop() {
    Impl &m = *impl_;
    if (m.daemon) MHD_stop_daemon(m.daemon);
    m.daemon = nullptr;
    if (m.worker.joinable()) {
        {
            std::lock_guard<std::mutex> lock(m.mu);
            m.stopping = true;
        }
        m.wake.notify_all();
        m.worker.join();  // after the recompute under way, if any
    }
}

bool split_listen(const std::string &s, std::string &host, std::string &port) {
    size_t colon;
    if (!s.empty() && s[0] == '[') {
        size_t close = s.find(']');
        if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') return false;
        host = s.substr(1, close - 1);
        colon = close + 1;
    } else {
        colon = s.rfind(':');
        if (colon == std::string::npos) return false;
        host = s.substr(0, colon);
        if (host.find(':') != std::string::npos) return false;  // IPv6 goes in brackets
    }
    port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
    return std::stoul(port) <= 65535;
}

}  // namespace gpupool::cli
