package steps

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/kinds"
)

// noClockReport is what perftest prints when its CPU clock sample is too
// noisy to turn cycles into rates ("Correlation coefficient r^2: ... <
// 0.9" before it).
const noClockReport = "Can't produce a report"

// PairRun is what a two-sided kind builds for one run (one size × repeat).
type PairRun struct {
	Server, Client ProcSpec
	Meta           results.Meta
	// QPTimeout is the RC QP timeout the family gave the tool (0: the
	// tool's own) and Emulated why an end is an emulated guest ("" when
	// none is known to be): a failure with retries exhausted names them.
	QPTimeout int
	Emulated  string
	// JSONFile, when set, is the path (on the client host) of a JSON report
	// the tool writes; it is read back with files.read and parsed instead of
	// the client's stdout. JSONRel is the same file relative to the agent's
	// work dir.
	JSONFile, JSONRel string
	// Stall, when set, names what a trial that ran into its timeout is
	// known to be (rping over siw); the timeout error says it first.
	Stall string
}

// pairBuilder builds one trial of a workload from its planned argv.
type pairBuilder func(env *Env, u kinds.Planned) (*PairRun, error)

// pairWorkload is the common driver of every two-sided tool (perftest,
// pingpong, rping): one server/client pair per size × repeat, outputs parsed
// into samples.
type pairWorkload struct {
	w     *Workload
	build pairBuilder
	desc  string
	procs Procs
	out   Outcome
}

func (s *pairWorkload) Describe() string { return s.desc }

func (s *pairWorkload) Outcome() *Outcome { return &s.out }

func (s *pairWorkload) Undo(ctx context.Context, env *Env) error {
	return s.procs.StopAll(ctx, env)
}

func (s *pairWorkload) Apply(ctx context.Context, env *Env) error {
	return RunPlanned(ctx, env, &s.out, s.w, func(ctx context.Context, u kinds.Planned) error {
		return s.run(ctx, env, u)
	})
}

// run runs one size × repeat: a server/client pair, its output parsed.
func (s *pairWorkload) run(ctx context.Context, env *Env, u kinds.Planned) error {
	w := s.w
	size, rep := u.Size, u.Repeat
	r, err := s.build(env, u)
	if err != nil {
		return err
	}
	server, client := r.Server.Handle, r.Client.Handle
	sr, cr, err := runPair(ctx, env, &s.procs, w.Tool, r.Server, r.Client)
	for try := 1; try <= clockRetries && err != nil && ctx.Err() == nil; try++ {
		host := noClock(r, sr, cr)
		if host == "" {
			break
		}
		// perftest samples the CPU clock against gettimeofday to turn
		// cycles into rates and refuses to report when the fit is poor
		// (r^2 < 0.9), as on a loaded host under TCG (seen in the
		// quickstart soak, on the client; in CI, on the server of an
		// ib_send_bw, whose client then fails its final exchange, and
		// twice in a row on an ib_read_bw client): a failure of the
		// measurement, not of the link or the tool. Again, after a pause
		// that lets a burst of load pass, under new handles so every
		// try's output is kept.
		env.logger().Warn("the tool could not measure the CPU clock; running this size again", "workload", w.Name, "trial", u.String(), "host", host, "try", try+1)
		env.notify(w.Name, fmt.Sprintf("workload %s: %s: %s could not measure the CPU clock (%q); running it again (try %d of %d)", w.Name, u, w.Tool, noClockReport, try+1, clockRetries+1))
		select {
		case <-ctx.Done():
		case <-time.After(clockPause):
		}
		suffix := ".again"
		if try > 1 {
			suffix += strconv.Itoa(try)
		}
		r.Server.Handle, r.Client.Handle = server+suffix, client+suffix
		sr, cr, err = runPair(ctx, env, &s.procs, w.Tool, r.Server, r.Client)
	}
	if err != nil {
		t, _ := kinds.Lookup(w.Tool)
		err = explainRetries(err, t, r.QPTimeout, r.Emulated, cr, sr)
		var waited *clientWaitError
		if r.Stall != "" && errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.As(err, &waited) {
			err = fmt.Errorf("%s: %w", r.Stall, err)
		}
	}
	rec := RunRecord{Size: size, Repeat: rep}
	if sr != nil {
		rec.Server = Ref(r.Server.Host, sr)
	}
	if cr != nil {
		rec.Client = Ref(r.Client.Host, cr)
	}
	if err != nil {
		s.out.Runs = append(s.out.Runs, rec)
		if cr != nil && cr.Stdout != "" && ctx.Err() == nil {
			// The client failed after it measured something (a sweep's
			// first sizes, then "Completion with error"): those rows are
			// kept, marked partial; the workload still fails with err.
			if ss, _, _, _ := s.parse(ctx, env, r, cr); len(ss) > 0 {
				s.keepPartial(ss, r)
			}
		}
		return err
	}
	ss, source, note, err := s.parse(ctx, env, r, cr)
	rec.Source = source
	if !note.Empty() {
		note.Size, note.Repeat = size, rep
		rec.Parse = &note
	}
	s.out.Runs = append(s.out.Runs, rec)
	if err != nil {
		if len(ss) > 0 { // toolout.PartialError: rows, then a failure
			s.keepPartial(ss, r)
		}
		t, _ := kinds.Lookup(w.Tool)
		return explainRetries(err, t, r.QPTimeout, r.Emulated, cr, sr)
	}
	common := CommonSamples(cr.ExitCode, rec.Client.Seconds)
	if size == 0 {
		// The tool's default size: the run measured the size the tool
		// reported, and its exit code and duration belong to that size
		// too (else they form a group of their own that every expect is
		// evaluated on, with its metrics null).
		if got := reportedSize(ss); got != 0 {
			for i := range common {
				common[i].Meta.Size = got
			}
		}
	}
	ss = append(ss, common...)
	FillMeta(ss, r.Meta)
	s.out.Samples = append(s.out.Samples, ss...)
	return nil
}

