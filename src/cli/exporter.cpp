#include "exporter.hpp"

#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>
#include <ostream>

#include "metrics.hpp"

namespace gpupool::cli {

namespace {

using Clock = std::chrono::steady_clock;

class Exporter {
public:
    Exporter(const ExporterOptions &opt, std::ostream &log) : opt_(opt), log_(log) {}

    // The metrics, recomputed first when the last recompute is at least
    // min_interval old.  One at a time: a scrape arriving during a
    // recompute waits for it and gets its result.
    std::string scrape() {
        std::lock_guard<std::mutex> lock(mu_);
        const Clock::time_point now = Clock::now();
        if (!have_ || now - last_ >= std::chrono::seconds(opt_.min_interval)) recompute(now);
        return body_;
    }

private:
    void recompute(Clock::time_point now) {
        have_ = true;
        last_ = now;
        ++recomputes_;
        std::string cluster, problem, notes;
        PluginPasses passes;
        try {
            Live live;
            load_live(opt_.live, live);
            cluster = cluster_metrics(live.engine, live.view, waits_);
            passes = live.view.passes;
            if (!passes.available) notes = "pass statistics unavailable (" + passes.error + ")";
            // The plugins' event log lies beside the usage history.
            const std::string &h = live.view.history.path;
            size_t slash = h.rfind('/');
            if (h != "none") events_path_ = (slash == std::string::npos ? "." : h.substr(0, slash)) + "/gpupool_events.jsonl";
            if (!live.view.history.available)
                notes += std::string(notes.empty() ? "" : "; ") + "usage history unavailable (" + live.view.history.error + ")";
            for (const std::string &n : live.view.notes) notes += (notes.empty() ? "" : "; ") + n;
            for (const std::string &w : live.engine.warnings()) notes += (notes.empty() ? "" : "; ") + w;
        } catch (const std::exception &e) {
            problem = e.what();
            ++errors_;
        }
        if (!events_path_.empty()) {
            events_.read(events_path_);
            if (!events_.error().empty()) notes += (notes.empty() ? "" : "; ") + events_.error();
        }
        const double took = std::chrono::duration<double>(Clock::now() - now).count();
        // Said when it changes, not at every recompute.
        if (problem != last_problem_)
            log_ << "gpupool exporter: " << (problem.empty() ? "cluster read again" : problem) << std::endl;
        if (problem.empty() && notes != last_notes_ && !notes.empty()) log_ << "gpupool exporter: note: " << notes << std::endl;
        last_problem_ = problem;
        if (problem.empty()) last_notes_ = notes;

        ExporterStats st;
        st.up = problem.empty();
        st.recomputes = recomputes_;
        st.errors = errors_;
        st.duration = took;
        st.time = static_cast<int64_t>(std::time(nullptr));
        // The cluster's gauges only from a recompute that read it: none
        // rather than stale ones.
        std::string b = exporter_metrics(st) + cluster + waits_.text() + events_.text() + plugin_metrics(passes);
        body_ = std::move(b);
    }

    const ExporterOptions &opt_;
    std::ostream &log_;
    std::mutex mu_;
    bool have_ = false;
    Clock::time_point last_;
    std::string body_;
    WaitHistogram waits_;
    PreemptionLog events_;
    std::string events_path_;
    uint64_t recomputes_ = 0, errors_ = 0;
    std::string last_problem_, last_notes_;
};

MHD_Result reply(MHD_Connection *c, unsigned int status, const std::string &body, const char *type) {
    MHD_Response *r = MHD_create_response_from_buffer(body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

MHD_Result handle(void *cls, MHD_Connection *c, const char *url, const char *method, const char * /*version*/,
                  const char * /*upload*/, size_t *upload_size, void ** /*con_cls*/) {
    auto *ex = static_cast<Exporter *>(cls);
    const char *text = "text/plain; charset=utf-8";
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        *upload_size = 0;
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n", text);
    }
    if (std::strcmp(url, "/metrics") == 0)
        return reply(c, MHD_HTTP_OK, ex->scrape(), "text/plain; version=0.0.4; charset=utf-8");
    if (std::strcmp(url, "/") == 0) return reply(c, MHD_HTTP_OK, "gpupool exporter: metrics at /metrics\n", text);
    return reply(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n", text);
}

// ADDR:PORT, [ADDR6]:PORT or :PORT -> host ("" for every address) and port.
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

}  // namespace

int run_exporter(const ExporterOptions &opt, std::ostream &log) {
    std::string host, port;
    if (!split_listen(opt.listen, host, port)) {
        log << "gpupool: --listen " << opt.listen << ": expected ADDR:PORT, [ADDR6]:PORT or :PORT\n";
        return 2;
    }
    addrinfo hints{}, *ai = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host.empty() ? "0.0.0.0" : host.c_str(), port.c_str(), &hints, &ai);
    if (gai != 0 || !ai) {
        log << "gpupool: --listen " << opt.listen << ": " << gai_strerror(gai) << "\n";
        return 1;
    }

    // SIGINT and SIGTERM are taken by sigwait below, in no other thread
    // (the server's thread inherits this mask).
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Exporter ex(opt, log);
    ex.scrape();  // the first read: says at once what is wrong, starts the wait histogram
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    MHD_Daemon *d = MHD_start_daemon(flags, static_cast<uint16_t>(std::stoul(port)), nullptr, nullptr, &handle, &ex,
                                     MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, 64u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        log << "gpupool: cannot listen on " << opt.listen << " (in use, or not an address of this host?)\n";
        return 1;
    }
    const MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    log << "gpupool exporter: listening on "
        << (host.empty() ? "*" : host.find(':') != std::string::npos ? "[" + host + "]" : host) << ":" << (info ? info->port : 0)
        << ", metrics at /metrics, recomputed at most every " << opt.min_interval << " s" << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    log << "gpupool exporter: signal " << sig << ", stopping" << std::endl;
    MHD_stop_daemon(d);
    return 0;
}

}  // namespace gpupool::cli
