package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rlab",
		Short: "Declarative labs for RDMA (Soft-RoCE) across VMs over SSH",
		Long: `rlab reads a lab file (HCL): hosts reached over SSH, the Soft-RoCE (rxe)
devices to create on their NICs, the RDMA workloads to run between them and the
packet captures to take. It ships a small agent to every host, runs it all, and
pulls back pcaps, logs and a structured result summary.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("rlab {{.Version}}\n")
	root.InitDefaultVersionFlag() // now, so --help and the docs test see it
	root.SetFlagErrorFunc(flagError)
	// Every command is registered here, in one visible place.
	root.AddCommand(
		newVersionCmd(),
		newPcapCmd(),
		newCompareCmd(),
		newRunsCmd(),
		newShowCmd(),
		newImageCmd(), newAgentCmd(),
		newReportCmd(), newGraphCmd(),
		newRunCmd(),
		newDownCmd(),
		newFactsCmd(), newCheckCmd(), newProvisionCmd(), newMuxCmd(),
		newValidateCmd(), newPlanCmd(), newFmtCmd(), newInitCmd(),
	)
	wireCompletion(root)
	rejectUnknownSubcommands(root)
	return root
}

// rejectUnknownSubcommands makes every command that only groups others
// (rlab, rlab image, rlab mux) fail on a word that names none of them,
// with a suggestion on one line: cobra would print the group's help and
// exit 0 (`rlab image lsit`), or, for the root, put its "Did you mean"
// on lines of their own behind a tab. Without arguments a group prints
// its help, as before.
func rejectUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		rejectUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return withCode(exitFail, unknownCommand(cmd, args[0]))
	}
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", strings.Join(s, `" or "`))
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("%s (commands: %s; see %s --help)", msg, strings.Join(names, ", "), cmd.CommandPath())
}
