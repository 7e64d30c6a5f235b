package server

import (
	"bytes"
	"encoding/json"
	"path/filepath"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Leases re-target a kept agent between clients (proto.MethodLease): the
// mux daemon starts every kept agent with one run id, and each client that
// takes it moves its work dir to its own run before anything else.

// leaseMarker is in every line whose method decodes to "lease" (a release
// line too: releaseRequest is asked first), unless the peer escaped a
// letter, which escapeMarker catches.
var leaseMarker = []byte(proto.MethodLease)

// leaseRequest reports whether line is a lease request.
func leaseRequest(line []byte) (proto.Request, bool) {
	if !bytes.Contains(line, leaseMarker) && !bytes.Contains(line, escapeMarker) {
		return proto.Request{}, false
	}
	var req proto.Request
	if json.Unmarshal(line, &req) != nil || req.Method != proto.MethodLease {
		return proto.Request{}, false
	}
	return req, true
}

// runsBase splits a start work dir .../runs/<run>/<host> into the runs base
// and the host leaf; ok is false when it is not of that shape (its run
// folder is not a run id), and the agent then refuses leases.
func runsBase(workDir string) (base, leaf string, ok bool) {
	leaf = filepath.Base(workDir)
	run := filepath.Dir(workDir)
	if leaf == "/" || leaf == "." || ValidRunID(filepath.Base(run)) != nil || ValidRunID(leaf) != nil {
		return "", "", false
	}
	return filepath.Dir(run), leaf, true
}

// lease answers a lease request in the serve loop, before any later line
// is read, so the requests after it see the new work dir. l is the lease it
// comes in; it must have seen no request yet.
func (s *Server) lease(l *lease, req proto.Request) {
	resp := proto.Response{ID: req.ID}
	res, err := s.leaseTo(l, req.Params)
	if err != nil {
		resp.Error = toProtoError(proto.MethodLease, err)
	} else {
		resp.Result, _ = json.Marshal(res)
	}
	s.writeResponse(resp)
}

func (s *Server) leaseTo(l *lease, params json.RawMessage) (proto.LeaseResult, error) {
	if l.used {
		return proto.LeaseResult{}, perr(proto.CodeBusy, "lease: the agent is serving a client already: a lease must be its first request, after the agent's start or a release")
	}
	var p proto.LeaseParams
	if err := decode(proto.MethodLease, params, &p); err != nil {
		return proto.LeaseResult{}, err
	}
	if err := ValidRunID(p.RunID); err != nil {
		return proto.LeaseResult{}, perr(proto.CodeBadRequest, "lease: %v", err)
	}
	base, leaf, ok := runsBase(s.startWorkDir)
	if !ok {
		return proto.LeaseResult{}, perr(proto.CodeUnsupported, "lease: the agent's work dir %q is not .../runs/<run>/<host>: it has no runs folder to lease into", s.startWorkDir)
	}
	wd := filepath.Join(base, p.RunID, leaf)
	if err := mkdirAllOwned(wd, s.opts.Owner); err != nil {
		return proto.LeaseResult{}, perr(proto.CodeInternal, "lease: create work dir %q: %v", wd, err)
	}
	held, err := openWorkDir(wd, s.opts.Owner)
	if err != nil {
		return proto.LeaseResult{}, perr(proto.CodeInternal, "lease: %v", err)
	}
	// Only the serve loop writes it, while no handler runs; the handlers of
	// this lease start after it, and the release before it ended what the
	// last one started.
	s.mu.Lock()
	old := s.wd
	s.opts.WorkDir, s.wd = wd, held
	s.mu.Unlock()
	old.close()
	s.log.Info("leased", "run_id", p.RunID, "work_dir", wd)
	return proto.LeaseResult{WorkDir: wd}, nil
}
