package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/spf13/cobra"
)

func newFactsCmd() *cobra.Command {
	var f hostFlags
	var asJSON bool
	var hosts []string
	cmd := &cobra.Command{
		Use:   "facts [-json] [--host NAME]... [-var NAME=VALUE]... PATH",
		Short: "Show what every host of a lab can do (kernel, netdevs, RDMA devices, rdma_rxe, tools)",
		Long: `facts connects to every host of the lab at once, ships the agent (only when the
host lacks that exact build) and prints each host's facts: kernel, OS, netdevs
with MTU and addresses, RDMA devices with their GID tables, whether the kernel
has rdma_rxe, the RDMA tools and their versions, RLIMIT_MEMLOCK and free disk.
A host that cannot be reached is reported on its own line; the others are
still printed. -json prints one object keyed by host name. --host gathers only
the hosts named (a host's name, or its block label for every instance; through
their jump hosts as usual).

Exit status: 0 every host answered; 2 some host could not be reached.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(rest) != 1 {
				return withCode(exitFail, fmt.Errorf("facts: want one lab file or folder, got %d arguments (see rlab facts --help)", len(rest)))
			}
			l, err := loadForHosts(cmd, rest[0], &f)
			if err != nil {
				return err
			}
			if l, err = selectHosts(l, hosts); err != nil {
				return err
			}
			res, _, err := f.gather(cmd.Context(), l, cmd.ErrOrStderr())
			if err != nil {
				return withCode(exitInfra, err)
			}
			res = shownFacts(l, res)
			if asJSON {
				err = writeFactsJSON(cmd.OutOrStdout(), res)
			} else {
				err = writeFactsTable(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return err
			}
			if n := unreachable(res); n > 0 {
				return withCode(exitInfra, fmt.Errorf("%d of %d hosts could not be reached", n, len(res)))
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	f.registerRefresh(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: one object per host, keyed by host name")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, `gather only this host: its name (server["ana"]) or block label (every instance); repeatable or comma-separated`)
	return cmd
}

func loadForHosts(cmd *cobra.Command, path string, f *hostFlags) (*lab.Lab, error) {
	lo, err := f.vf.options()
	if err != nil {
		return nil, err
	}
	guard := guardEval(cmd.ErrOrStderr(), path)
	l, diags := lab.LoadOne(path, lo)
	guard.stop()
	// Facts and check are about the hosts themselves: a host no workload
	// uses is what they are for (an inventory), not worth a warning each.
	kept := diags[:0:0]
	for _, d := range diags {
		if d.Severity != hcl.DiagWarning || d.Summary != lab.UnusedHostSummary {
			kept = append(kept, d)
		}
	}
	diags = kept
	maskOutput(cmd, l)
	writeDiags(cmd.ErrOrStderr(), l, diags)
	if diags.HasErrors() || l == nil {
		return nil, withCode(exitFail, fmt.Errorf("lab %s is not valid", path))
	}
	return l, nil
}

func unreachable(res []remote.Result) int {
	n := 0
	for _, r := range res {
		if r.Err != nil {
			n++
		}
	}
	return n
}

func writeFactsJSON(w io.Writer, res []remote.Result) error {
	m := map[string]factsJSON{}
	for _, r := range res {
		if r.Err != nil {
			m[r.Name] = factsJSON{Error: r.Err.Error()}
		} else {
			m[r.Name] = factsJSON{Facts: r.Facts}
		}
	}
	return writeJSON(w, m)
}

func writeFactsTable(w io.Writer, res []remote.Result) error {
	tw := termsafe.NewTable(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tKERNEL\tARCH\tPLATFORM\tCPUS\tMEM\tRDMA_RXE\tRDMA DEVICES\tNETDEVS\tTOOLS")
	var errs []string
	for _, r := range res {
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\tunreachable\n", r.Name)
			errs = append(errs, r.Err.Error())
			continue
		}
		f := r.Facts
		var nds []string
		for _, nd := range f.Netdevs {
			if nd.Name == "lo" {
				continue
			}
			s := fmt.Sprintf("%s(%d)", nd.Name, nd.MTU)
			if len(nd.Addrs) > 0 {
				s += "=" + strings.Join(nd.Addrs, ",")
			}
			nds = append(nds, s)
		}
		var devs []string
		for _, d := range f.RDMA {
			s := d.Name + "/" + d.Driver
			if d.Driver == "hw" && d.NodeType == "RNIC" {
				s += "(iWARP)"
			}
			switch {
			case d.Parent != "":
				s += "@" + d.Parent
			case len(d.Netdevs) > 0: // siw, and hardware with a netdev (device/net)
				s += "@" + d.Netdevs[0]
			}
			devs = append(devs, s)
		}
		if len(devs) == 0 {
			devs = []string{"-"}
		}
		tools := sortedTools(f.Tools)
		if len(tools) == 0 {
			tools = []string{"-"}
		}
		// Every field but the lab's host name and the numbers is host text.
		l := termsafe.Line
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, l(f.Kernel), l(f.Arch), l(platformText(f.Platform)), f.CPUs, iec(int64(f.MemBytes)), l(f.RXEModule),
			l(strings.Join(devs, " ")), l(strings.Join(nds, " ")), l(strings.Join(tools, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range errs {
		fmt.Fprintln(w, firstLineOf(e))
	}
	return nil
}

// platformText is a host's platform in one table cell:
// virtualization/machine type/distribution/rdma-core, "-" for what is unknown.
func platformText(p proto.Platform) string {
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	distro := strings.TrimSpace(p.DistroID + " " + p.DistroVersion)
	rc := ""
	if p.RDMACore != "" {
		rc = "rdma-core " + p.RDMACore
	}
	return strings.Join([]string{or(p.Virtualization), or(p.Product), or(distro), or(rc)}, "/")
}

func iec(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// shownFacts is res as rlab facts prints it: each host's facts with the
// lab's sensitive values redacted in every text (a copy; numbers kept).
// The facts name the login user, the work dir under that user's home and
// the RDMA devices, and with user = var.login facts printed the value
// (attack round 14).
func shownFacts(l *lab.Lab, res []remote.Result) []remote.Result {
	if l == nil || len(l.Sensitive) == 0 {
		return res
	}
	red := lab.Redactor(l.Sensitive)
	out := slices.Clone(res)
	for i := range out {
		if out[i].Facts == nil {
			continue
		}
		b, err := json.Marshal(out[i].Facts)
		if err != nil {
			continue
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			continue
		}
		b, err = json.Marshal(lab.RedactJSON(red, v))
		var f proto.Facts
		if err != nil || json.Unmarshal(b, &f) != nil {
			continue
		}
		out[i].Facts = &f
	}
	return out
}
