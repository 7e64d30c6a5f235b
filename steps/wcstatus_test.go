package steps

import (
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestProcErrorNamesWCStatus: a perftest failure that prints a work
// completion status as a number names it. The stderr is ib_write_bw's in
// labs/cloud-bastion.hcl on the TCG VM pair (TestE2EExampleLabs, 20 s, 2
// QPs, 2026-11-26), the flake issue 13 asked about.
func TestProcErrorNamesWCStatus(t *testing.T) {
	tests := []struct {
		stderr, want string
	}{
		{" Completion with error at client\n Failed status 9: wr_id 0 syndrom 0x0\nscnt=1204, ccnt=952\n Failed to complete run_iter_bw function successfully\n",
			"(status 9 is IBV_WC_REM_INV_REQ_ERR: the responder rejected a request as invalid"},
		{" Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n", "(status 12 is IBV_WC_RETRY_EXC_ERR: transport retries exceeded"},
		{" Failed status 77: wr_id 0 syndrom 0x0\n", ""},
		{"Couldn't connect to 10.99.0.1:20010\n", ""},
	}
	for _, tt := range tests {
		err := ProcError("ib_write_bw", "client", "client", &proto.ProcResult{Argv: []string{"ib_write_bw", "10.99.0.1"}, ExitCode: 1, Stderr: tt.stderr})
		msg := err.Error()
		if !strings.Contains(msg, strings.TrimSpace(tt.stderr)) {
			t.Errorf("error lost the stderr: %s", msg)
		}
		if tt.want == "" {
			if strings.Contains(msg, "(status") {
				t.Errorf("named a status it does not know: %s", msg)
			}
			continue
		}
		if !strings.Contains(msg, "\n"+tt.want) {
			t.Errorf("error = %s\nwant a line %q", msg, tt.want)
		}
	}
}
