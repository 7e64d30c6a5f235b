package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision/needs"
	"github.com/rlab-dev/rlab/engine/remote"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// hostFlags are the flags of the commands that reach a lab's hosts over
// SSH (facts, check).
type hostFlags struct {
	vf         varFlags
	acceptNew  bool
	parallel   int
	knownHosts []string
	identities []string
	verbose    bool
	persist    persistFlag
	refresh    bool // facts and check: --refresh
	// then, when set, runs on each host's open agent after its facts
	// (rlab provision).
	then func(ctx context.Context, host string, a *remote.Agent, f *proto.Facts)
}

// persistFlag is --persist. Setting it also sets RLAB_PERSIST for this
// process, which sshx.NewDialer reads when Options.Persist is 0, so every
// command that dials honours it, including those that build their
// sshx.Options themselves.
type persistFlag struct{ d time.Duration }

func (p *persistFlag) String() string {
	if p.d <= 0 {
		return ""
	}
	return p.d.String()
}
func (p *persistFlag) Type() string { return "duration" }
func (p *persistFlag) Set(s string) error {
	d, err := sshx.ParsePersist(s)
	if err != nil {
		return err
	}
	p.d = d
	return os.Setenv("RLAB_PERSIST", s)
}

// sshOptions are the SSH options these flags give.
func (h *hostFlags) sshOptions(log *slog.Logger) sshx.Options {
	return sshx.Options{KnownHosts: h.knownHosts, AcceptNewHostKeys: h.acceptNew, Persist: h.persist.d, Logger: log}
}

func (h *hostFlags) register(fs *pflag.FlagSet) {
	h.vf.register(fs)
	fs.BoolVar(&h.acceptNew, "accept-new-host-keys", false, "trust the host key of hosts no known_hosts has an entry for and record it in yours (--known-hosts, default ~/.ssh/known_hosts), never in a lab's (a changed key is always refused)")
	fs.IntVar(&h.parallel, "parallel", sshx.DefaultParallel, "at most this many at once in each phase: hosts connected and set up, and (run) local VMs booted, devices created, captures and workloads run, a group's members included")
	fs.StringArrayVar(&h.knownHosts, "known-hosts", nil, "your known_hosts file to verify host keys with; --accept-new-host-keys records in the first, and a key in it always wins over a lab's known_hosts (default ~/.ssh/known_hosts; repeatable)")
	fs.StringArrayVarP(&h.identities, "identity", "i", nil, "identity file for hosts the lab gives none (after ssh-agent; repeatable)")
	fs.BoolVarP(&h.verbose, "verbose", "v", false, "log connection details to stderr")
	fs.Var(&h.persist, "persist", "keep SSH logins open this long after use (e.g. 10m) in a background rlab process that later runs reuse, like OpenSSH's ControlPersist; default $RLAB_PERSIST, else off (see rlab mux)")
}

// registerRefresh adds --refresh (facts and check, which gather facts).
func (h *hostFlags) registerRefresh(fs *pflag.FlagSet) {
	fs.BoolVar(&h.refresh, "refresh", false, "ask every tool its version again instead of the agent's per-binary cache")
}

// specs turns the lab's SSH hosts into gather specs. Local VM hosts are not
// booted by these commands; they come back as per-host errors.
func (h *hostFlags) specs(l *lab.Lab) ([]remote.Spec, map[string]error) {
	var specs []remote.Spec
	skipped := map[string]error{}
	for _, host := range l.Hosts {
		if host.VM != nil {
			skipped[host.Name] = &localVMError{host: host.Name}
			continue
		}
		specs = append(specs, remote.Spec{Target: runengine.HostTarget(host, h.identities), KnownHosts: host.KnownHosts, Become: host.Become})
	}
	return specs, skipped
}

// localVMError is a gather result for a local VM host: not a failure to
// reach it, since it exists only while `rlab run` runs.
type localVMError struct{ host string }

func (e *localVMError) Error() string {
	return fmt.Sprintf("host %q is a local VM: it runs only during `rlab run`, which boots it", e.host)
}

func (h *hostFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if h.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// gather connects to every SSH host of the lab and returns each host's
// facts or error, by host name, in lab order.
func (h *hostFlags) gather(ctx context.Context, l *lab.Lab, stderr io.Writer) ([]remote.Result, remote.GatherStats, error) {
	specs, skipped := h.specs(l)
	log := h.logger(stderr)
	bar := newHostBar(stderr, len(specs))
	res, st, err := remote.Gather(ctx, specs, remote.GatherOptions{
		SSH:      h.sshOptions(log),
		Agents:   remote.NewPackedAgents(dist.Packed).WithLogger(log),
		Parallel: h.parallel,
		Progress: bar.progress,
		// The agent caches tool versions per unchanged binary; --refresh
		// asks every tool again.
		RefreshFacts: h.refresh,
		Packages:     needs.PackageNames(l),
		Then:         h.then,
		// Masked before an error is cut (SECURITY 195), redacted after.
		Mask: lab.ErrorMask(l.Sensitive),
	})
	bar.finish()
	if err != nil {
		return nil, st, err
	}
	log.Info("gathered facts", "hosts", st.Hosts, "failed", st.Failed, "agent_bytes_shipped", st.AgentBytes, "elapsed", st.Elapsed)
	if h.verbose || st.AgentBytes > 0 {
		fmt.Fprintf(stderr, "agent: %d bytes shipped to %d hosts (0 when every host had it cached)\n", st.AgentBytes, st.Hosts)
	}
	// Back in lab order, VM hosts included.
	byName := map[string]remote.Result{}
	for _, r := range res {
		byName[r.Name] = r
	}
	var out []remote.Result
	for _, host := range l.Hosts {
		if e, ok := skipped[host.Name]; ok {
			out = append(out, remote.Result{Name: host.Name, Err: e})
			continue
		}
		out = append(out, byName[host.Name])
	}
	// A host's error names how it was reached (user@address:port, the
	// key file, the jump): a sensitive value there is redacted, as rlab
	// run's status lines and the plan show it. facts, check and
	// provision printed it raw (and provision.json kept it).
	red := lab.Redactor(l.Sensitive)
	for i := range out {
		if e := out[i].Err; e != nil {
			if msg := red.Replace(e.Error()); msg != e.Error() {
				out[i].Err = &redactedError{msg: msg, err: e}
			}
		}
	}
	return out, st, nil
}

// redactedError is an error with the lab's sensitive values redacted from
// its text; errors.As still finds what it wraps.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// hostBar shows connecting/shipping progress on a terminal only.
type hostBar struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newHostBar(w io.Writer, n int) *hostBar {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) || n == 0 {
		return &hostBar{}
	}
	return &hostBar{bar: progressbar.NewOptions(n, progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("connecting, shipping the agent"),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionSetElapsedTime(true))}
}

func (b *hostBar) progress(host, stage string) {
	if b.bar == nil || (stage != "done" && stage != "failed") {
		return
	}
	b.mu.Lock()
	b.bar.Add(1)
	b.mu.Unlock()
}

func (b *hostBar) finish() {
	if b.bar != nil {
		b.bar.Finish()
	}
}

// factsJSON is one host in `rlab facts -json`.
type factsJSON struct {
	Facts *proto.Facts `json:"facts,omitempty"`
	Error string       `json:"error,omitempty"`
}

func sortedTools(t map[string]proto.Tool) []string {
	var names []string
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return termsafe.Line(s) // host text: no terminal escapes
}
