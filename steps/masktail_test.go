package steps

import (
	"io"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// TestMaskOutputsTruncated: a process's output tails the agent cut
// (Truncated: it keeps the last proto.OutputLimit bytes) may start with
// the end of a sensitive value, which masking the tail as a whole did not
// match (found in attack round 12, high, with proto.Error's cuts): a
// truncated result goes through Env.MaskCut (lab.Replacer.ReplaceCut).
func TestMaskOutputsTruncated(t *testing.T) {
	const secret = "CANARY-TOKEN-0123456789ab"
	red := lab.Redactor([]string{secret})
	env := &Env{
		Mask:    func(_ string, w io.Writer) io.WriteCloser { return lab.MaskWriter([]string{secret}, w) },
		MaskCut: red.ReplaceCut,
	}
	for _, tc := range []struct {
		name      string
		truncated bool
		want      string
	}{
		{"cut by the agent", true, "(sensitive) then failed; " + "(sensitive)"},
		{"whole", false, "6789ab then failed; (sensitive)"}, // a text not cut: its start is its own
	} {
		r := proto.ProcResult{Truncated: tc.truncated, Stderr: "6789ab then failed; " + secret, Stdout: secret[5:]}
		maskOutputs(env, &r)
		if r.Stderr != tc.want {
			t.Errorf("%s: stderr %q, want %q", tc.name, r.Stderr, tc.want)
		}
		if tc.truncated && strings.Contains(r.Stdout, "6789ab") {
			t.Errorf("%s: stdout %q keeps the value's end", tc.name, r.Stdout)
		}
	}
}
