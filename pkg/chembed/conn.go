package chembed

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Param is one server-side query parameter ({name:Type} in the SQL). Value is
// in the TSV-escaped text form that ClickHouse's HTTP interface takes for
// param_<name> (and that clickhouse-go sends).
type Param struct {
	Name  string
	Value string
}

// Stats are the counters libchdb reports for a statement.
type Stats struct {
	RowsRead     uint64
	BytesRead    uint64
	RowsWritten  uint64
	BytesWritten uint64
	Elapsed      time.Duration
}

// Conn is one libchdb connection. A Conn runs one statement at a time; the
// caller serialises access (the pool hands a Conn to one request at a time).
type Conn struct {
	lib       *Library
	handle    unsafe.Pointer // chdb_connection*, as chdb_connect returned it
	closeOnce sync.Once
}

// closedConns counts connections closed in this process (for tests).
var closedConns atomic.Int64

// errClosed is returned when a closed connection is used.
var errClosed = errors.New("chembed: connection is closed")

// openConn opens a connection to the engine on dataDir. extraArgs are
// server-level engine arguments such as --max_server_memory_usage=N.
func (l *Library) openConn(dataDir string, extraArgs ...string) (*Conn, error) {
	args := append([]string{"clickhouse", "--path=" + dataDir}, extraArgs...)
	var pinner runtime.Pinner
	defer pinner.Unpin()
	argv := make([]unsafe.Pointer, len(args)+1)
	for i, a := range args {
		b := cString(a)
		pinner.Pin(&b[0])
		argv[i] = unsafe.Pointer(&b[0])
	}
	pinner.Pin(&argv[0])
	handle := l.connect(int32(len(args)), unsafe.Pointer(&argv[0])) //nolint:gosec // G115: a handful of arguments
	if handle == nil || *(*unsafe.Pointer)(handle) == nil {
		return nil, fmt.Errorf("chdb_connect to %q failed: another process may hold the data directory "+
			"(libchdb allows one process per directory and one directory per process); libchdb prints the cause on stderr", dataDir)
	}
	return &Conn{lib: l, handle: handle}, nil
}

func (c *Conn) raw() unsafe.Pointer { return *(*unsafe.Pointer)(c.handle) }

// Close closes the connection exactly once. Closing the last connection of
// the process shuts the engine down.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.lib.closeConn(c.handle)
		c.handle = nil
		closedConns.Add(1)
	})
}

// Query runs one statement and passes its whole output, still in C memory,
// and its statistics to fn. fn must not keep the slice. On an engine error the connection is
// drained (see drain) and the error is an *Exception.
func (c *Conn) Query(query, format string, params []Param, fn func(out []byte, stats Stats) error) (Stats, error) {
	if c.handle == nil {
		return Stats{}, errClosed
	}
	res := c.call(c.lib.queryWithParams, query, format, params)
	if res == nil {
		c.drain()
		return Stats{}, newException(CodeUnknownException, "libchdb returned no result")
	}
	defer c.lib.destroyResult(res)
	stats := c.stats(res)
	if msg := goString(c.lib.resultError(res)); msg != "" {
		c.drain()
		return stats, parseException(msg)
	}
	if fn == nil {
		return stats, nil
	}
	return stats, fn(c.bytes(res), stats)
}

