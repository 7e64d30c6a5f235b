package main

import (
	"strings"
	"testing"
)

// rlab plan --only plans what rlab run --only would run: for a student key,
// that student's hosts (and the bastion they go through) and nobody else's.
func TestPlanOnly(t *testing.T) {
	const lab = "../../labs/class.hcl"
	for _, tc := range []struct {
		name    string
		only    string
		code    int
		want    []string
		notWant []string
	}{
		{"student key", "ana", exitOK,
			[]string{`host server["ana"]`, `host client["ana"]`, "host bastion", `write_bw["ana"]`, "3 workloads"},
			[]string{`["bea"]`, `["abe"]`}},
		{"one instance", `write_lat["bea"]`, exitOK,
			[]string{`host server["bea"]`, `write_lat["bea"]`, "1 workloads"},
			[]string{`write_bw["bea"]`, `["ana"]`}},
		{"workload name: every student", "pingpong", exitOK,
			[]string{`pingpong["ana"]`, `pingpong["bea"]`},
			[]string{`write_bw[`}},
		{"unknown", "zed", exitFail, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errText := execute(t, newPlanCmd(), "--only", tc.only, lab)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errText)
			}
			if tc.code != exitOK {
				if !strings.Contains(errText, tc.only) {
					t.Errorf("error does not name %q: %s", tc.only, errText)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("plan lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("plan has %q", w)
				}
			}
		})
	}
}
