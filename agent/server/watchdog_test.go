package server

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestWatchdogUndoesAndExits: an agent whose controller went silent (no
// line, not even a ping, for the armed limit) stops what it started,
// writes its record and returns ErrWatchdog; pings keep it serving.
func TestWatchdogUndoesAndExits(t *testing.T) {
	const limit = 1500 * time.Millisecond
	for _, tt := range []struct {
		name  string
		pings time.Duration // pinged this long (every 300 ms) before falling silent
	}{
		{"silent at once", 0},
		{"pinged, then silent", 3 * limit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, srv := startAgent(t, Options{})
			var started proto.ProcStarted
			c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "sleeper", Argv: []string{"sleep", "1000"}}, &started)
			var armed proto.WatchdogParams
			// Taken before the line is sent: the agent's silence starts when
			// it reads the line, never before this (taken after the reply,
			// the bound failed under load: fired after 1.497s, limit 1.5s).
			silentFrom := time.Now()
			c.mustCall(proto.MethodWatchdog, proto.WatchdogParams{LimitMs: limit.Milliseconds()}, &armed)
			if armed.LimitMs != limit.Milliseconds() {
				t.Fatalf("armed %d ms, want %d", armed.LimitMs, limit.Milliseconds())
			}
			for end := time.Now().Add(tt.pings); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
				silentFrom = time.Now()
				if e := c.call(proto.MethodPing, nil, nil); e != nil {
					t.Fatalf("ping: %v", e)
				}
			}
			if processGone(started.PID) {
				t.Fatalf("the workload ended while the controller pinged")
			}
			select {
			case err := <-c.done:
				c.done <- err
				if !errors.Is(err, ErrWatchdog) {
					t.Fatalf("Serve returned %v, want ErrWatchdog", err)
				}
			case <-time.After(limit + 20*time.Second):
				t.Fatalf("agent still serving %s after its controller fell silent (limit %s)", time.Since(silentFrom), limit)
			}
			if d := time.Since(silentFrom); d < limit {
				t.Errorf("watchdog fired after %s of silence, before its limit %s", d, limit)
			}
			waitGone(t, started.PID)
			b, err := os.ReadFile(filepath.Join(srv.WorkDir(), proto.WatchdogFile))
			if err != nil {
				t.Fatal(err)
			}
			var rec proto.WatchdogRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if rec.LimitMs != limit.Milliseconds() || rec.SilentMs < limit.Milliseconds() || !slices.Contains(rec.Undone.Stopped, "sleeper") {
				t.Errorf("record %+v: want limit %d, silent >= it, sleeper stopped", rec, limit.Milliseconds())
			}
		})
	}
}

func TestWatchdogLimits(t *testing.T) {
	c, _ := startAgent(t, Options{})
	for _, tt := range []struct {
		limit int64
		ok    bool
	}{{0, true}, {1000, true}, {60000, true}, {999, false}, {-5, false}, {int64(25 * time.Hour / time.Millisecond), false}} {
		e := c.call(proto.MethodWatchdog, proto.WatchdogParams{LimitMs: tt.limit}, nil)
		if (e == nil) != tt.ok || (e != nil && e.Code != proto.CodeBadRequest) {
			t.Errorf("limit %d: error %v, want ok=%v", tt.limit, e, tt.ok)
		}
	}
	// Disarmed (the 0 above came first, then 1000 and 60000 re-armed; end
	// with 0): silence does not end it.
	if e := c.call(proto.MethodWatchdog, proto.WatchdogParams{LimitMs: 0}, nil); e != nil {
		t.Fatal(e)
	}
	select {
	case err := <-c.done:
		t.Fatalf("a disarmed agent ended: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestWatchdogKeptAliveByClient: rpc.Client.Watchdog arms the agent and
// then pings it on its own, so a run with long quiet stretches (no call in
// flight) is not ended.
func TestWatchdogKeptAliveByClient(t *testing.T) {
	// Pings go every limit/6; a limit of 1 s ended the agent once on a
	// machine at load 8 (a VM under TCG and every package's tests), its
	// pinger starved past the limit. 3 s of silence is no run's quiet.
	const limit = 3 * time.Second
	c, _ := startAgent(t, Options{})
	var started proto.ProcStarted
	c.mustCall(proto.MethodProcStart, proto.ProcStartParams{Handle: "sleeper", Argv: []string{"sleep", "1000"}}, &started)
	if err := c.rc.Watchdog(t.Context(), limit); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- err
		t.Fatalf("agent ended although its client pinged it: %v", err)
	case <-time.After(2 * limit):
	}
	if processGone(started.PID) {
		t.Fatal("the workload ended although the client pinged the agent")
	}
}
