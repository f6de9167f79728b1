package chembed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// session is one pooled connection plus what the server has changed on it:
// the current database and the settings applied with SET. Requests never
// inherit another request's session state: prepare brings the session to
// exactly the state a request asks for.
type session struct {
	conn *Conn
	// database is the current database ("" until the first USE).
	database string
	// settings are the values applied with SET on top of the baseline.
	settings map[string]string
	// baseline holds the settings libchdb itself changed at start, which a
	// full reset restores instead of resetting them to DEFAULT.
	baseline map[string]string
}

// pool hands each request a session of its own, waiting up to queueTimeout.
type pool struct {
	idle      chan *session
	all       []*session
	closeOnce sync.Once
	closing   chan struct{}
}

func newPool(conns []*Conn) (*pool, error) {
	if len(conns) == 0 {
		return nil, errors.New("pool needs at least one connection")
	}
	p := &pool{idle: make(chan *session, len(conns)), closing: make(chan struct{})}
	for _, c := range conns {
		s := &session{conn: c, settings: map[string]string{}}
		p.all = append(p.all, s)
		p.idle <- s
	}
	return p, nil
}

// errPoolClosed is returned once shutdown has begun.
var errPoolClosed = newException(CodeTooManySimultaneousQueries, "the embedded server is shutting down")

// acquire waits for an idle session. It fails with
// TOO_MANY_SIMULTANEOUS_QUERIES when none frees up within queueTimeout, and
// with ctx's error when the client goes away first.
func (p *pool) acquire(ctx context.Context, queueTimeout time.Duration) (*session, error) {
	select {
	case <-p.closing:
		return nil, errPoolClosed
	default:
	}
	select {
	case s := <-p.idle:
		return s, nil
	default:
	}
	timer := time.NewTimer(queueTimeout)
	defer timer.Stop()
	select {
	case s := <-p.idle:
		return s, nil
	case <-p.closing:
		return nil, errPoolClosed
	case <-timer.C:
		return nil, newException(CodeTooManySimultaneousQueries,
			"all %d engine connections stayed busy for %s; retry later or raise connections", len(p.all), queueTimeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for an engine connection: %w", ctx.Err())
	}
}

func (p *pool) release(s *session) { p.idle <- s }

// close stops handing out sessions, waits until every session is back and
// closes each connection exactly once.
func (p *pool) close() {
	p.closeOnce.Do(func() {
		close(p.closing)
		for range p.all {
			s := <-p.idle
			s.conn.Close()
		}
	})
}

// loadBaseline records the settings that differ from their defaults on a
// fresh connection.
func (s *session) loadBaseline() error {
	s.baseline = map[string]string{}
	_, err := s.conn.Query("SELECT name, value FROM system.settings WHERE changed", "TabSeparatedRaw", nil, func(b []byte, _ Stats) error {
		for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
			if name, value, ok := strings.Cut(line, "\t"); ok {
				s.baseline[name] = value
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read engine settings: %w", err)
	}
	return nil
}

// prepare brings the session to the database and settings a request asks
// for, issuing USE and one SET only for what differs from its current state.
func (s *session) prepare(database string, settings map[string]string) error {
	if database != s.database {
		if _, err := s.conn.Query("USE "+quoteIdentifier(database), "Null", nil, nil); err != nil {
			s.database = "" // unknown after a failed USE
			return err
		}
		s.database = database
	}
	var assignments []string
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		if cur, ok := s.settings[name]; !ok || cur != settings[name] {
			assignments = append(assignments, name+" = "+quoteString(settings[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.settings)) {
		if _, keep := settings[name]; !keep {
			assignments = append(assignments, s.resetAssignment(name))
		}
	}
	if len(assignments) == 0 {
		return nil
	}
	if _, err := s.conn.Query("SET "+strings.Join(assignments, ", "), "Null", nil, nil); err != nil {
		if resetErr := s.reset(); resetErr != nil {
			return errors.Join(err, resetErr)
		}
		return err
	}
	s.settings = maps.Clone(settings)
	return nil
}

// resetAssignment returns the SET clause that undoes a setting: back to the
// baseline value libchdb started with, or to the default.
func (s *session) resetAssignment(name string) string {
	if v, ok := s.baseline[name]; ok {
		return name + " = " + quoteString(v)
	}
	return name + " = DEFAULT"
}

// reset undoes everything a client may have changed on the session with
// SET or USE statements: every changed setting goes back to the baseline or
// its default, and the next request re-issues USE.
func (s *session) reset() error {
	var changed []string
	_, err := s.conn.Query("SELECT name, value FROM system.settings WHERE changed", "TabSeparatedRaw", nil, func(b []byte, _ Stats) error {
		for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
			name, value, ok := strings.Cut(line, "\t")
			if !ok || s.baseline[name] == value {
				continue
			}
			changed = append(changed, s.resetAssignment(name))
		}
		return nil
	})
	if err == nil && len(changed) > 0 {
		_, err = s.conn.Query("SET "+strings.Join(changed, ", "), "Null", nil, nil)
	}
	s.settings = map[string]string{}
	s.database = ""
	if err != nil {
		return fmt.Errorf("reset session settings: %w", err)
	}
	return nil
}

// quoteIdentifier quotes a database or table name with backquotes.
func quoteIdentifier(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}

// quoteString quotes a value as a ClickHouse string literal.
func quoteString(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
