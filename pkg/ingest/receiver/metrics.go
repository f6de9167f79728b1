package receiver

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flamehouse/flamehouse/pkg/ingest/convert"
)

type metrics struct {
	requests     *prometheus.CounterVec
	received     *prometheus.CounterVec
	samples      *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	requestBytes prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_ingest_requests_total", Help: "Export requests by protocol and outcome (ok, or the reason of the error).",
		}, []string{"protocol", "outcome"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_ingest_received_profiles_total", Help: "Profiles received, valid or not.",
		}, []string{"tenant"}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_ingest_written_samples_total", Help: "Profiling events (sample timestamps or values) committed.",
		}, []string{"tenant"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_ingest_rejected_profiles_total", Help: "Profiles rejected, by reason.",
		}, []string{"tenant", "reason"}),
		requestBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "flamehouse_ingest_request_bytes", Help: "Size of export requests (decompressed).",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.received, m.samples, m.rejected, m.requestBytes} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register receiver metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Received, Rejected and Written record the pipeline's counts
// (pipeline.Recorder).
func (m *metrics) Received(tenant string, profiles int) {
	m.received.WithLabelValues(tenant).Add(float64(profiles))
}

// Rejected counts profiles that were not stored, by reason.
func (m *metrics) Rejected(tenant string, reason convert.Reason, profiles int) {
	m.rejected.WithLabelValues(tenant, string(reason)).Add(float64(profiles))
}

// Written counts the events of a committed request.
func (m *metrics) Written(tenant string, _ int, events int64) {
	m.samples.WithLabelValues(tenant).Add(float64(events))
}
