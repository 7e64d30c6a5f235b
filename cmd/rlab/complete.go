package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlab-dev/rlab/engine/lab"
)

// labNames are the names of a lab a user types on the command line:
// workload names (block labels), instance addresses of for_each workloads,
// for_each keys (students) and host names.
type labNames struct {
	Workloads, Instances, Students, Hosts []string
}

// namesOf lists the names of l, each once, in file order.
func namesOf(l *lab.Lab) labNames {
	var n labNames
	seen := map[string]bool{}
	add := func(dst *[]string, s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			*dst = append(*dst, s)
		}
	}
	for _, w := range l.Workloads {
		block, rest, keyed := strings.Cut(w.Name, "[")
		add(&n.Workloads, block)
		if keyed && strings.HasPrefix(rest, `"`) {
			add(&n.Instances, w.Name)
		}
	}
	keyOf := func(name string) string {
		_, rest, ok := strings.Cut(name, `["`)
		if !ok {
			return ""
		}
		return strings.TrimSuffix(rest, `"]`)
	}
	for _, w := range l.Workloads {
		add(&n.Students, keyOf(w.Name))
	}
	for _, x := range l.Devices {
		add(&n.Students, keyOf(x.Name))
	}
	clear(seen) // host names are their own namespace
	for _, h := range l.Hosts {
		add(&n.Hosts, h.Block) // every instance (rlab facts --host)
		add(&n.Hosts, h.Name)
	}
	return n
}

// completeLabArgs completes the arguments of the lab commands that parse
// their own flags (run, plan, check, facts): --only takes workload names,
// student keys and instance addresses of the lab named on the line, --host
// (facts) its host names and block labels; a lab path completes as a .hcl
// file or a folder.
func completeLabArgs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	prefix, ok, flag := "", false, ""
	for _, f := range []string{"only", "host"} {
		if cmd.Flags().Lookup(f) == nil {
			continue
		}
		switch {
		case strings.HasPrefix(toComplete, "--"+f+"="):
			prefix, toComplete, ok, flag = "--"+f+"=", strings.TrimPrefix(toComplete, "--"+f+"="), true, f
		case len(args) > 0 && args[len(args)-1] == "--"+f:
			ok, flag = true, f
		}
	}
	if !ok {
		if strings.HasPrefix(toComplete, "-") {
			var fl []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					fl = append(fl, "--"+f.Name+"\t"+f.Usage)
				}
			})
			return fl, cobra.ShellCompDirectiveNoFileComp
		}
		return []string{"hcl"}, cobra.ShellCompDirectiveFilterFileExt
	}
	path := labPathArg(cmd, args)
	if path == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	guard := guardEval(io.Discard, path) // a completion that costs too much completes nothing
	l, diags := lab.Load([]string{path}, lab.LoadOptions{Env: os.Environ()})
	guard.stop()
	if l == nil || diags.HasErrors() {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	// --only takes comma-separated values: complete the last one.
	done := ""
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done = toComplete[:i+1]
	}
	n := namesOf(l)
	type group struct {
		names []string
		what  string
	}
	groups := []group{{n.Workloads, "workload"}, {n.Students, "student"}, {n.Instances, "instance"}}
	if flag == "host" { // rlab facts --host: host names and block labels
		groups = []group{{n.Hosts, "host"}}
	}
	var out []string
	for _, group := range groups {
		for _, name := range group.names {
			out = append(out, prefix+done+name+"\t"+group.what)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// labPathArg finds the lab path among a lab command's arguments: the first
// that is not a flag or a flag's value.
func labPathArg(cmd *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := cmd.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" && f.Value.Type() != "bool" {
				i++ // its value
			} else if f == nil && name == "var" {
				i++
			}
			continue
		}
		if _, err := os.Stat(a); err == nil {
			return a
		}
	}
	return ""
}

// wireCompletion gives every lab command that parses its own flags the
// completion of lab names (cobra hands such commands all their arguments).
func wireCompletion(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.DisableFlagParsing && (c.Flags().Lookup("only") != nil || c.Flags().Lookup("host") != nil) && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = completeLabArgs
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// suggestFlag adds a did-you-mean to an unknown-flag error of pflag
// ("unknown flag: --kep" → "did you mean --keep?"), from the command's
// flags; other errors pass through.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	_, bad, ok := strings.Cut(msg, "unknown flag: --")
	if !ok {
		return err
	}
	bad, _, _ = strings.Cut(bad, " ")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	type cand struct {
		name string
		d    int
	}
	var best []cand
	for _, n := range names {
		d := levenshtein.Distance(bad, n, nil)
		if d <= max(1, len(bad)/3) || (len(bad) >= 3 && strings.HasPrefix(n, bad)) {
			best = append(best, cand{n, d})
		}
	}
	if len(best) == 0 {
		return err
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	var ss []string
	for _, c := range best {
		ss = append(ss, "--"+c.name)
	}
	if len(ss) > 3 {
		ss = ss[:3]
	}
	return fmt.Errorf("%w; did you mean %s?", err, strings.Join(ss, " or "))
}

// flagError is the root's FlagErrorFunc: an unknown flag gets a
// did-you-mean and the error is a usage error (exit 1).
func flagError(cmd *cobra.Command, err error) error {
	err = suggestFlag(cmd.Flags(), err)
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return withCode(exitFail, fmt.Errorf("%s: %w (see rlab %s --help)", cmd.Name(), err, cmd.Name()))
}
