package madeup

import (
	"context"
	"strconv"

	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/steps"
)

// NewOp is the op of a made-up workload. made_stream is a server/client
// pair between the workload's two devices, as every RDMA tool's; made_pipe
// runs its client on the client host. Each client prints what Rate says
// it measured at each size.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) {
	if w.Tool == PipeTool {
		return &pipe{w: w}, nil
	}
	return steps.NewRDMAPair(w, func(*steps.Env, *steps.PairRun, steps.RDMAEnd) {}), nil
}

// Argv is the made-up tools' argv hook (kinds.Argver): the server waits
// (made_pipe has none), the client prints what Rate says at the trial's
// size.
func (Kind) Argv(in kinds.ArgvIn) (server, client []string) {
	return []string{"true"}, []string{"echo", line(in.W.Tool, in.Trial.Size)}
}

// Rate is what the made-up tools "measure" at a message size: 1 Gb/s per
// 16 KiB and a round trip of 5 usec plus 1 per 16 KiB (at 64 KiB: 4 Gb/s,
// 9 usec).
func Rate(size int64) (gbps, rtt float64) {
	g := float64(size) / 16384
	return g, 5 + g
}

// line is the client's output at size: "made SIZE GBPS RTT" (made_stream),
// "pipe SIZE GBPS" (made_pipe).
func line(tool string, size int64) string {
	gbps, rtt := Rate(size)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if tool == PipeTool {
		return "pipe " + strconv.FormatInt(size, 10) + " " + f(gbps)
	}
	return "made " + strconv.FormatInt(size, 10) + " " + f(gbps) + " " + f(rtt)
}

// pipe is made_pipe's op: one client process per size and repeat on
// the client host, its output parsed into samples.
type pipe struct {
	w     *steps.Workload
	procs steps.Procs
	out   steps.Outcome
}

func (s *pipe) Describe() string {
	return s.w.Tool + " " + s.w.Name + ": " + s.w.ClientHost + " -> " + s.w.ServerHost
}
func (s *pipe) Outcome() *steps.Outcome { return &s.out }
func (s *pipe) Undo(ctx context.Context, env *steps.Env) error {
	return s.procs.StopAll(ctx, env)
}

func (s *pipe) Apply(ctx context.Context, env *steps.Env) error {
	w := s.w
	return steps.RunPlanned(ctx, env, &s.out, w, func(ctx context.Context, u kinds.Planned) error {
		argv, err := kinds.Fill(w.Name, u.Client, nil) // the plan's client
		if err != nil {
			return err
		}
		spec := steps.ProcSpec{Host: w.ClientHost, Handle: steps.Handle(w, "client", u.Size, u.Repeat), Role: "client", Argv: argv}
		if _, err := steps.StartProc(ctx, env, &s.procs, w.Tool, spec); err != nil {
			return err
		}
		res, err := steps.WaitProc(ctx, env, &s.procs, spec.Host, spec.Handle, steps.Remaining(ctx))
		if err != nil {
			return err
		}
		rec := steps.RunRecord{Size: u.Size, Repeat: u.Repeat, Client: steps.Ref(spec.Host, res), Source: "text"}
		s.out.Runs = append(s.out.Runs, rec)
		if res.ExitCode != 0 {
			return steps.ProcError(w.Tool, "client", spec.Host, res)
		}
		ss, _, err := env.Parse(w.Tool, []byte(res.Stdout), []byte(res.Stderr), false)
		if err != nil {
			return err
		}
		ss = append(ss, steps.CommonSamples(res.ExitCode, rec.Client.Seconds)...)
		steps.FillMeta(ss, results.Meta{Workload: w.Name, Tool: w.Tool, Size: u.Size, Repeat: u.Repeat, Hosts: []string{w.ServerHost, w.ClientHost}})
		s.out.Samples = append(s.out.Samples, ss...)
		return nil
	})
}
