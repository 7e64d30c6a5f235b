package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRootChildrenGetRootsHome: a root agent working for a user runs what
// it runs as root (provision's package manager) with root's HOME, whatever
// HOME sudo handed it. A sudo that keeps HOME (Ubuntu's before 19.10, or
// env_keep += HOME) handed the user's, and dpkg under provision's apt-get
// ran the `pre-invoke` hook of the user's ~/.dpkg.cfg as root (attack
// round 12, high). The owner's own processes still get the owner's HOME.
func TestRootChildrenGetRootsHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (PinRootPATH acts only for root)")
	}
	userHome := t.TempDir()
	t.Setenv("PATH", os.Getenv("PATH")) // restored after PinRootPATH
	t.Setenv("HOME", userHome)          // as a sudo keeping HOME hands it
	if !PinRootPATH(&Owner{UID: 65534, GID: 65534}) {
		t.Fatal("PinRootPATH did nothing for root working for uid 65534")
	}
	for _, tc := range []struct {
		name string
		run  func(argv []string) (string, error)
	}{
		{"provision's package manager", func(argv []string) (string, error) {
			out, _, _, err := runManager(context.Background(), argv, []string{"DEBIAN_FRONTEND=noninteractive"}, time.Second, &provLog{})
			return out, err
		}},
		{"a command of provision's", func(argv []string) (string, error) {
			out, _, err := runCmdSplit(context.Background(), []string{}, argv)
			return out.stdout, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.run([]string{"/bin/sh", "-c", `printf %s "$HOME"`})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out); got == userHome || !filepath.IsAbs(got) || got != rootHome() {
				t.Errorf("a root child's HOME is %q; want root's %q, never the user's %q", got, rootHome(), userHome)
			}
		})
	}
}
