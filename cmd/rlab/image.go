package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build, list and prune the Debian VM images used for local `vm {}` hosts",
	}
	cmd.AddCommand(newImageBuildCmd(), newImageListCmd(), newImagePruneCmd())
	return cmd
}

func newImageListCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cached VM images with their size, age and whether this rlab boots them",
		Long: `list shows each folder of the image cache (--dir, default $RLAB_CACHE or
/var/tmp/rlab-cache): its size on disk, its age, and its state: "current" (what
this rlab builds and boots for its release), "in use" (a running VM or a build
has it open), or why it is unused (an older recipe, incomplete, left by a
failed build). rlab image prune removes the unused ones.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = image.CacheDir()
			}
			list, err := image.List(dir)
			if err != nil {
				return withCode(exitFail, err)
			}
			out := cmd.OutOrStdout()
			if len(list) == 0 {
				fmt.Fprintf(out, "no images in %s\n", dir)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tSIZE\tAGE\tSTATE")
			var total int64
			for _, c := range list {
				total += c.Bytes
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termText(c.Name), mib(c.Bytes), age(time.Since(c.Built)), cacheState(c))
			}
			tw.Flush()
			fmt.Fprintf(out, "%s in %s\n", mib(total), dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "image cache folder (default $RLAB_CACHE or /var/tmp/rlab-cache)")
	return cmd
}

func newImagePruneCmd() *cobra.Command {
	var dir string
	var all, dryRun bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove cached VM images this rlab no longer boots (--all: every image not in use)",
		Long: `prune removes the folders of the image cache (--dir) that this rlab never
boots: images of an older recipe, incomplete ones, and what a failed build left.
With --all it removes the current images too (the next local-VM run builds
again, a few minutes). It never removes an image a running VM or a build has
open. --dry-run lists what it would remove.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = image.CacheDir()
			}
			gone, err := image.Prune(dir, all, dryRun)
			out := cmd.OutOrStdout()
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			var total int64
			for _, c := range gone {
				total += c.Bytes
				fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, termText(c.Name), mib(c.Bytes), cacheState(c))
			}
			if err != nil {
				return withCode(exitFail, err)
			}
			if len(gone) == 0 {
				fmt.Fprintf(out, "nothing to prune in %s\n", dir)
				return nil
			}
			fmt.Fprintf(out, "%s %s in all\n", verb, mib(total))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "image cache folder (default $RLAB_CACHE or /var/tmp/rlab-cache)")
	cmd.Flags().BoolVar(&all, "all", false, "also remove the current images (never one in use)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func cacheState(c image.Cached) string {
	switch {
	case c.InUse && c.Why != "":
		return "in use: " + c.Why
	case c.InUse:
		return "current, in use"
	case c.Current:
		return "current"
	}
	return "unused: " + c.Why
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// age says how old something is in the largest whole unit.
func age(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
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
