package receiver

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter enforces per-tenant event rates.
type limiter struct {
	cfg *Config
	mu  sync.Mutex
	by  map[string]*rate.Limiter
}

func newLimiter(cfg *Config) *limiter { return &limiter{cfg: cfg, by: map[string]*rate.Limiter{}} }

// allow takes n events from a tenant's budget. When the budget is short it
// returns false and how long the sender should wait; a request larger than
// the whole burst waits forever (-1).
func (l *limiter) allow(tenant string, n int64, now time.Time) (bool, time.Duration) {
	lim := l.cfg.limitsFor(tenant)
	if lim.SamplesPerSecond <= 0 || n <= 0 {
		return true, 0
	}
	l.mu.Lock()
	rl, ok := l.by[tenant]
	if !ok {
		burst := lim.Burst
		if burst <= 0 {
			burst = int(10 * lim.SamplesPerSecond)
		}
		rl = rate.NewLimiter(rate.Limit(lim.SamplesPerSecond), max(burst, 1))
		l.by[tenant] = rl
	}
	l.mu.Unlock()
	if n > int64(rl.Burst()) {
		return false, -1
	}
	r := rl.ReserveN(now, int(n))
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// requestLimit is the largest request a tenant may send.
func (c *Config) requestLimit(tenant string) int {
	if l := c.limitsFor(tenant).RequestBytes; l > 0 && l < c.MaxRequestBytes {
		return l
	}
	return c.MaxRequestBytes
}
