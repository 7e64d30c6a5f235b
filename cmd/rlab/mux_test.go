package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMuxCmds(t *testing.T) {
	private := t.TempDir()
	os.Chmod(private, 0o700)
	loose := filepath.Join(t.TempDir(), "loose")
	os.Mkdir(loose, 0o755)
	os.Chmod(loose, 0o755)
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string // in stdout or stderr
	}{
		{[]string{"mux", "status", "--dir", private}, exitFail, "no rlab mux daemon is running"},
		{[]string{"mux", "status", "--dir", filepath.Join(private, "none")}, exitFail, "no rlab mux daemon is running"},
		{[]string{"mux", "stop", "--dir", private}, exitOK, "no rlab mux daemon is running"},
		{[]string{"mux", "status", "--dir", loose}, exitInfra, "has mode 0755: refusing it"},
		{[]string{"facts", "--persist", "soon", "lab.hcl"}, exitFail, `persist "soon": want a duration`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := rlab(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(out+errOut, tc.wantOut) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.wantCode, tc.wantOut, out, errOut)
			}
		})
	}
}

// --persist also sets RLAB_PERSIST, so commands that build their SSH
// options themselves (run, down) keep logins too.
func TestPersistFlagSetsEnv(t *testing.T) {
	t.Setenv("RLAB_PERSIST", "")
	var p persistFlag
	if err := p.Set("10m"); err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("RLAB_PERSIST"); got != "10m" || p.String() != "10m0s" {
		t.Errorf("RLAB_PERSIST=%q, flag %q", got, p.String())
	}
	if err := p.Set("off"); err != nil || p.d >= 0 || os.Getenv("RLAB_PERSIST") != "off" {
		t.Errorf("off: %v, %v, %q", err, p.d, os.Getenv("RLAB_PERSIST"))
	}
}
