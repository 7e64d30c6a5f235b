package main

import (
	"bytes"
	"testing"

	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/schollz/progressbar/v3"
)

func TestRunMaxPull(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"", 0, false}, // the engine's default cap
		{"0", -1, false},
		{"5GiB", 5 << 30, false},
		{"512MiB", 512 << 20, false},
		{"-1", 0, true},
		{"lots", 0, true},
	} {
		f := runFlags{maxPull: tc.in}
		o, err := f.pullOptions()
		if (err != nil) != tc.err || (err == nil && o.MaxBytes != tc.want) {
			t.Errorf("--max-pull %q: %+v, %v; want %d (error %v)", tc.in, o, err, tc.want, tc.err)
		}
	}
	if remote.DefaultMaxPullBytes <= 0 {
		t.Error("no default cap")
	}
}

// The pull bar adds up every host's pulls, a host's second pull (logs after
// captures) on top of its first.
func TestProgressPullBytes(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, bar: progressbar.NewOptions(1, progressbar.OptionSetWriter(&buf))}
	steps := []struct {
		host        string
		done, total int64
	}{
		{"a", 0, 100}, {"b", 50, 200}, {"a", 100, 100}, // a's captures landed
		{"a", 10, 30}, {"b", 200, 200}, {"a", 30, 30}, // then a's logs
	}
	for _, s := range steps {
		p.pull(s.host, s.done, s.total)
	}
	st := p.bytes.State()
	if st.CurrentNum != 330 || st.Max != 330 {
		t.Errorf("bar at %d of %d, want 330 of 330", st.CurrentNum, st.Max)
	}
	q := &progress{w: &buf} // not a terminal: nothing drawn
	q.pull("a", 1, 2)
	if q.bytes != nil {
		t.Error("a pull bar without a terminal")
	}
}
