package query

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/stretchr/testify/require"

	"github.com/flamehouse/flamehouse/pkg/schema"
)

// probeConn answers the probe's catalog query: every table and column
// there, once release is closed; it counts the reads and fails them while
// fail is set.
type probeConn struct {
	clickhouse.Conn
	reads   atomic.Int32
	release chan struct{}
	fail    atomic.Bool
}

type probeRow struct {
	driver.Row
	err error
}

func (r probeRow) Err() error { return r.err }

func (r probeRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	counts := []uint64{2, 2, 1, 1} // symbol tables, placement columns, profiles table, the minute rollup mark
	for i, d := range dest {
		*d.(*uint64) = counts[i] // the probe scans four counts
	}
	return nil
}

func (c *probeConn) QueryRow(context.Context, string, ...any) driver.Row {
	c.reads.Add(1)
	<-c.release
	if c.fail.Load() {
		return probeRow{err: errors.New("catalog unavailable")}
	}
	return probeRow{}
}

// TestProbeIsReadOnceForConcurrentQueries: a prefetched probe and the
// queries that need it while it is read share one read; a failed read is
// not kept, and the next query reads again.
func TestProbeIsReadOnceForConcurrentQueries(t *testing.T) {
	conn := &probeConn{release: make(chan struct{})}
	e := &Engine{Conn: conn, Tables: schema.DefaultConfig()}
	ctx := context.Background()

	conn.fail.Store(true)
	close(conn.release)
	_, err := e.probe(ctx)
	require.ErrorContains(t, err, "catalog unavailable")

	conn.fail.Store(false)
	conn.release = make(chan struct{})
	conn.reads.Store(0)
	wait := e.prefetchProbe(ctx)
	var wg sync.WaitGroup
	got := make([]probe, 4)
	for i := range got {
		wg.Go(func() {
			pr, err := e.probe(ctx)
			require.NoError(t, err)
			got[i] = pr
		})
	}
	// Let the queries reach the probe while the first read is held: a
	// query that read on its own would be counted (this pause only lets a
	// fault show; the test passes without it).
	require.Eventually(t, func() bool { return conn.reads.Load() >= 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	close(conn.release)
	wg.Wait()
	wait()
	require.Equal(t, int32(1), conn.reads.Load(), "one read for the prefetch and four queries")
	for _, pr := range got {
		require.True(t, pr.symbols && pr.placement && pr.profiles && pr.marked)
	}
	e.prefetchProbe(ctx)()
	require.Equal(t, int32(1), conn.reads.Load(), "a fresh probe is not read again")
}
