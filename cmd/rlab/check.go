package main

import (
	"encoding/json"
	"fmt"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/preflight"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var f hostFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [-json] [-var NAME=VALUE]... PATH",
		Short: "Check that every host can run the lab (preflight), without changing anything",
		Long: `check connects to every host of the lab, gathers its facts (shipping the agent
when needed) and lists every problem that would stop the lab: a kernel without
rdma_rxe, missing perftest/rping/tcpdump, a netdev that does not exist or has
no IPv4 address, RLIMIT_MEMLOCK too low, too little disk, root needed but not
available. Each problem names the host and the fix.

Exit status: 0 every host is ready; 1 problems found; 2 some host could not
be reached (its error is printed; the others are still checked).`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			rest, done, err := parseLabFlags(cmd, args)
			if done || err != nil {
				return err
			}
			if len(rest) != 1 {
				return withCode(exitFail, fmt.Errorf("check: want one lab file or folder, got %d arguments (see rlab check --help)", len(rest)))
			}
			l, err := loadForHosts(cmd, rest[0], &f)
			if err != nil {
				return err
			}
			res, _, err := f.gather(cmd.Context(), l, cmd.ErrOrStderr())
			if err != nil {
				return withCode(exitInfra, err)
			}
			facts := map[string]*proto.Facts{}
			var unreach []string
			for _, r := range res {
				if r.Err != nil {
					unreach = append(unreach, r.Err.Error())
					continue
				}
				facts[r.Name] = r.Facts
			}
			problems := preflight.Check(l, facts)
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if unreach == nil {
					unreach = []string{}
				}
				if problems == nil {
					problems = []preflight.Problem{}
				}
				if err := enc.Encode(map[string]any{"problems": problems, "unreachable": unreach}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(w, p.String())
				}
				for _, u := range unreach {
					fmt.Fprintln(w, firstLineOf(u))
				}
			}
			switch {
			case len(unreach) > 0:
				return withCode(exitInfra, fmt.Errorf("%d of %d hosts could not be reached; %d problems on the others", len(unreach), len(res), len(problems)))
			case len(problems) > 0:
				return withCode(exitFail, fmt.Errorf("%d problems: the lab cannot run on these hosts as they are", len(problems)))
			}
			if !asJSON {
				fmt.Fprintf(w, "all %d hosts ready\n", len(res))
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print problems and unreachable hosts as JSON")
	return cmd
}
