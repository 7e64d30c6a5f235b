package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/termsafe"
	"github.com/spf13/cobra"
)

func newMuxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mux",
		Short: "Inspect or stop the background process that keeps SSH logins open (--persist)",
		Long: `With --persist DURATION (or RLAB_PERSIST), rlab keeps the SSH logins to your
hosts open after a command ends, as OpenSSH's ControlPersist does: a background
rlab process per user holds them and later commands reuse them instead of
logging in again. It exits after DURATION with nothing in use.

It also keeps the agents those commands start on the hosts: the next command
gets the same agent process, released in between (everything the previous
command started stopped and undone), so nothing is started on the host.

It listens on a unix socket in a private folder ($XDG_RUNTIME_DIR/rlab, else
~/.cache/rlab/mux; mode 0700, refused otherwise), serves only your own user,
and checks each kept host key against known_hosts again whenever it is reused.
Stopping it ends every kept login and agent.

  rlab mux status   the connections and agents it holds (like ssh -O check)
  rlab mux stop     close them all and exit (like ssh -O exit)`,
	}
	cmd.AddCommand(newMuxStatusCmd(), newMuxStopCmd(), newMuxServeCmd())
	return cmd
}

func newMuxStatusCmd() *cobra.Command {
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the SSH connections the background process holds",
		Long:  "status lists the connections kept open by --persist. Exit status: 0 it runs; 1 none runs.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sshx.QueryMux(cmd.Context(), dir)
			if errors.Is(err, sshx.ErrNoMux) {
				fmt.Fprintln(cmd.OutOrStdout(), err)
				return withCode(exitFail, nil)
			}
			if err != nil {
				return withCode(exitInfra, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(out, "rlab mux running (pid %d, since %s, exits after %s idle), folder %s\n", st.PID, st.Started.Format(time.RFC3339), st.Persist, st.Dir)
			fmt.Fprintf(out, "%d connection(s) kept, %d client(s) attached\n", len(st.Upstream), st.Clients)
			if len(st.Upstream) == 0 {
				return nil
			}
			tw := termsafe.NewTable(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "HOST\tLOGIN\tVIA\tIN USE\tIDLE\tAGENTS KEPT")
			for _, c := range st.Upstream {
				via := c.Via
				if via == "" {
					via = "-"
				}
				idle := "-"
				if c.Users == 0 {
					idle = time.Since(c.LastUsed).Round(time.Second).String()
				}
				fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%d\t%s\t%d\n", c.Name, c.User, c.Addr, via, c.Users, idle, c.Kept)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&dir, "dir", "", "the mux folder (default $XDG_RUNTIME_DIR/rlab, else ~/.cache/rlab/mux)")
	return cmd
}

func newMuxStopCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Close every kept SSH connection and stop the background process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := sshx.StopMux(cmd.Context(), dir)
			if errors.Is(err, sshx.ErrNoMux) {
				fmt.Fprintln(cmd.OutOrStdout(), err)
				return nil
			}
			if err != nil {
				return withCode(exitInfra, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "rlab mux stopped: every kept connection closed")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the mux folder (default $XDG_RUNTIME_DIR/rlab, else ~/.cache/rlab/mux)")
	return cmd
}

// newMuxServeCmd is the daemon itself, started by the first command that
// dials with --persist; not for users.
func newMuxServeCmd() *cobra.Command {
	var dir string
	var persist time.Duration
	cmd := &cobra.Command{
		Use:    "serve",
		Short:  "Run the connection-keeping process (started by rlab itself)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sshx.ServeMux(cmd.Context(), sshx.MuxServeOptions{Dir: dir, Persist: persist,
				Handlers: map[string]sshx.MuxChannelHandler{remote.KeptAgentChannel: &remote.KeptAgents{}}}); err != nil {
				return withCode(exitInfra, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the mux folder")
	cmd.Flags().DurationVar(&persist, "persist", time.Minute, "exit after this long with nothing in use")
	return cmd
}
