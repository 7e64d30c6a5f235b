package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRootChildrenEnvironment: a root agent working for a user runs what it
// runs as root (provision's package manager) with root's HOME and none of
// the variables sudo may have kept of the user's, whatever it was handed.
// A sudo that keeps HOME (Ubuntu's before 19.10, or env_keep += HOME)
// handed the user's, and dpkg under provision's apt-get ran the
// `pre-invoke` hook of the user's ~/.dpkg.cfg as root; one keeping
// APT_CONFIG ran the user's apt.conf's DPkg::Pre-Invoke (attack round 12,
// high). Locale and terminal names stay.
func TestRootChildrenEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (PinRootPATH acts only for root)")
	}
	userHome := t.TempDir()
	keepEnv(t)
	// As a sudo keeping them hands them.
	t.Setenv("PATH", os.Getenv("PATH"))
	t.Setenv("HOME", userHome)
	t.Setenv("APT_CONFIG", userHome+"/apt.conf")
	t.Setenv("MODPROBE_OPTIONS", "-C "+userHome+"/m.conf")
	t.Setenv("TC_LIB_DIR", userHome)
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TERM", "xterm")
	if !PinRootPATH(&Owner{UID: 65534, GID: 65534}) {
		t.Fatal("PinRootPATH did nothing for root working for uid 65534")
	}
	want := map[string]string{"HOME": rootHome(), "PATH": RootPATH, "LANG": "C.UTF-8", "TERM": "xterm",
		"APT_CONFIG": "", "MODPROBE_OPTIONS": "", "TC_LIB_DIR": ""}
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
		{"modprobe and the like", func(argv []string) (string, error) {
			out, _, err := runCmd(context.Background(), argv[0], argv[1:]...)
			return out, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.run([]string{"/usr/bin/env"})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, l := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					got[k] = v
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("a root child's %s is %q; want %q (the user's HOME was %q)", k, got[k], v, userHome)
				}
			}
		})
	}
}

// keepEnv restores the whole environment after the test: PinRootPATH drops
// what it does not keep from this test process's.
func keepEnv(t *testing.T) {
	saved := os.Environ()
	t.Cleanup(func() {
		ownerPATH = "" // PinRootPATH's, which later tests must not inherit
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	})
}
