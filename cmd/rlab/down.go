package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/engine/remote"
	runengine "github.com/rlab-dev/rlab/engine/run"
	"github.com/rlab-dev/rlab/engine/sshx"
)

func newDownCmd() *cobra.Command {
	var acceptNew bool
	var knownHosts []string
	cmd := &cobra.Command{
		Use:   "down RUN_DIR",
		Short: "Undo what a run left behind, from its state.json (no lab file needed)",
		Long: `down reads RUN_DIR/state.json and undoes what the run created and did not undo
itself: rxe devices it created (not those it found, nor kept ones), processes
and captures still running, and its local VMs. Running it twice is harmless.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn := &runengine.SSHConnector{
				SSH:    sshx.Options{KnownHosts: knownHosts, AcceptNewHostKeys: acceptNew},
				Agents: remote.NewPackedAgents(dist.Packed),
			}
			defer conn.Close()
			res, err := runengine.Down(cmd.Context(), args[0], runengine.DownOptions{Connector: conn, StopVMs: runengine.StopVMs})
			if res != nil {
				for _, u := range res.Undone {
					fmt.Fprintf(cmd.OutOrStdout(), "undone %s\n", u)
				}
			}
			if err != nil {
				return withCode(exitInfra, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s is down\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&acceptNew, "accept-new-host-keys", false, "trust and record unknown host keys")
	cmd.Flags().StringArrayVar(&knownHosts, "known-hosts", nil, "known_hosts file to verify host keys with")
	return cmd
}
