package writer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	queue        prometheus.Gauge
	refused      prometheus.Counter
	written      *prometheus.CounterVec
	writeErrors  prometheus.Counter
	writeSeconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flamehouse_ingest_queue_samples", Help: "Sample rows accepted and waiting to be written.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flamehouse_ingest_queue_full_total", Help: "Requests refused because the write queue was full.",
		}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flamehouse_ingest_written_rows_total", Help: "Rows written to ClickHouse, by table.",
		}, []string{"table"}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flamehouse_ingest_write_errors_total", Help: "Failed write attempts (each is retried while requests can wait).",
		}),
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "flamehouse_ingest_batch_write_seconds", Help: "Time to write one batch of rows to ClickHouse.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.queue, m.refused, m.written, m.writeErrors, m.writeSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register writer metrics: %w", err)
		}
	}
	return m, nil
}
