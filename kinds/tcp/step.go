package tcp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// tcp is the built-in TCP bulk transfer (the agent's tcp.serve/send/wait):
// the baseline to set RDMA numbers beside, measured like the RDMA bulk run.

// defaultTCPBytes is sent when the workload gives neither bytes nor a
// duration: 1 GiB, as the lab model's default (engine/lab DefaultTCPBytes)
// and labs/README.md say.
const defaultTCPBytes = 1 << 30

type tcpWorkload struct {
	w     *steps.Workload
	out   steps.Outcome
	procs steps.Procs // tcp servers still serving
	// retrans sums the sender's tcpi_total_retrans over repeats (runUnits
	// runs them one after another); retransRead: some repeat read it.
	retrans     uint64
	retransRead bool
}

func newOp(w *steps.Workload) (steps.Op, error) {
	if w.ServerAddr == "" && w.ServerHost == "" {
		return nil, fmt.Errorf("workload %q (tcp): no server host", w.Name)
	}
	return &tcpWorkload{w: w}, nil
}

func (s *tcpWorkload) Describe() string {
	return fmt.Sprintf("tcp %s: host %s (server) <- host %s (client) at %s, %s", s.w.Name, s.w.ServerHost, s.w.ClientHost, s.dialText(), s.amount())
}

// dialText is the address the client dials and why, as the plan says it.
func (s *tcpWorkload) dialText() string {
	w := s.w
	switch {
	case w.DialDevice != "":
		return fmt.Sprintf("the IPv4 of rxe %s's netdev", w.DialDevice)
	case w.ServerAddr != "":
		return fmt.Sprintf("%s (%s)", w.ServerAddr, w.DialWhy)
	}
	return w.ServerHost
}

// dialFrom is where the dialed address comes from, for the results.
func (s *tcpWorkload) dialFrom() string {
	if s.w.DialWhy != "" {
		return s.w.DialWhy
	}
	return "the server host's name"
}

// serverAddr is the address the client dials (steps.DialAddr).
func (s *tcpWorkload) serverAddr(env *steps.Env) (string, error) { return steps.DialAddr(env, s.w) }

// amount is what one run sends: "for 6s" or "1GiB" (sizes for people).
func (s *tcpWorkload) amount() string {
	if s.w.Duration > 0 {
		return "for " + s.w.Duration.String()
	}
	return kinds.SizeText(s.bytes())
}

func (s *tcpWorkload) Outcome() *steps.Outcome { return &s.out }

// bytes is what a run without a duration sends.
func (s *tcpWorkload) bytes() int64 { return bytesOf(&s.w.Workload) }

func bytesOf(w *kinds.Workload) int64 {
	if w.Bytes > 0 {
		return w.Bytes
	}
	return defaultTCPBytes
}

// Argv is tcp's argv hook (kinds.Argver): what the agent's tcp.serve and
// tcp.send are asked, written as commands (the agent runs no program):
// the server's port, and the address, port and amount the client sends.
// The port is argument 1 of the server's and 2 of the client's (bound).
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	port := strconv.Itoa(in.Port)
	amount := strconv.FormatInt(bytesOf(in.W), 10)
	if in.W.Duration > 0 {
		amount = "for " + in.W.Duration.String()
	}
	return []string{"tcp.serve", port}, []string{"tcp.send", string(in.Addr), port, amount}
}

func (s *tcpWorkload) Apply(ctx context.Context, env *steps.Env) error {
	err := steps.RunPlanned(ctx, env, &s.out, s.w, func(ctx context.Context, u kinds.Planned) error {
		return s.run(ctx, env, u)
	})
	if s.retransRead {
		// A counter of the whole workload, as the kernel's counters read
		// around it are (results/counters.go): the sender's connections'
		// retransmitted segments, summed over repeats.
		ss := []results.Sample{{Metric: "tcpi_total_retrans", Value: float64(s.retrans), Unit: results.CounterUnit("tcpi_total_retrans")}}
		steps.FillMeta(ss, results.Meta{Workload: s.w.Name, Tool: s.w.Tool, Hosts: []string{s.w.ClientHost},
			Extra: map[string]string{results.CounterExtra: results.TCPInfoSource}})
		s.out.Samples = append(s.out.Samples, ss...)
	}
	return err
}

