package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and inspect the Debian VM image used for local `vm {}` hosts",
	}
	cmd.AddCommand(newImageBuildCmd())
	return cmd
}

func newImageBuildCmd() *cobra.Command {
	var out, release, mirror, name string
	var force, verbose bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build (or reuse) the cached VM image: Debian with rdma_rxe, rdma-core, perftest, tcpdump, sshd",
		Long: `Builds the VM image local lab hosts boot: a Debian root file system (ext4)
plus its kernel and initrd, made with mmdebstrap from Debian packages. The image
is cached under --out (default $RLAB_CACHE or /var/tmp/rlab-cache) in a folder
named by the hash of its recipe, and rebuilt only when the recipe changes.
--image minimal builds the minimal variant instead (sshd and sudo, no RDMA
tools: what a lab's vm { image = "minimal" } boots, for provisioning).
Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := image.DefaultRecipe(release)
			switch {
			case name == image.VariantMinimal:
				r = image.MinimalRecipe(release)
			case name != "":
				r = image.RecipeFor(name)
			}
			r.Mirror = mirror
			opts := image.Options{Dir: out, Force: force}
			if opts.Dir == "" {
				opts.Dir = image.CacheDir()
			}
			stderr := cmd.ErrOrStderr()
			if !force {
				if im, err := image.Lookup(opts.Dir, r); err == nil {
					printImage(cmd.OutOrStdout(), im)
					return nil
				}
			}
			fmt.Fprintf(stderr, "building image %s in %s (a few minutes)\n", r.Name(), opts.Dir)
			var bar *progressbar.ProgressBar
			if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !verbose {
				bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(stderr),
					progressbar.OptionSpinnerType(14), progressbar.OptionSetElapsedTime(true),
					progressbar.OptionClearOnFinish())
				opts.Progress = func(stage int, line string) {
					desc := image.Stages[stage]
					if line != "" {
						desc += ": " + truncate(line, 50)
					}
					bar.Describe(desc)
					_ = bar.Add(1)
				}
			} else {
				opts.Progress = func(stage int, line string) {
					if line == "" {
						fmt.Fprintf(stderr, "image build: %s\n", image.Stages[stage])
					}
				}
			}
			if verbose {
				opts.Log = stderr
			}
			im, err := image.Ensure(cmd.Context(), r, opts)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return withCode(exitInfra, err)
			}
			printImage(cmd.OutOrStdout(), im)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "cache folder to build into (default $RLAB_CACHE or /var/tmp/rlab-cache)")
	cmd.Flags().StringVar(&release, "release", image.DefaultRelease, "Debian release to build")
	cmd.Flags().StringVar(&name, "image", "", "the image a lab's vm { image = NAME } names: minimal (of --release), <release>-minimal, or a release (default: the full image of --release)")
	cmd.Flags().StringVar(&mirror, "mirror", "", "Debian mirror URL (default: this machine's apt sources)")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild even when the image is cached")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show mmdebstrap's output")
	return cmd
}

func printImage(w io.Writer, im *image.Image) {
	how := fmt.Sprintf("built in %s", im.BuildTime.Round(1e9))
	if im.Cached {
		how = fmt.Sprintf("cached (built in %s on %s)", im.BuildTime.Round(1e9), im.BuiltAt.Format("2006-01-02 15:04Z"))
	}
	fmt.Fprintf(w, "image %s: %s\n", im.Dir, how)
	fmt.Fprintf(w, "  kernel %s, root file system %.0f MiB allocated (%.0f MiB sparse), %.0f MiB in all\n",
		im.Kver, float64(im.RootBytes)/(1<<20), float64(im.Apparent)/(1<<20), float64(im.Bytes())/(1<<20))
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
