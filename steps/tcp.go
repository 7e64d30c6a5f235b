package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/results"
)

// tcp is the built-in TCP bulk transfer (the agent's tcp.serve/send/wait):
// the baseline to set RDMA numbers beside, measured like the RDMA bulk run.

// defaultTCPBytes is sent when the lab gives no `bytes`.
const defaultTCPBytes = 64 << 20

type tcpWorkload struct {
	w     *Workload
	out   Outcome
	procs procs // tcp servers still serving
}

func newTCP(w *Workload) (Step, error) {
	if w.ServerAddr == "" && w.ServerHost == "" {
		return nil, fmt.Errorf("workload %q (tcp): no server host", w.Name)
	}
	return &tcpWorkload{w: w}, nil
}

func (s *tcpWorkload) Describe() string {
	return fmt.Sprintf("tcp %s: host %s (server) <- host %s (client), %d bytes", s.w.Name, s.w.ServerHost, s.w.ClientHost, s.bytes())
}

func (s *tcpWorkload) Outcome() *Outcome { return &s.out }

func (s *tcpWorkload) bytes() int64 {
	if s.w.Bytes > 0 {
		return s.w.Bytes
	}
	return defaultTCPBytes
}

func (s *tcpWorkload) Apply(ctx context.Context, env *Env) error {
	w := s.w
	s.out = Outcome{Workload: w.Name, Tool: w.Tool, Start: time.Now()}
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	var err error
	for rep := 0; rep < repeats(w) && err == nil; rep++ {
		err = s.run(ctx, env, rep)
	}
	s.out.End = time.Now()
	return finish(ctx, &s.out, w, err)
}

func (s *tcpWorkload) run(ctx context.Context, env *Env, rep int) error {
	w := s.w
	srv, err := env.Host(w.ServerHost)
	if err != nil {
		return err
	}
	cli, err := env.Host(w.ClientHost)
	if err != nil {
		return err
	}
	port := PortFor(w, rep)
	sh, ch := handle(w, "server", 0, rep), handle(w, "client", 0, rep)
	if err := env.note(Effect{Host: w.ServerHost, Kind: "tcp", ID: sh, Pending: true}); err != nil {
		return err
	}
	s.procs.add(w.ServerHost, sh)
	var serving proto.TCPServing
	if err := srv.Call(ctx, proto.MethodTCPServe, proto.TCPServeParams{Handle: sh, Port: port}, &serving); err != nil {
		return fmt.Errorf("serve tcp on host %q port %d: %w", w.ServerHost, port, err)
	}
	addr := w.ServerAddr
	if addr == "" {
		addr = w.ServerHost
	}
	start := time.Now()
	var sent proto.TCPResult
	if err := cli.Call(ctx, proto.MethodTCPSend, proto.TCPSendParams{Handle: ch, Addr: addr, Port: serving.Port, Bytes: s.bytes(), TimeoutMs: ms(remaining(ctx))}, &sent); err != nil {
		return fmt.Errorf("send %d bytes over tcp from host %q to %s:%d: %w", s.bytes(), w.ClientHost, addr, serving.Port, err)
	}
	var got proto.TCPResult
	if err := srv.Call(ctx, proto.MethodTCPWait, proto.TCPWaitParams{Handle: sh, TimeoutMs: ms(remaining(ctx))}, &got); err != nil {
		return fmt.Errorf("wait for tcp server on host %q port %d: %w", w.ServerHost, serving.Port, err)
	}
	s.procs.done(w.ServerHost, sh)
	_ = env.note(Effect{Host: w.ServerHost, Kind: "tcp", ID: sh, Undone: true})
	secs := time.Since(start).Seconds()
	s.out.Runs = append(s.out.Runs, RunRecord{Repeat: rep,
		Server: &ProcRef{Host: w.ServerHost, Handle: sh, Argv: []string{"tcp.serve", fmt.Sprint(serving.Port)}, Seconds: got.Seconds},
		Client: &ProcRef{Host: w.ClientHost, Handle: ch, Argv: []string{"tcp.send", addr, fmt.Sprint(serving.Port), fmt.Sprint(s.bytes())}, Seconds: sent.Seconds},
	})
	ss := []results.Sample{
		{Metric: "tcp_bw", Value: sent.Gbps, Unit: "Gb/s"}, // one quantity: MiB/s is a display choice
	}
	ss = append(ss, commonSamples(0, secs)...)
	fillMeta(ss, results.Meta{Workload: w.Name, Tool: w.Tool, Size: s.bytes(), Repeat: rep,
		Hosts: []string{w.ServerHost, w.ClientHost}, Extra: map[string]string{"server_bytes": fmt.Sprint(got.Bytes)}})
	s.out.Samples = append(s.out.Samples, ss...)
	return nil
}

// Undo waits briefly for servers that never got their transfer so the agent
// releases their ports; the agent's cleanup closes anything left.
func (s *tcpWorkload) Undo(ctx context.Context, env *Env) error {
	s.procs.mu.Lock()
	var left [][2]string
	for k := range s.procs.running {
		left = append(left, k)
	}
	s.procs.mu.Unlock()
	for _, k := range left {
		h, err := env.Host(k[0])
		if err != nil {
			continue
		}
		var got proto.TCPResult
		_ = h.Call(ctx, proto.MethodTCPWait, proto.TCPWaitParams{Handle: k[1], TimeoutMs: 1}, &got)
		s.procs.done(k[0], k[1])
		_ = env.note(Effect{Host: k[0], Kind: "tcp", ID: k[1], Undone: true})
	}
	return nil
}