// noClock names the host whose end of a run could not measure the CPU
// clock (noClockReport in its stderr), or "" when neither end says so.
// clockRetries is how many times a size whose perftest could not measure
// the CPU clock is run again; clockPause is the wait before each. Two tries
// were not enough in CI (r^2 0.87 twice on one ib_read_bw client).
const clockRetries = 3

var clockPause = 2 * time.Second

func noClock(r *PairRun, sr, cr *proto.ProcResult) string {
	switch {
	case cr != nil && strings.Contains(cr.Stderr, noClockReport):
		return r.Client.Host
	case sr != nil && strings.Contains(sr.Stderr, noClockReport):
		return r.Server.Host
	}
	return ""
}

// keepPartial records what a failed run measured before it failed, each
// sample marked partial (Meta.Extra["partial"]).
func (s *pairWorkload) keepPartial(ss []results.Sample, r *PairRun) {
	for i := range ss {
		if ss[i].Meta.Extra == nil {
			ss[i].Meta.Extra = map[string]string{}
		}
		ss[i].Meta.Extra["partial"] = "true"
	}
	FillMeta(ss, r.Meta)
	s.out.Samples = append(s.out.Samples, ss...)
}

// parse reads the client's output; on a partial failure (rows, then the
// tool's failure) it returns those rows' samples beside the error.
func (s *pairWorkload) parse(ctx context.Context, env *Env, r *PairRun, cr *proto.ProcResult) ([]results.Sample, string, results.ParseNote, error) {
	var none results.ParseNote
	if env.Parse == nil {
		return nil, "", none, nil
	}
	data, source := []byte(cr.Stdout), "text"
	if r.JSONRel != "" {
		h, err := env.Host(r.Client.Host)
		if err != nil {
			return nil, "", none, err
		}
		fd, err := rpc.Invoke(ctx, h, rpc.FilesRead, proto.FilesReadParams{Path: r.JSONRel, MaxBytes: proto.OutputLimit})
		if err != nil {
			return nil, "", none, fmt.Errorf("read %s JSON report %q on host %q: %w", s.w.Tool, r.JSONRel, r.Client.Host, err)
		}
		// Masked before the parser sees it, as the client's stdout is
		// (maskOutputs): a parse error quotes the report's text, cut.
		data, source = fd.Data, "json"
		if fd.Truncated && env.MaskCut != nil {
			data = []byte(env.MaskCut(string(data), false, true))
		} else {
			data = []byte(MaskText(env, string(data)))
		}
	}
	ss, note, err := env.Parse(s.w.Tool, data, []byte(cr.Stderr), source == "json")
	if err != nil && source == "json" {
		// A perftest JSON report that cannot be read is not the end: the
		// text report on stdout says the same.
		env.logger().Warn("perftest JSON report unusable, reading the text report", "host", r.Client.Host, "handle", r.Client.Handle, "err", err)
		jerr := err
		source = "text"
		ss, note, err = env.Parse(s.w.Tool, []byte(cr.Stdout), []byte(cr.Stderr), false)
		if err == nil {
			note = results.NewParseNote(note.Unread, append(note.Notes, "the JSON report was unusable, the text report was read instead: "+jerr.Error()), note.Bidirectional)
		}
	}
	if err != nil {
		for i := range ss {
			if ss[i].Meta.Extra == nil {
				ss[i].Meta.Extra = map[string]string{}
			}
			ss[i].Meta.Extra["source"] = source
		}
		return ss, source, note, fmt.Errorf("parse %s output (%s) of %q on host %q: %w", s.w.Tool, source, r.Client.Handle, r.Client.Host, err)
	}
	for i := range ss {
		if ss[i].Meta.Extra == nil {
			ss[i].Meta.Extra = map[string]string{}
		}
		ss[i].Meta.Extra["source"] = source
	}
	return ss, source, note, nil
}

