package main

import (
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
		newImageCmd(),
		newReportCmd(), newGraphCmd(),
		newRunCmd(),
		newDownCmd(),
		newFactsCmd(), newCheckCmd(), newProvisionCmd(), newMuxCmd(),
		newValidateCmd(), newPlanCmd(), newFmtCmd(), newInitCmd(),
	)
	wireCompletion(root)
	return root
}