// Stream runs a SELECT and passes its output chunk by chunk to fn, each
// chunk a whole number of blocks in format. When fn fails, the query is
// cancelled and fn's error returned. Engine errors come back as *Exception;
// a statement that cannot be streamed fails with CodeBadArguments before
// any chunk (the caller falls back to Query).
func (c *Conn) Stream(query, format string, params []Param, fn func(chunk []byte) error) (Stats, error) {
	if c.handle == nil {
		return Stats{}, errClosed
	}
	stream := c.call(c.lib.streamWithParams, query, format, params)
	if stream == nil {
		return Stats{}, newException(CodeUnknownException, "libchdb returned no stream")
	}
	defer c.lib.destroyResult(stream)
	if msg := goString(c.lib.resultError(stream)); msg != "" {
		return Stats{}, parseException(msg)
	}
	var total Stats
	for {
		chunk := c.lib.streamFetch(c.raw(), stream)
		if chunk == nil {
			return total, newException(CodeUnknownException, "libchdb returned no stream chunk")
		}
		s := c.stats(chunk)
		total.RowsRead += s.RowsRead
		total.BytesRead += s.BytesRead
		total.Elapsed += s.Elapsed
		if msg := goString(c.lib.resultError(chunk)); msg != "" {
			c.lib.destroyResult(chunk)
			return total, parseException(msg)
		}
		n := c.lib.resultLength(chunk)
		if n == 0 {
			c.lib.destroyResult(chunk)
			return total, nil
		}
		err := fn(c.bytes(chunk))
		c.lib.destroyResult(chunk)
		if err != nil {
			c.lib.streamCancel(c.raw(), stream)
			return total, err
		}
	}
}

// drain works around a libchdb bug: after a failed statement, part of its
// output is prepended to the next statement's result on the same
// connection. Running and discarding one trivial statement flushes it.
func (c *Conn) drain() {
	res := c.call(c.lib.queryWithParams, "SELECT 1", "Null", nil)
	if res != nil {
		c.lib.destroyResult(res)
	}
}

type queryFunc = func(conn unsafe.Pointer, q unsafe.Pointer, qlen uintptr, format unsafe.Pointer, flen uintptr,
	names unsafe.Pointer, nameLens unsafe.Pointer, values unsafe.Pointer, valueLens unsafe.Pointer, count uintptr) unsafe.Pointer

// call invokes a chdb_*_with_params_n entry point. Every buffer handed to C
// is pinned for the duration of the call, as the cgo pointer rules require
// for Go memory that holds pointers to Go memory.
func (c *Conn) call(fn queryFunc, query, format string, params []Param) unsafe.Pointer {
	var pinner runtime.Pinner
	defer pinner.Unpin()
	q := cString(query)
	f := cString(format)
	pinner.Pin(&q[0])
	pinner.Pin(&f[0])
	var names, nameLens, values, valueLens unsafe.Pointer
	if len(params) > 0 {
		np := make([]unsafe.Pointer, len(params))
		nl := make([]uintptr, len(params))
		vp := make([]unsafe.Pointer, len(params))
		vl := make([]uintptr, len(params))
		for i, p := range params {
			n := cString(p.Name)
			v := cString(p.Value)
			pinner.Pin(&n[0])
			pinner.Pin(&v[0])
			np[i], nl[i] = unsafe.Pointer(&n[0]), uintptr(len(p.Name))
			vp[i], vl[i] = unsafe.Pointer(&v[0]), uintptr(len(p.Value))
		}
		pinner.Pin(&np[0])
		pinner.Pin(&nl[0])
		pinner.Pin(&vp[0])
		pinner.Pin(&vl[0])
		names, nameLens, values, valueLens = unsafe.Pointer(&np[0]), unsafe.Pointer(&nl[0]), unsafe.Pointer(&vp[0]), unsafe.Pointer(&vl[0])
	}
	return fn(c.raw(), unsafe.Pointer(&q[0]), uintptr(len(query)), unsafe.Pointer(&f[0]), uintptr(len(format)),
		names, nameLens, values, valueLens, uintptr(len(params)))
}

func (c *Conn) bytes(res unsafe.Pointer) []byte {
	n := c.lib.resultLength(res)
	buf := c.lib.resultBuffer(res)
	if n == 0 || buf == nil {
		return nil
	}
	return unsafe.Slice((*byte)(buf), n)
}

func (c *Conn) stats(res unsafe.Pointer) Stats {
	return Stats{
		RowsRead:     c.lib.resultRowsRead(res),
		BytesRead:    c.lib.resultBytesRead(res),
		RowsWritten:  c.lib.resultRowsWritten(res),
		BytesWritten: c.lib.resultBytesWritten(res),
		Elapsed:      time.Duration(c.lib.resultElapsed(res) * float64(time.Second)),
	}
}
