package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/down"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/results"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/rundir"
	"github.com/rlab-dev/rlab/engine/runstate"
	"github.com/rlab-dev/rlab/engine/sshx"
)

func newDownCmd() *cobra.Command {
	var acceptNew bool
	var knownHosts, identities []string
	var removeProvisioned, trustState bool
	cmd := &cobra.Command{
		Use:   "down [--remove-provisioned] RUN",
		Short: "Undo what a run left behind, from its state.json (no lab file needed)",
		Long: `down reads RUN/state.json and undoes what the run created and did not undo
itself: rxe devices it created (not those it found, nor kept ones), processes
and captures still running, link impairments (rlab's netem) still in force,
its local VMs, and each host's work dir for the run (logs, pcaps, whatever
its workloads wrote there; the run removes it itself once pulled, and keeps
it with --keep or when the pull failed). It lists what it undid ("(already gone)" when the run's
agent had removed it itself; a VM that had already stopped is "already
gone"), what it left in place and why (a process is
signalled only while its pid still has the start time and boot the run
recorded: "(gone; pid reused ...)"), and
how much was already undone (by the run itself or an earlier rlab down).
Packages a run installed (--provision) stay unless --remove-provisioned
is given, which removes exactly those, with the host's package manager.
Running it twice is harmless. RUN is a run directory or a run as rlab runs
names it (LAB/ID, or the id alone).

A run directory from someone else is read with care: down acts on a
state.json only as your own rlab wrote it (it signs the whole file with a
key in your config folder), since its become flag and the things it lists
decide what down stops and deletes, as root under become; one received,
edited since, or written by an rlab before state.json was signed whole is
refused unless you vouch for it with --trust-state. Even then a
known_hosts or identity_file it names outside the run directory is used
only when your own rlab signed that host's entry or you name the same
file (--known-hosts, -i), and the packages it lists are never removed.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRuns,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if _, err := os.Stat(dir); err != nil {
				if d, _, rerr := results.ResolveRun(results.DefaultRunsRoot, dir); rerr == nil {
					dir = d
				}
			}
			before, _ := readState(dir) // for the listing; down.Run reports its own read error
			var running map[string]bool
			if before != nil {
				running = runengine.RunningVMs(before.VMs)
			}
			conn := &runengine.SSHConnector{
				SSH:        sshx.Options{KnownHosts: knownHosts, AcceptNewHostKeys: acceptNew},
				Agents:     remote.NewPackedAgents(dist.Packed),
				Identities: identities,
			}
			defer conn.Close()
			res, err := down.Run(cmd.Context(), dir, down.Options{Connector: runengine.DownConnector(conn), StopVMs: runengine.StopVMs, RemoveProvisioned: removeProvisioned, TrustState: trustState, KnownHosts: knownHosts, Identities: identities})
			for _, l := range downListing(before, res, err == nil, removeProvisioned, running) {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			if err != nil {
				return withCode(exitInfra, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s is down\n", termText(dir))
			return nil
		},
	}
	cmd.Flags().BoolVar(&acceptNew, "accept-new-host-keys", false, "trust and record unknown host keys")
	cmd.Flags().StringArrayVar(&knownHosts, "known-hosts", nil, "known_hosts file to verify host keys with")
	cmd.Flags().StringArrayVarP(&identities, "identity", "i", nil, "identity file for hosts the run's state names none, and one a received state.json names that you trust (repeatable)")
	cmd.Flags().BoolVar(&removeProvisioned, "remove-provisioned", false, "also remove the packages the run installed (rlab run --provision); by default they stay")
	cmd.Flags().BoolVar(&trustState, "trust-state", false, "act on a state.json your rlab did not sign (a received run directory, or one from an older rlab): you vouch for the hosts, become and effects it lists")
	return cmd
}

func readState(dir string) (*runstate.State, error) {
	b, err := rundir.ReadFile(dir, runstate.File)
	if err != nil {
		return nil, err
	}
	// A received state.json is decoded only within bounds.
	st, err := runstate.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", runstate.File, err)
	}
	return st, nil
}

// downListing says what rlab down did, from state.json as it was before
// and down.Run's result: each thing undone, the VMs stopped, what was left in
// place and why, what was already undone, or that nothing was left.
// running says which VMs were still up before down (a VM not in it, or
// false, was already gone: down did not stop it); nil = not known.
func downListing(before *runstate.State, res *down.Result, ok, removeProvisioned bool, running map[string]bool) []string {
	var out []string
	if res != nil {
		for _, u := range res.Undone {
			out = append(out, "undone "+termText(u))
		}
		for _, l := range res.Left {
			out = append(out, termText(l))
		}
	}
	if before == nil {
		return out
	}
	var self int
	vmHost := map[string]bool{}
	for _, h := range before.Hosts {
		vmHost[h.Name] = h.VM
	}
	for _, e := range before.Effects {
		switch {
		case e.Undone:
			self++
		case e.Type == "rxe" && !e.Created:
			out = append(out, fmt.Sprintf("left rxe %s on host %s: it was there before the run", termText(e.ID), termText(e.Host)))
		case e.Type == "rxe" && e.Keep:
			out = append(out, fmt.Sprintf("left rxe %s on host %s: kept (keep = true or --keep)", termText(e.ID), termText(e.Host)))
		}
	}
	for _, h := range before.Hosts {
		if p := h.Provision; p != nil && len(p.Installed) > 0 && !p.Removed && !removeProvisioned && !h.VM {
			out = append(out, fmt.Sprintf("left packages %s on host %s: installed by the run's provisioning (--remove-provisioned removes them)", termText(strings.Join(p.Installed, " ")), termText(h.Name)))
		}
	}
	if ok && len(before.VMs) > 0 {
		for _, h := range before.Hosts {
			switch {
			case !h.VM:
			case running != nil && !running[h.Name]:
				out = append(out, "VM "+termText(h.Name)+" already gone")
			default:
				out = append(out, "stopped VM "+termText(h.Name))
			}
		}
	}
	if self > 0 {
		// Undone marks what the run's teardown undid and what an earlier
		// rlab down did alike: a second down must not credit the run.
		out = append(out, fmt.Sprintf("%d thing(s) already undone (by the run itself or an earlier rlab down)", self))
	}
	if len(out) == 0 {
		out = append(out, "nothing was left to undo")
	}
	return out
}
