package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/provision"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/spf13/cobra"
)

// provisionFlags are the bounds of one host's provisioning (provision and
// run --provision).
type provisionFlags struct {
	lockWait time.Duration
	timeout  time.Duration
}

func (p *provisionFlags) options() provision.Options {
	return provision.Options{LockWait: p.lockWait, Timeout: p.timeout}
}

func newProvisionCmd() *cobra.Command {
	var f hostFlags
	var pf provisionFlags
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "provision [-json] [-var NAME=VALUE]... [--out DIR] PATH",
		Short: "Install what the lab needs on every host with the host's own package manager",
		Long: `provision connects to every host of the lab, gathers its facts and installs
what the lab needs there and the host lacks: the packages of the tools its
workloads use (perftest, ibverbs-utils, rdmacm-utils), tcpdump for its
captures, iproute2's rdma and kmod for its rxe devices, and on Ubuntu the
kernel's rdma_rxe (linux-modules-extra-$(uname -r)), then loads it. The
package names are those of the host's distribution family, from
/etc/os-release: apt-get (Debian, Ubuntu), dnf or yum (RHEL, Rocky, Alma,
Fedora, Amazon Linux), zypper (SUSE). It runs as root through the host's
become (sudo -n), never through a shell, only when something is missing: a
host that lacks nothing costs one facts call and no package-manager call.

apt-get runs with DEBIAN_FRONTEND=noninteractive and NEEDRESTART_MODE=a; a
dpkg lock held by another process (cloud-init, unattended-upgrades on a
fresh VM) is waited for up to --lock-wait, naming the holder; a package the
index lacks makes it refresh the index once; a transient mirror error is
retried twice. Each host's package-manager output is in
DIR/hosts/<host>/logs/provision.log and what was installed where in
DIR/provision.json (DIR: --out, default runs/<lab>/provision-<UTC timestamp>).
A host that fails (unknown distribution, a package its repositories lack,
repositories unreachable, sudo refused, disk full) is reported with its
error while the others go on. Ctrl-C lets an install under way finish its
transaction (up to 2 minutes) and says so.

Exit status: 0 every host has what the lab needs; 2 some host could not be
reached or provisioned.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(rest) != 1 {
				return withCode(exitFail, fmt.Errorf("provision: want one lab file or folder, got %d arguments (see rlab provision --help)", len(rest)))
			}
			l, err := loadForHosts(cmd, rest[0], &f)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("runs", l.Name, "provision-"+time.Now().UTC().Format("2006-01-02T150405Z"))
			}
			// Ctrl-C once: stop waiting; each host's agent lets an install
			// under way finish its transaction (bounded) before it exits,
			// and the host's result says so. Twice: exit at once.
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			finished := make(chan struct{})
			defer close(finished)
			go func() {
				select {
				case <-sigs:
					fmt.Fprintln(cmd.ErrOrStderr(), "interrupted: installs under way are let finish their transaction on the hosts (up to 2 minutes); Ctrl-C again to stop waiting")
					cancel()
				case <-finished:
					return
				}
				select {
				case <-sigs:
					os.Exit(exitInterrupted)
				case <-finished:
				}
			}()
			results, err := provisionHosts(ctx, l, &f, pf.options(), out, cmd.ErrOrStderr())
			if err != nil {
				return withCode(exitInfra, err)
			}
			if ctx.Err() != nil && cmd.Context().Err() == nil {
				writeProvisionTable(cmd.OutOrStdout(), results)
				return withCode(exitInterrupted, errors.New("provision interrupted"))
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, results); err != nil {
					return err
				}
			} else {
				writeProvisionTable(w, results)
				fmt.Fprintf(w, "provision directory: %s\n", out)
			}
			failed := 0
			for _, r := range results {
				if r.Error != "" {
					failed++
				}
			}
			if failed > 0 {
				return withCode(exitInfra, fmt.Errorf("%d of %d hosts could not be provisioned", failed, len(results)))
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	pf.register(cmd.Flags(), "")
	cmd.Flags().StringVar(&out, "out", "", "where the per-host logs and provision.json go (default runs/<lab>/provision-<UTC timestamp>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what each host got as JSON (host, family, manager, installed, present, error)")
	return cmd
}

func (p *provisionFlags) register(fs interface {
	DurationVar(*time.Duration, string, time.Duration, string)
}, prefix string) {
	fs.DurationVar(&p.lockWait, prefix+"lock-wait", 2*time.Minute, "how long to wait for another package manager (cloud-init, unattended-upgrades) to release its lock")
	fs.DurationVar(&p.timeout, prefix+"timeout", 10*time.Minute, "bound of each host's install")
}

// provisionHosts gathers every SSH host's facts and, on each host that
// lacks something, has its agent install it; one result per host in lab
// order. The per-host logs and provision.json go to dir.
func provisionHosts(ctx context.Context, l *lab.Lab, f *hostFlags, o provision.Options, dir string, stderr io.Writer) ([]provision.Result, error) {
	if len(l.Sensitive) > 0 {
		// provision.json and each provision.log go through rundir's one
		// writer, masked (SECURITY 209).
		defer rundir.Mask(dir, lab.Redactor(l.Sensitive))()
	}
	needs := map[string]provision.Need{}
	for _, n := range provision.Needs(l) {
		needs[n.Host.Name] = n
	}
	var mu sync.Mutex
	byHost := map[string]provision.Result{}
	var logErrs []error
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(stderr, termsafe.Line(fmt.Sprintf(format, args...)))
	}
	f.then = func(ctx context.Context, host string, a *remote.Agent, facts *proto.Facts) {
		p := provision.PlanHost(needs[host], facts)
		if len(p.Packages) > 0 && p.Err == nil {
			say("host %s: installing %s (%s)", host, strings.Join(p.Packages, " "), p.Family)
		}
		r := provision.Apply(ctx, a.RPC(), p, o)
		// The package manager's output (up to a reply line, 8 MiB) goes to
		// the host's provision.log now: what is kept of a host until all
		// are done is what the table and provision.json show.
		werr := writeProvisionLog(dir, l.HostByName(host), &r)
		switch {
		case r.Err != nil:
			say("host %s: FAILED: %s", host, firstLineOf(r.Err.Error()))
		case len(r.Installed) > 0:
			say("host %s: installed %s in %.1fs", host, strings.Join(r.Installed, " "), r.Seconds)
		default:
			say("host %s: nothing to install", host)
		}
		mu.Lock()
		byHost[host] = r
		if werr != nil {
			logErrs = append(logErrs, werr)
		}
		mu.Unlock()
	}
	defer func() { f.then = nil }()
	res, _, err := f.gather(ctx, l, stderr)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create provision directory: %w", err)
	}
	var out []provision.Result
	for _, g := range res {
		r, ok := byHost[g.Name]
		if !ok {
			r = provision.Result{Host: g.Name, Installed: []string{}}
			if g.Err != nil {
				r.Err = g.Err
				if h := l.HostByName(g.Name); h != nil && h.VM != nil {
					r.Err = fmt.Errorf("host %q is a local VM: it runs only during `rlab run`; use rlab run --provision", g.Name)
				}
				r.Error = r.Err.Error()
			}
		}
		out = append(out, r)
	}
	if err := errors.Join(logErrs...); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(map[string]any{"lab": l.Name, "hosts": out}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := rundir.WriteFile(filepath.Join(dir, "provision.json"), append(b, '\n')); err != nil {
		return nil, fmt.Errorf("write provision.json: %w", err)
	}
	return out, nil
}

// writeProvisionLog writes r.Log to the host's provision.log under dir and
// drops it from r.
func writeProvisionLog(dir string, h *lab.Host, r *provision.Result) error {
	if r.Log == "" || h == nil {
		return nil
	}
	logDir := filepath.Join(dir, "hosts", h.Slug, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return fmt.Errorf("write provision.log of host %q: %w", h.Name, err)
	}
	if err := rundir.WriteFile(filepath.Join(logDir, "provision.log"), []byte(r.Log)); err != nil {
		return fmt.Errorf("write provision.log of host %q: %w", h.Name, err)
	}
	r.Log = ""
	return nil
}

func writeProvisionTable(w io.Writer, rs []provision.Result) {
	tw := termsafe.NewTable(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tFAMILY\tINSTALLED\tSTATUS")
	var errs []string
	for _, r := range rs {
		inst := strings.Join(r.Installed, " ")
		if inst == "" {
			inst = "-"
		}
		status := "ready"
		if r.Error != "" {
			status = "failed"
			errs = append(errs, r.Error)
		}
		fam := string(r.Family)
		if fam == "" {
			fam = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Host, fam, inst, status)
	}
	tw.Flush()
	for _, e := range errs {
		fmt.Fprintln(w, termsafe.Block(e))
	}
}