// run runs one trial on the plan's port (Workload.Trials); what it
// records as the two sides' argv is the plan's with the address filled
// and the port the server bound.
func (s *tcpWorkload) run(ctx context.Context, env *steps.Env, u kinds.Planned) error {
	w, rep := s.w, u.Repeat
	srv, err := env.Host(w.ServerHost)
	if err != nil {
		return err
	}
	cli, err := env.Host(w.ClientHost)
	if err != nil {
		return err
	}
	addr, err := s.serverAddr(env)
	if err != nil {
		return err
	}
	// Filled before the server starts: an unfilled placeholder stops the
	// workload before any process or listener (SECURITY.md).
	vals := kinds.Values{kinds.ServerAddr: addr}
	sfilled, err := kinds.Fill(w.Name, u.Server, vals)
	if err != nil {
		return err
	}
	cfilled, err := kinds.Fill(w.Name, u.Client, vals)
	if err != nil {
		return err
	}
	port := u.Port
	sh, ch := steps.Handle(w, "server", 0, rep), steps.Handle(w, "client", 0, rep)
	if err := env.Note(steps.Effect{Host: w.ServerHost, Type: "tcp", ID: sh, Pending: true}); err != nil {
		return err
	}
	s.procs.Add(w.ServerHost, sh)
	serving, err := rpc.Invoke(ctx, srv, rpc.TCPServe, proto.TCPServeParams{Handle: sh, Port: port})
	if err != nil {
		return fmt.Errorf("serve tcp on host %q port %d: %w", w.ServerHost, port, err)
	}
	start := time.Now()
	params := proto.TCPSendParams{Handle: ch, Addr: addr, Port: serving.Port, Bytes: s.bytes(), TimeoutMs: steps.Millis(steps.Remaining(ctx))}
	sargv, argv := bound(sfilled, 1, serving.Port), bound(cfilled, 2, serving.Port)
	size := s.bytes()
	if w.Duration > 0 {
		params.Bytes, params.DurationMs = 0, w.Duration.Milliseconds()
		size = 0 // the amount is whatever the duration carried: not a size to group by
	}
	sent, err := rpc.Invoke(ctx, cli, rpc.TCPSend, params)
	if err != nil {
		return fmt.Errorf("send %s over tcp from host %q to %s:%d: %w", s.amount(), w.ClientHost, addr, serving.Port, err)
	}
	got, err := rpc.Invoke(ctx, srv, rpc.TCPWait, proto.TCPWaitParams{Handle: sh, TimeoutMs: steps.Millis(steps.Remaining(ctx))})
	if err != nil {
		return fmt.Errorf("wait for tcp server on host %q port %d: %w", w.ServerHost, serving.Port, err)
	}
	s.procs.Done(w.ServerHost, sh)
	_ = env.Note(steps.Effect{Host: w.ServerHost, Type: "tcp", ID: sh, Undone: true})
	secs := time.Since(start).Seconds()
	s.out.Runs = append(s.out.Runs, steps.RunRecord{Repeat: rep,
		Server: &steps.ProcRef{Host: w.ServerHost, Handle: sh, Argv: sargv, Seconds: got.Seconds},
		Client: &steps.ProcRef{Host: w.ClientHost, Handle: ch, Argv: argv, Seconds: sent.Seconds},
	})
	if sent.TotalRetrans != nil {
		s.retrans += uint64(*sent.TotalRetrans)
		s.retransRead = true
	}
	ss := []results.Sample{
		{Metric: "tcp_bw", Value: sent.Gbps, Unit: "Gb/s"}, // one quantity: MiB/s is a display choice
	}
	ss = append(ss, steps.CommonSamples(0, secs)...)
	steps.FillMeta(ss, results.Meta{Workload: w.Name, Tool: w.Tool, Size: size, Repeat: rep,
		Hosts: []string{w.ServerHost, w.ClientHost}, Bytes: sent.Bytes, ServerBytes: got.Bytes, Extra: map[string]string{
			"server_addr": addr, "server_addr_from": s.dialFrom(), results.ServerPortExtra: fmt.Sprint(serving.Port)}})
	s.out.Samples = append(s.out.Samples, ss...)
	return nil
}

// bound is a planned argv with the port the server bound in place of the
// one planned (the agent takes another when that one is busy): argument
// i, where Argv puts it.
func bound(argv []string, i, port int) []string {
	out := slices.Clone(argv)
	if i < len(out) {
		out[i] = strconv.Itoa(port)
	}
	return out
}

// Undo waits briefly for servers that never got their transfer so the agent
// releases their ports; the agent's cleanup closes anything left.
func (s *tcpWorkload) Undo(ctx context.Context, env *steps.Env) error {
	for _, k := range s.procs.Running() {
		h, err := env.Host(k[0])
		if err != nil {
			continue
		}
		_, _ = rpc.Invoke(ctx, h, rpc.TCPWait, proto.TCPWaitParams{Handle: k[1], TimeoutMs: 1})
		s.procs.Done(k[0], k[1])
		_ = env.Note(steps.Effect{Host: k[0], Type: "tcp", ID: k[1], Undone: true})
	}
	return nil
}
