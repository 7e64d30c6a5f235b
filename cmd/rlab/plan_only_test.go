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

// rlab plan --provision plans what rlab run --provision would do: a
// provision step on every host between ship-agent and preflight; without
// it the quickstart (no provision = true) plans none.
func TestPlanProvision(t *testing.T) {
	const lab = "../../labs/quickstart.hcl"
	code, out, errText := execute(t, newPlanCmd(), "--provision", lab)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	for _, w := range []string{
		"   2. ship-agent ", "   3. provision       install what is missing of ibverbs-utils (ibv_rc_pingpong), iproute2 (rdma), kmod (modprobe), perftest (ib_write_bw, ib_write_lat), tcpdump, rdma_rxe",
		"   4. preflight ", "what is missing only the host's facts say, at run time",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("plan --provision lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, ". provision "); n != 2 {
		t.Errorf("%d provision steps, want one per host (2)", n)
	}
	_, out, _ = execute(t, newPlanCmd(), lab)
	if strings.Contains(out, "provision") {
		t.Errorf("plan without --provision has a provision step:\n%s", out)
	}
}
