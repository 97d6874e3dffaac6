#include "exporter.hpp"

#include <signal.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <ostream>

#include "exporter_server.hpp"
#include "metrics.hpp"

namespace gpupool::cli {

namespace {

using Clock = std::chrono::steady_clock;

class Exporter {
public:
    Exporter(const ExporterOptions &opt, std::ostream &log) : opt_(opt), log_(log) {}

    // One recompute: the exposition text.
    std::string compute() {
        recompute(Clock::now());
        return body_;
    }

private:
    void recompute(Clock::time_point now) {
        ++recomputes_;
        std::string cluster, problem, notes;
        PluginPasses passes;
        try {
            Live live;
            load_live(opt_.live, live, &first_submits_);
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
    std::string body_;
    WaitHistogram waits_;
    FirstSubmits first_submits_;  // slurmdbd asked only about what changed
    PreemptionLog events_;
    std::string events_path_;
    uint64_t recomputes_ = 0, errors_ = 0;
    std::string last_problem_, last_notes_;
};

}  // namespace

int run_exporter(const ExporterOptions &opt, std::ostream &log) {
    // SIGINT and SIGTERM are taken by sigwait below, in no other thread
    // (the server's threads inherit this mask).
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    signal(SIGPIPE, SIG_IGN);

    Exporter ex(opt, log);
    ServerOptions so;
    so.listen = opt.listen;
    so.interval = opt.min_interval;
    MetricsServer server(so, [&ex] { return ex.compute(); }, log);
    if (int rc = server.start()) return rc;
    int sig = 0;
    sigwait(&stop, &sig);
    log << "gpupool exporter: signal " << sig << ", stopping" << std::endl;
    server.stop();
    return 0;
}

}  // namespace gpupool::cli
