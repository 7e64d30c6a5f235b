package server

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
)

// A lease is one client's use of the agent: the requests it sent and what
// they started. It ends at EOF (Serve returns) or at a release (the agent
// serves the next lease); either way everything it started is undone.
type lease struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // handlers of this lease still running
	used   bool           // a request was read in it (a lease then comes too late); the serve loop's only
}

func newLease(ctx context.Context) *lease {
	lctx, cancel := context.WithCancel(ctx)
	return &lease{ctx: lctx, cancel: cancel}
}

// releaseMarker is in every line whose method decodes to "release", unless
// the peer escaped a letter of it (\u0072...), which the second check keeps.
var releaseMarker, escapeMarker = []byte(proto.MethodRelease), []byte(`\u`)

// releaseRequest reports whether line is a release request, and its id.
// Most lines are not: they are decoded by their handler, off the serve loop.
func releaseRequest(line []byte) (uint64, bool) {
	if !bytes.Contains(line, releaseMarker) && !bytes.Contains(line, escapeMarker) {
		return 0, false
	}
	var req struct {
		ID     uint64 `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal(line, &req) != nil || req.Method != proto.MethodRelease {
		return 0, false // a bad line is answered by handleLine, as before
	}
	return req.ID, true
}

// endLease undoes everything l started, as the end of input always has:
// refuse new work, cancel every request in flight, stop what was started
// (a proc.wait or tcp.wait in flight returns once its process or listener
// is gone), wait for every handler, then sweep again for anything a start
// that was already past the closing check brought up. It returns with
// closing still set.
func (s *Server) endLease(l *lease) proto.CleanupResult {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	l.cancel()
	res := s.cleanup(context.Background(), nil)
	l.wg.Wait()
	late := s.cleanup(context.Background(), nil)
	res.Stopped = append(res.Stopped, late.Stopped...)
	res.DevicesDeleted = append(res.DevicesDeleted, late.DevicesDeleted...)
	res.ImpairsRemoved = append(res.ImpairsRemoved, late.ImpairsRemoved...)
	res.Errors = append(res.Errors, late.Errors...)
	return res
}

// release ends lease l without ending the agent and answers the release
// request id with what it undid. Every line of l's requests is written
// before that answer (their handlers have returned); the caller reads no
// further request until release returns, so the next lease starts clean:
// its handles are free and its context is fresh. The hello is not sent
// again.
func (s *Server) release(ctx context.Context, l *lease, id uint64) *lease {
	res := s.endLease(l)
	s.mu.Lock()
	// Everything left in the maps has ended; the next lease may reuse the
	// handles. (deleteDevice has already forgotten every rxe device.)
	clear(s.procs)
	clear(s.captures)
	clear(s.tcps)
	s.closing = false
	s.mu.Unlock()
	for _, e := range res.Errors {
		s.log.Warn("release: cleanup", "err", e)
	}
	s.log.Info("released", "id", id, "processes", res.Stopped, "rxe_deleted", res.DevicesDeleted, "errors", len(res.Errors))
	next := newLease(ctx)
	resp := proto.Response{ID: id}
	if raw, err := json.Marshal(res); err != nil {
		resp.Error = perr(proto.CodeInternal, "%s: encode result: %v", proto.MethodRelease, err)
	} else {
		resp.Result = raw
	}
	s.writeResponse(resp)
	return next
}
