package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rlab-dev/rlab/agent/dist"
	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/spf13/cobra"
)

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Export the agent this rlab ships, to install it root-owned for become",
	}
	cmd.AddCommand(newAgentExportCmd())
	return cmd
}

func newAgentExportCmd() *cobra.Command {
	var arch, out string
	cmd := &cobra.Command{
		Use:   "export --arch amd64|arm64 -o FILE",
		Short: "Write the agent build for an arch to FILE and print how to install it for become",
		Long: `export writes the agent this rlab embeds for linux/ARCH to FILE (-o - for
stdout) and prints its sha256, the install command that puts it where only root
can write (` + proto.SystemAgentDir + `/<sha256>/rlab-agent) and the sudoers
line that lets a login user start it with become. rlab starts that copy when it
is there; a root agent working for a user refuses to run from a file or folder
someone else can write (the user's own cache), since a sudoers rule naming such a
file gives the user root (SECURITY.md, "Running as non-root: sudoers").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return withCode(exitFail, fmt.Errorf("agent export: -o FILE is required (- for stdout)"))
			}
			if _, err := dist.GOARCH(arch); err != nil {
				return withCode(exitFail, fmt.Errorf("agent export --arch %q: want amd64 or arm64", arch))
			}
			bin, sum, err := dist.SHA256("linux", arch)
			if err != nil {
				return withCode(exitFail, fmt.Errorf("agent export --arch %s: %w", arch, err))
			}
			notes := cmd.OutOrStdout()
			if out == "-" {
				if _, err := cmd.OutOrStdout().Write(bin); err != nil {
					return withCode(exitFail, fmt.Errorf("agent export: write the agent to stdout: %w", err))
				}
				notes = cmd.ErrOrStderr()
			} else if err := writeAgentFile(out, bin); err != nil {
				return withCode(exitFail, err)
			}
			printAgentInstall(notes, out, arch, sum)
			return nil
		},
	}
	cmd.Flags().StringVar(&arch, "arch", "amd64", "the hosts' architecture: amd64 or arm64")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write the agent to (- for stdout)")
	return cmd
}

// writeAgentFile writes the agent to name, a new file or one it replaces;
// through a temp file and a rename, so a half-written agent is never there.
func writeAgentFile(name string, bin []byte) error {
	tmp := name + ".part"
	if err := os.WriteFile(tmp, bin, 0o755); err != nil {
		return fmt.Errorf("agent export: write %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("agent export: write %s: %w", name, err)
	}
	return nil
}

// printAgentInstall says how to install the exported agent root-owned and
// the sudoers rule that names it.
func printAgentInstall(w io.Writer, file, arch, sum string) {
	if file == "-" {
		file = "FILE"
	}
	fmt.Fprintf(w, "rlab-agent linux/%s sha256 %s\n", arch, sum)
	fmt.Fprintf(w, "install it as root on each host a non-root login runs labs on with become:\n")
	fmt.Fprintf(w, "  install -D -o root -g root -m 0755 %s %s\n", shellWord(file), proto.SystemAgentPath(sum))
	fmt.Fprintf(w, "and allow it in sudoers (visudo -f /etc/sudoers.d/rlab); for login USER (uid UID, gid GID, home HOME):\n")
	fmt.Fprintf(w, "  USER ALL=(root) NOPASSWD: sha256:%s %s serve --run-id * --work-dir HOME/.cache/rlab/runs/* --owner UID\\:GID\n", sum, proto.SystemAgentPath(sum))
	fmt.Fprintf(w, "never name the copy in the user's ~/.cache: the user can rewrite it between sudo's check and its exec (SECURITY.md)\n")
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/' || c == '+' || c == '=' || c == ':' || c == ',') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
