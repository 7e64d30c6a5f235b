package steps

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
)

// reportHost answers files.read with data, truncated or not.
type reportHost struct {
	data      string
	truncated bool
}

func (h *reportHost) Name() string { return "c" }

func (h *reportHost) Send(_ context.Context, r *rpc.Request) error {
	if p, res, ok := rpc.Match(r, rpc.FilesRead); ok {
		*res = proto.FileData{Path: p.Path, Data: []byte(h.data), Size: int64(len(h.data)), Truncated: h.truncated}
	}
	return nil
}

// TestPairJSONReportMasked: perftest's JSON report, read back from the
// client host, is masked before the parser sees it, as the client's stdout
// is: a parse error quotes the report's text, and a report the host cut
// may end with a value's start (SECURITY's Known gaps, attack round 12).
func TestPairJSONReportMasked(t *testing.T) {
	const tok = "CANARYpairjson42"
	mask := func(s string) string { return strings.ReplaceAll(s, tok, "(sensitive)") }
	for _, tc := range []struct {
		name      string
		data      string
		truncated bool
	}{
		{"whole", `{"results": "` + tok + `"}`, false},
		{"cut inside the value", `{"results": "` + tok[:9], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen string
			env := &Env{
				Hosts: map[string]Host{"c": &reportHost{data: tc.data, truncated: tc.truncated}},
				Parse: func(_ string, out, _ []byte, _ bool) ([]results.Sample, results.ParseNote, error) {
					seen += string(out) // the JSON report, then the text one it falls back to
					return nil, results.ParseNote{}, errors.New("bad report: " + string(out))
				},
				Mask: func(_ string, w io.Writer) io.WriteCloser { return &maskTo{w: w, f: mask} },
				MaskCut: func(s string, start, end bool) string {
					if end && strings.HasSuffix(s, tok[:9]) {
						return strings.TrimSuffix(s, tok[:9]) + "(sensitive)"
					}
					return mask(s)
				},
			}
			s := &pairWorkload{w: &Workload{}}
			s.w.Tool = "ib_write_bw"
			r := &PairRun{Client: ProcSpec{Host: "c", Handle: "wl.c"}, JSONRel: "wl.c.json"}
			_, _, note, err := s.parse(t.Context(), env, r, &proto.ProcResult{})
			if !strings.HasPrefix(seen, `{"results": "`) {
				t.Fatalf("the parser read %q, not the report", seen)
			}
			for what, text := range map[string]string{"what the parser read": seen, "the error": err.Error(), "the parse note": strings.Join(note.Notes, "; ")} {
				if strings.Contains(text, tok[:9]) {
					t.Errorf("%s holds the value: %q", what, text)
				}
			}
		})
	}
}

// maskTo is a Mask writer that masks each write whole (enough here: the
// report is written at once).
type maskTo struct {
	w io.Writer
	f func(string) string
}

func (m *maskTo) Write(p []byte) (int, error) {
	io.WriteString(m.w, m.f(string(p)))
	return len(p), nil
}
func (m *maskTo) Close() error { return nil }
