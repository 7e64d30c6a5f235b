package vm

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/results"
)

// TestE2EStudentCheck runs `rlab check --validate -json` (the student check)
// on a one-student class lab of two local VMs with real rdma_rxe: the pair
// passes with the lab's thresholds (exit 0, student ready), and with a
// latency threshold no Soft-RoCE pair can meet the same check fails (exit 1)
// naming the expect, what it wanted and what it read. Each check boots its
// VMs, creates the rxe devices it needs and removes them again.
func TestE2EStudentCheck(t *testing.T) {
	bin := e2eBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root := e2eImage(ctx, t)
	type report struct {
		Pass     bool              `json:"pass"`
		Students []results.Student `json:"students"`
		RunDir   string            `json:"run_dir"`
	}
	for _, tc := range []struct {
		name     string
		vars     []string
		wantCode int
		status   string
	}{
		{"pair works", nil, 0, results.StudentReady},
		{"impossible latency threshold", []string{"-var", "max_write_lat_us=1"}, 1, results.StudentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "check")
			args := append([]string{"check", "--validate", "-json", "--out", out}, tc.vars...)
			args = append(args, filepath.Join("testdata", "vm", "class-check.hcl"))
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = root
			var stderr strings.Builder
			cmd.Stderr = &stderr
			b, err := cmd.Output()
			t.Logf("rlab %s:\n%s\n%s", strings.Join(args, " "), b, stderr.String())
			checkNoQEMU(t, out)
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d", code, tc.wantCode)
			}
			var r report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("check -json output: %v", err)
			}
			if r.Pass != (tc.wantCode == 0) || len(r.Students) != 1 || r.Students[0].Key != "ana" {
				t.Fatalf("report: %+v", r)
			}
			s := r.Students[0]
			if s.Status != tc.status {
				t.Errorf("student ana: status %q (%s), want %q", s.Status, s.Reason, tc.status)
			}
			checkRXETeardown(t, out)
			if tc.wantCode == 0 {
				if s.OK != 2 || len(s.FailedExpects) != 0 {
					t.Errorf("student ana: %d ok, failed expects %+v", s.OK, s.FailedExpects)
				}
				return
			}
			// Only the latency expect can fail: bandwidth kept its threshold.
			if len(s.FailedExpects) != 1 || s.FailedExpects[0].Workload != `write_lat["ana"]` {
				t.Fatalf("failed expects: %+v", s.FailedExpects)
			}
			if fe := s.FailedExpects[0]; !strings.Contains(fe.Condition, "lat_typical") || fe.Value == nil || !strings.Contains(*fe.Value, "lat_typical") {
				t.Errorf("failed expect does not say what it wanted and what it read: %+v", fe)
			}
		})
	}
}