// RDMAEnd is what one trial of a two-sided RDMA tool runs with beyond
// its planned argv: the two devices as their device-create steps reported
// them, the path MTU of the pair and the trial's port.
type RDMAEnd struct {
	Server, Client *proto.DeviceInfo
	MTU, Port      int
}

// NewRDMAPair is the op of a two-sided RDMA tool between the workload's
// two devices. It runs the plan's trials (Workload.Trials): each trial's
// argv as engine/plan resolved it through the family's argv hook, with
// the placeholders filled (kinds.Fill) from what the device-create steps
// reported. sides adds what only the run knows beyond those values (the
// server's Ready, perftest's JSON report file).
func NewRDMAPair(w *Workload, sides func(env *Env, r *PairRun, e RDMAEnd)) Op {
	s := &pairWorkload{w: w, desc: fmt.Sprintf("%s %s: rxe %s (server) <- rxe %s (client)", w.Tool, w.Name, w.ServerDevice, w.ClientDevice)}
	s.build = func(env *Env, u kinds.Planned) (*PairRun, error) {
		srv, cli, mtu, err := rdmaEnds(env, w)
		if err != nil {
			return nil, err
		}
		vals := kinds.Values{kinds.ServerGID: strconv.Itoa(srv.GIDIndex), kinds.ClientGID: strconv.Itoa(cli.GIDIndex), kinds.ServerAddr: srv.IPv4,
			kinds.ServerDev: srv.Name, kinds.ClientDev: cli.Name}
		if mtu > 0 {
			vals[kinds.PathMTU] = strconv.Itoa(mtu)
		} else { // no device said: the tool picks its own, as before
			u.Server, u.Client = kinds.Omit(u.Server, kinds.PathMTU), kinds.Omit(u.Client, kinds.PathMTU)
		}
		r := &PairRun{Meta: rdmaMeta(env, w, srv, cli, mtu, u.Size, u.Repeat)}
		r.Server = ProcSpec{Host: w.ServerHost, Handle: Handle(w, "server", u.Size, u.Repeat), Role: "server"}
		r.Client = ProcSpec{Host: w.ClientHost, Handle: Handle(w, "client", u.Size, u.Repeat), Role: "client"}
		if r.Server.Argv, err = kinds.Fill(w.Name, u.Server, vals); err != nil {
			return nil, err
		}
		if r.Client.Argv, err = kinds.Fill(w.Name, u.Client, vals); err != nil {
			return nil, err
		}
		sides(env, r, RDMAEnd{Server: srv, Client: cli, MTU: mtu, Port: u.Port})
		return r, nil
	}
	return s
}

// rdmaEnds returns the rxe info of both ends of an RDMA workload and the
// smaller active MTU of the two.
func rdmaEnds(env *Env, w *Workload) (srv, cli *proto.DeviceInfo, mtu int, err error) {
	if srv, err = env.Device(w.ServerDevice); err != nil {
		return nil, nil, 0, fmt.Errorf("workload %q server: %w", w.Name, err)
	}
	if cli, err = env.Device(w.ClientDevice); err != nil {
		return nil, nil, 0, fmt.Errorf("workload %q client: %w", w.Name, err)
	}
	mtu = srv.ActiveMTU
	if cli.ActiveMTU != 0 && (mtu == 0 || cli.ActiveMTU < mtu) {
		mtu = cli.ActiveMTU
	}
	if srv.IPv4 == "" {
		return nil, nil, 0, fmt.Errorf("workload %q: rxe %q on host %q has no IPv4 address on %s for the client to reach", w.Name, srv.Name, w.ServerHost, srv.Netdev)
	}
	return srv, cli, mtu, nil
}

func rdmaMeta(env *Env, w *Workload, srv, cli *proto.DeviceInfo, mtu int, size int64, rep int) results.Meta {
	gid := cli.GIDIndex
	m := results.Meta{
		Workload: w.Name, Tool: w.Tool, Size: size, Iterations: w.Iterations, Repeat: rep,
		Hosts: []string{w.ServerHost, w.ClientHost}, Devices: []string{srv.Name, cli.Name},
		GIDIndex: &gid, MTU: mtu, Transport: w.Transport, QPs: w.QPs,
	}
	if t, ok := env.HostFacts(w.ClientHost).Tools[w.Tool]; ok {
		m.ToolVersion = t.Version
	}
	return m
}

// reportedSize is the one message size the parsed samples of a run report,
// or 0 when they report none or several.
func reportedSize(ss []results.Sample) int64 {
	var size int64
	for _, s := range ss {
		switch {
		case s.Meta.Size == 0:
		case size == 0:
			size = s.Meta.Size
		case s.Meta.Size != size:
			return 0
		}
	}
	return size
}
