#include "gateway/telemetry_metrics.h"

#include "gateway/telemetry_share.h"
#include "observe/prometheus_writer.h"

namespace switchyard::gateway {

using observe::appendHeader;
using observe::appendSample;

namespace {

void family(std::string& out, std::string_view name, std::string_view type,
            std::string_view help, double value) {
  appendHeader(out, name, type, help);
  appendSample(out, name, {}, value);
}

}  // namespace

void appendTelemetryMetrics(std::string& out, const fleet::TelemetryScraper& scraper,
                            const TelemetryShare* share, const health::HealthManager& health) {
  family(out, "switchyard_health_probes_total", "counter", "Health probes sent.",
         static_cast<double>(health.probesTotal()));
  appendHeader(out, "switchyard_health_probes_skipped_total", "counter",
               "Routine health probes not sent: the replica's requests proved it healthy "
               "(traffic), or over max_probes_per_second (budget).");
  appendSample(out, "switchyard_health_probes_skipped_total", {{"reason", "traffic"}},
               static_cast<double>(health.probesSkippedForTrafficTotal()));
  appendSample(out, "switchyard_health_probes_skipped_total", {{"reason", "budget"}},
               static_cast<double>(health.probesDeferredByBudgetTotal()));
  family(out, "switchyard_telemetry_scrapes_deferred_total", "counter",
         "Due scrapes that waited for the max_scrapes_per_second budget.",
         static_cast<double>(scraper.deferredTotal()));
  family(out, "switchyard_telemetry_replicas", "gauge", "Replicas whose signals this gateway uses.",
         static_cast<double>(scraper.replicaCount()));
  family(out, "switchyard_telemetry_owned_replicas", "gauge",
         "Replicas this gateway scrapes itself (its shard among the live gateways).",
         static_cast<double>(scraper.ownedCount()));
  family(out, "switchyard_telemetry_signal_age_p99_seconds", "gauge",
         "99th percentile over replicas of the age of their last good signal (sampled each "
         "second; +Inf while some replica was never read).",
         scraper.signalAgeP99Seconds());
  family(out, "switchyard_telemetry_scrape_latency_p99_seconds", "gauge",
         "99th percentile of this gateway's scrape latencies over the last second (upper bound: "
         "a power of two of a millisecond).",
         scraper.scrapeLatencyP99Seconds());
  family(out, "switchyard_telemetry_fresh_ratio", "gauge",
         "Share of replicas whose signals are usable (read within three intervals).",
         scraper.freshFraction());
  if (!share) return;
  family(out, "switchyard_telemetry_share_rounds_total", "counter",
         "Round trips that shared scraped signals with the other gateways.",
         static_cast<double>(share->exchangesTotal()));
  family(out, "switchyard_telemetry_share_failures_total", "counter",
         "Sharing round trips that shared state did not answer in time.",
         static_cast<double>(share->exchangeFailuresTotal()));
  family(out, "switchyard_telemetry_shared_records_sent_total", "counter",
         "Scrape records this gateway shared.", static_cast<double>(share->recordsSentTotal()));
  family(out, "switchyard_telemetry_shared_records_received_total", "counter",
         "Scrape records received from the other gateways.",
         static_cast<double>(share->recordsReceivedTotal()));
  family(out, "switchyard_telemetry_shared_records_malformed_total", "counter",
         "Received scrape records that were malformed and skipped.",
         static_cast<double>(share->malformedRecordsTotal()));
  family(out, "switchyard_telemetry_live_gateways", "gauge",
         "Gateways sharing the scraping (0: shared state away or one gateway).",
         static_cast<double>(share->liveGateways()));
}

}  // namespace switchyard::gateway
