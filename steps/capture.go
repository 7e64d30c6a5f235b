package steps

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
)

// Capture runs tcpdump on a host (through the agent, always bounded by
// snaplen and a size limit) from Apply until Undo, which stops it with a
// flush. One pcap per capture per workload window.
type Capture struct {
	Name     string
	Slug     string
	Host     string
	Netdev   string
	Filter   string
	Snaplen  int
	MaxBytes int64
	// Window names the workloads the capture covers ("" = the whole run); it
	// is part of the file name.
	Window string

	mu      sync.Mutex
	started bool
	stopped bool
	Files   []proto.FileInfo // what the stop reported
}

// Handle is the agent handle (and file stem) of this capture.
func (s *Capture) Handle() string {
	h := "cap." + s.Slug
	if s.Window != "" {
		h += "." + s.Window
	}
	return h
}

func (s *Capture) Describe() string {
	d := fmt.Sprintf("capture %s: tcpdump on %s of host %s", s.Name, s.Netdev, s.Host)
	if s.Filter != "" {
		d += fmt.Sprintf(" filter %q", s.Filter)
	}
	if s.Window != "" {
		d += " during " + s.Window
	}
	return d
}

func (s *Capture) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	hd := s.Handle()
	if err := env.Note(Effect{Host: s.Host, Type: "capture", ID: hd, Netdev: s.Netdev, Pending: true}); err != nil {
		return err
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	p := proto.CaptureStartParams{Handle: hd, Netdev: s.Netdev, Filter: s.Filter, Snaplen: s.Snaplen, MaxBytes: s.MaxBytes, File: hd + ".pcap"}
	// The file is a capture because this op makes it (Env.Made), told
	// before tcpdump starts: a capture whose stop never answers is one too.
	env.Made(s.Host, p.File, results.ArtifactCapture)
	st, err := rpc.Invoke(ctx, h, rpc.CaptureStart, p)
	if err != nil {
		return fmt.Errorf("start capture %q on %s of host %q: %w", s.Name, s.Netdev, s.Host, err)
	}
	return env.Note(Effect{Host: s.Host, Type: "capture", ID: hd, Netdev: s.Netdev, PID: st.PID, ProcIdentity: st.ProcIdentity})
}

// Undo stops tcpdump (it flushes its file); idempotent.
func (s *Capture) Undo(ctx context.Context, env *Env) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.stopped {
		return nil
	}
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	res, err := rpc.Invoke(ctx, h, rpc.CaptureStop, proto.CaptureStopParams{Handle: s.Handle()})
	var pe *proto.Error
	if err != nil && !(errors.As(err, &pe) && pe.Code == proto.CodeNotFound) {
		return fmt.Errorf("stop capture %q on host %q: %w", s.Name, s.Host, err)
	}
	s.stopped = true
	s.Files = res.Files
	for _, f := range res.Files { // a ring's files, as the stop named them
		env.Made(s.Host, f.Path, results.ArtifactCapture)
	}
	return env.Note(Effect{Host: s.Host, Type: "capture", ID: s.Handle(), Netdev: s.Netdev, Undone: true})
}
