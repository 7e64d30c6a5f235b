package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
)

// The watchdog (proto.MethodWatchdog): a controller whose network vanished
// (a laptop lid, a VPN drop, a deleted namespace) never closes the agent's
// input: sshd keeps the session until its TCP keepalive gives up, hours
// later, and with it every rxe device, netem qdisc and process of the run.
// Once armed, silence past the limit ends the agent as the end of its input
// does, with a record in the work dir for `rlab down`.

// ErrWatchdog is returned by Serve when its watchdog fired.
var ErrWatchdog = errors.New("watchdog: no line from the controller within the limit")

// minWatchdog is the shortest limit the agent accepts: the controller pings
// every few seconds, and a shorter limit would end runs on a busy link.
const minWatchdog = time.Second

var watchdogMarker = []byte(proto.MethodWatchdog)

// watchdogRequest reports whether line is a watchdog request.
func watchdogRequest(line []byte) (proto.Request, bool) {
	if !bytes.Contains(line, watchdogMarker) && !bytes.Contains(line, escapeMarker) {
		return proto.Request{}, false
	}
	var req proto.Request
	if json.Unmarshal(line, &req) != nil || req.Method != proto.MethodWatchdog {
		return proto.Request{}, false
	}
	return req, true
}

// watchdog is the serve loop's timer: armed by a request, reset by every
// line read.
type watchdog struct {
	limit time.Duration // 0: off
	last  time.Time     // last line read
	timer *time.Timer
}

// C fires when the limit may have passed (nil while disarmed).
func (w *watchdog) C() <-chan time.Time {
	if w.timer == nil {
		return nil
	}
	return w.timer.C
}

// heard notes a line read.
func (w *watchdog) heard(now time.Time) {
	w.last = now
	if w.timer != nil {
		w.timer.Reset(w.limit)
	}
}

// set arms (limit > 0) or disarms the watchdog.
func (w *watchdog) set(limit time.Duration, now time.Time) {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.limit, w.last = limit, now
	if limit > 0 {
		w.timer = time.NewTimer(limit)
	}
}

// expired reports whether the limit has passed since the last line (a
// timer that fired just as a line came is not).
func (w *watchdog) expired(now time.Time) bool {
	return w.limit > 0 && now.Sub(w.last) >= w.limit
}

// arm answers a watchdog request in the serve loop.
func (s *Server) arm(w *watchdog, req proto.Request) {
	resp := proto.Response{ID: req.ID}
	var p proto.WatchdogParams
	if err := decode(proto.MethodWatchdog, req.Params, &p); err != nil {
		resp.Error = toProtoError(proto.MethodWatchdog, err)
	} else if p.LimitMs != 0 && (p.LimitMs < minWatchdog.Milliseconds() || p.LimitMs > (24*time.Hour).Milliseconds()) {
		resp.Error = perr(proto.CodeBadRequest, "watchdog: limit_ms %d: want 0 (off) or %d to %d", p.LimitMs, minWatchdog.Milliseconds(), (24 * time.Hour).Milliseconds())
	} else {
		w.set(time.Duration(p.LimitMs)*time.Millisecond, time.Now())
		s.log.Info("watchdog", "limit", w.limit)
		resp.Result, _ = json.Marshal(p)
	}
	s.writeResponse(resp)
}

// recordWatchdog writes what the agent undid when its watchdog fired.
func (s *Server) recordWatchdog(silent, limit time.Duration, res proto.CleanupResult) error {
	rec := proto.WatchdogRecord{At: time.Now().UTC(), SilentMs: silent.Milliseconds(), LimitMs: limit.Milliseconds(), Undone: res}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := s.workDir().create(proto.WatchdogFile, s.opts.Owner)
	if err != nil {
		return fmt.Errorf("write %s: %w", proto.WatchdogFile, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", proto.WatchdogFile, err)
	}
	return nil
}
