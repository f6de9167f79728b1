package debuginfod

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	fetched      *prometheus.CounterVec
	hostFound    *prometheus.CounterVec
	bytes        prometheus.Counter
	failed       *prometheus.CounterVec
	negativeHits prometheus.Counter
	queue        prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, queueLength func() float64) (*metrics, error) {
	m := &metrics{
		fetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_symbols_debuginfod_fetched_total",
			Help: "Files fetched from debuginfod and stored, by artifact (debuginfo, executable: a debug file's executable is fetched for its segments).",
		}, []string{"artifact"}),
		hostFound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_symbols_host_found_total",
			Help: "Files found on this host by build id (debug dirs, the mapping's path) and stored, by artifact (debuginfo, executable).",
		}, []string{"artifact"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flamehouse_symbols_debuginfod_fetched_bytes_total", Help: "Bytes of the files fetched from debuginfod and stored.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_symbols_debuginfod_failed_total",
			Help: "Build ids not fetched, by reason (not_found, http_status, timeout, network, too_large, build_id_mismatch, bad_file, store, queue_full).",
		}, []string{"reason"}),
		negativeHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flamehouse_symbols_debuginfod_negative_cache_hits_total",
			Help: "Build ids seen at ingest and not asked for because a recent fetch found nothing.",
		}),
		queue: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flamehouse_symbols_debuginfod_queue_length", Help: "Build ids queued for debuginfod or being fetched.",
		}, queueLength),
	}
	for _, a := range artifacts {
		m.fetched.WithLabelValues(a)
		m.hostFound.WithLabelValues(a)
	}
	for _, r := range []string{ReasonNotFound, ReasonHTTP, ReasonTimeout, ReasonNetwork, ReasonTooLarge, ReasonMismatch, ReasonBadFile, ReasonStore, ReasonQueueFull} {
		m.failed.WithLabelValues(r) // every reason reads 0 before its first failure
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.fetched, m.hostFound, m.bytes, m.failed, m.negativeHits, m.queue} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register debuginfod metrics: %w", err)
			}
		}
	}
	return m, nil
}
